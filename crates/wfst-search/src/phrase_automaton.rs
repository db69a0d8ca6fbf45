//! The phrase-prefix automaton (Aho-Corasick over word ids): a word earns the discount when the
//! words read so far end with a prefix of a listed phrase.
//!
//! This is G-boosting's cost change itself (003 §3.1.3, [`ctx_graph::gboost`]): G_boosted
//! discounts every n-gram that ends with a phrase prefix and adds the missing prefixes with
//! their back-off cost + discount, so under the back-off rule `G_boosted − G` adds the discount
//! exactly for the words that end a prefix occurrence (tested against [`crate::LmDelta`] on
//! random LMs). Its states are trie nodes, not LM histories, so tokens split only while a
//! prefix is open, and a list builds in microseconds. Unlike the context graph of 003 §4.1.3, a
//! partial match keeps its discount (G-boosting has no take-back).
//!
//! The same automaton in **completion** form ([`PhraseAutomaton::completions`]) adds a cost per
//! phrase only when its last word is read (the costs of every listed phrase ending there, the
//! dictionary links of Aho-Corasick): the main-graph side of an open-vocabulary phrase with a
//! negative weight, which must cost its weight on any path that writes it, and nothing on one
//! that writes only a prefix.

use crate::error::{DecodeError, Result};
use ctx_core::context_list::ContextList;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// A phrase-prefix automaton with one discount per word; shared, so cloning is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct PhraseAutomaton {
    inner: Arc<Trie>,
}

#[derive(Debug, PartialEq)]
struct Trie {
    /// Per node, `[offsets[s], offsets[s + 1])` indexes its children.
    offsets: Vec<u32>,
    /// Child word labels, ascending within a node.
    words: Vec<u32>,
    /// Child nodes, each as its representative ([`Trie::collapse_leaves`]: a leaf is its
    /// failure target's representative).
    next: Vec<u32>,
    /// The cost of reading each child's word: the discount (prefix form) or the child's own
    /// `out` (completion form) — the child's, even where `next` holds another node.
    cost: Vec<f32>,
    /// Failure link: the longest proper suffix of the node's prefix that is a node.
    fail: Vec<u32>,
    discount: f32,
    /// Completion form: per node, the cost of the phrases that end there (its own and those
    /// ending at its dictionary suffixes); empty in prefix form.
    out: Vec<f32>,
    /// The least cost a word step adds: min(0, discount) in prefix form, min(0, out) in
    /// completion form.
    min_cost: f32,
    /// The root's children by word id as (`next`, `cost`) ([`NO_CHILD`]: none), when it has
    /// more than [`DENSE_ROOT`]: every word a path reads that starts no open prefix ends at
    /// the root, so a long list's lookups there are one load, not a binary search over it.
    root: Vec<(u32, f32)>,
}

/// A word the root has no child for, in [`Trie::root`].
const NO_CHILD: u32 = u32::MAX;

/// Root children above which the root's row is also kept as a table by word id.
const DENSE_ROOT: usize = 32;

impl PhraseAutomaton {
    /// Builds the automaton of `phrases` (word ids; empty phrases are ignored).
    pub fn new(phrases: &[Vec<u32>], discount: f32) -> Result<Self> {
        if !discount.is_finite() {
            return Err(DecodeError::Booster(format!(
                "discount {discount} is not finite"
            )));
        }
        let mut trie = Trie::build(phrases, discount);
        trie.collapse_leaves();
        Ok(Self {
            inner: Arc::new(trie),
        })
    }

    /// The completion form: each (phrase, cost) adds `cost` when its last word is read (a
    /// phrase listed twice adds both; a prefix adds nothing).
    ///
    /// ```
    /// use wfst_search::PhraseAutomaton;
    /// // "7 8" costs 3, "8" costs 1: reading 7 8 ends both.
    /// let a = PhraseAutomaton::completions(&[(vec![7, 8], 3.0), (vec![8], 1.0)]).unwrap();
    /// assert_eq!(a.sentence_cost(&[7, 8]), 4.0);
    /// assert_eq!(a.sentence_cost(&[7, 9, 8]), 1.0);
    /// assert_eq!(a.sentence_cost(&[7]), 0.0);
    /// ```
    pub fn completions(phrases: &[(Vec<u32>, f32)]) -> Result<Self> {
        if let Some((p, c)) = phrases.iter().find(|(_, c)| !c.is_finite()) {
            return Err(DecodeError::Booster(format!(
                "phrase {p:?}: cost {c} is not finite"
            )));
        }
        let ids: Vec<Vec<u32>> = phrases.iter().map(|(p, _)| p.clone()).collect();
        let mut trie = Trie::build(&ids, 0.0);
        let mut own = vec![0f32; trie.fail.len()];
        for (p, c) in phrases.iter().filter(|(p, _)| !p.is_empty()) {
            own[trie.walk(p) as usize] += c;
        }
        // Breadth-first order puts a node's failure target (shallower) before it.
        let mut out = own;
        for s in trie.bfs() {
            out[s as usize] += out[trie.fail[s as usize] as usize];
        }
        trie.min_cost = out.iter().fold(-0.0f32, |m, &c| m.min(c));
        trie.out = out;
        trie.collapse_leaves();
        Ok(Self {
            inner: Arc::new(trie),
        })
    }

    /// The main-graph side of an open-vocabulary list's negative weights: each phrase (each of
    /// its spellings) with a weight below 0 whose words all have an id (`word_id`: the main graph's words table)
    /// costs −weight when a path completes it, as the context graph charges its own copy. A
    /// phrase with a word the graph lacks needs nothing here (only the context can write it).
    /// `None` when no phrase qualifies; else the automaton and how many phrases it holds.
    ///
    /// ```
    /// use ctx_core::context_list::ContextList;
    /// use wfst_search::PhraseAutomaton;
    /// let list = ContextList::parse("the call\t-3\nzed\t-2\non\t5", "l".as_ref(), 1.0, true)
    ///     .unwrap();
    /// let id = |w: &str| ["the", "call", "on"].iter().position(|x| *x == w).map(|i| i as u32 + 1);
    /// let (a, n) = PhraseAutomaton::penalties(&list, id).unwrap().unwrap();
    /// assert_eq!(n, 1); // zed is unknown, "on" is a bonus
    /// assert_eq!(a.sentence_cost(&[1, 2, 3]), 3.0);
    /// ```
    pub fn penalties(
        list: &ContextList,
        word_id: impl Fn(&str) -> Option<u32>,
    ) -> Result<Option<(Self, usize)>> {
        let phrases: Vec<(Vec<u32>, f32)> = list
            .phrases
            .iter()
            .filter(|p| p.weight < 0.0)
            .flat_map(|p| p.spelled().map(move |s| (s, -p.weight)))
            .filter(|(s, _)| !s.is_empty())
            .filter_map(|(s, cost)| {
                let ids: Option<Vec<u32>> = s.iter().map(|w| word_id(w)).collect();
                ids.map(|ids| (ids, cost))
            })
            .collect();
        if phrases.is_empty() {
            return Ok(None);
        }
        Ok(Some((Self::completions(&phrases)?, phrases.len())))
    }

    /// A lower bound of every cost [`Self::word`] adds (the least of 0 and the discount, or of
    /// 0 and the completion costs): the search tests an arc against its beam with it before
    /// moving the automaton.
    pub fn min_cost(&self) -> f32 {
        self.inner.min_cost
    }

    /// Nodes of the trie (the root included).
    pub fn num_states(&self) -> usize {
        self.inner.fail.len()
    }

    /// Reads `word` in node `s`: the next node and the cost to add — in prefix form the
    /// discount when the next node is not the root (the text ends with a phrase prefix), in
    /// completion form the costs of the phrases the text now ends with.
    #[inline]
    pub fn word(&self, mut s: u32, word: u32) -> (u32, f32) {
        let t = &*self.inner;
        loop {
            if s == 0 && !t.root.is_empty() {
                return match t.root.get(word as usize) {
                    Some(&(n, c)) if n != NO_CHILD => (n, c),
                    _ => (0, 0.0),
                };
            }
            let (lo, hi) = (
                t.offsets[s as usize] as usize,
                t.offsets[s as usize + 1] as usize,
            );
            if let Ok(k) = t.words[lo..hi].binary_search(&word) {
                return (t.next[lo + k], t.cost[lo + k]);
            }
            if s == 0 {
                return (0, 0.0);
            }
            s = t.fail[s as usize];
        }
    }

    /// The cost summed over a word sequence.
    pub fn sentence_cost(&self, words: &[u32]) -> f32 {
        let mut s = 0;
        let mut cost = 0.0;
        for &w in words {
            let (d, c) = self.word(s, w);
            s = d;
            cost += c;
        }
        cost
    }
}

impl Trie {
    /// The trie of `phrases` with ordered children (deterministic numbering) and failure
    /// links, in prefix form with `discount`.
    fn build(phrases: &[Vec<u32>], discount: f32) -> Self {
        // The trie with ordered children (deterministic numbering).
        let mut kids: Vec<BTreeMap<u32, u32>> = vec![BTreeMap::new()];
        for p in phrases {
            let mut s = 0usize;
            for &w in p {
                let n = kids.len() as u32;
                let next = *kids[s].entry(w).or_insert(n);
                if next == n {
                    kids.push(BTreeMap::new());
                }
                s = next as usize;
            }
        }
        // Failure links, breadth first.
        let mut fail = vec![0u32; kids.len()];
        let mut queue: VecDeque<u32> = kids[0].values().copied().collect();
        while let Some(s) = queue.pop_front() {
            for (&w, &c) in &kids[s as usize] {
                let mut f = fail[s as usize];
                fail[c as usize] = loop {
                    if let Some(&t) = kids[f as usize].get(&w) {
                        break t;
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = fail[f as usize];
                };
                queue.push_back(c);
            }
        }
        let mut trie = Trie {
            offsets: vec![0],
            words: Vec::new(),
            next: Vec::new(),
            cost: Vec::new(),
            fail,
            discount,
            out: Vec::new(),
            min_cost: discount.min(-0.0),
            root: Vec::new(),
        };
        for k in &kids {
            for (&w, &c) in k {
                trie.words.push(w);
                trie.next.push(c);
            }
            trie.offsets.push(trie.words.len() as u32);
        }
        trie
    }

    /// Points every edge into a leaf at the leaf's failure target's representative, with the
    /// edge's cost kept as the leaf's, then builds the dense root. Exact: a leaf has no child,
    /// so from it every word moves as from its failure target, and the cost of a step is on
    /// its edge. Tokens of the search that only differ in such states then recombine (a
    /// completed phrase whose last word starts no other phrase returns to the root).
    fn collapse_leaves(&mut self) {
        let n = self.fail.len();
        self.cost = self
            .next
            .iter()
            .map(|&c| match self.out.is_empty() {
                true => self.discount,
                false => self.out[c as usize],
            })
            .collect();
        let mut rep: Vec<u32> = (0..n as u32).collect();
        for s in self.bfs() {
            let leaf = self.offsets[s as usize] == self.offsets[s as usize + 1];
            if leaf {
                // The failure target is shallower: its representative is final.
                rep[s as usize] = rep[self.fail[s as usize] as usize];
            }
        }
        for c in self.next.iter_mut() {
            *c = rep[*c as usize];
        }
        let (lo, hi) = (self.offsets[0] as usize, self.offsets[1] as usize);
        if hi - lo > DENSE_ROOT {
            let top = self.words[hi - 1] as usize;
            self.root = vec![(NO_CHILD, 0.0); top + 1];
            for k in lo..hi {
                self.root[self.words[k] as usize] = (self.next[k], self.cost[k]);
            }
        }
    }

    /// The node `phrase` leads to from the root (every prefix is a node).
    fn walk(&self, phrase: &[u32]) -> u32 {
        let mut s = 0u32;
        for w in phrase {
            let (lo, hi) = (
                self.offsets[s as usize] as usize,
                self.offsets[s as usize + 1] as usize,
            );
            let k = self.words[lo..hi]
                .binary_search(w)
                .expect("a listed phrase's prefix is a node");
            s = self.next[lo + k];
        }
        s
    }

    /// The nodes but the root in breadth-first order.
    fn bfs(&self) -> Vec<u32> {
        let mut order = Vec::with_capacity(self.fail.len());
        let mut queue: VecDeque<u32> = VecDeque::from([0]);
        while let Some(s) = queue.pop_front() {
            if s != 0 {
                order.push(s);
            }
            let (lo, hi) = (
                self.offsets[s as usize] as usize,
                self.offsets[s as usize + 1] as usize,
            );
            queue.extend(&self.next[lo..hi]);
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The discount the prefix form adds per word, by brute force: the words read so far end
    /// with a prefix of a listed phrase.
    fn brute(phrases: &[Vec<u32>], words: &[u32], discount: f32) -> f32 {
        let mut cost = 0.0;
        for end in 1..=words.len() {
            let ends_prefix = (0..end).any(|start| {
                let tail = &words[start..end];
                phrases
                    .iter()
                    .any(|p| p.len() >= tail.len() && &p[..tail.len()] == tail)
            });
            if ends_prefix {
                cost += discount;
            }
        }
        cost
    }

    /// A list with more root words than the dense-root threshold (the root read by word id)
    /// and one with fewer give the brute-force discount on seeded random sentences.
    #[test]
    fn the_dense_root_gives_the_same_costs_as_the_search() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as u32
        };
        for n_phrases in [10usize, 200] {
            let phrases: Vec<Vec<u32>> = (0..n_phrases)
                .map(|_| (0..1 + rnd(3)).map(|_| 1 + rnd(300)).collect())
                .collect();
            let a = PhraseAutomaton::new(&phrases, -2.0).unwrap();
            assert_eq!(!a.inner.root.is_empty(), n_phrases == 200);
            for _ in 0..200 {
                let words: Vec<u32> = (0..1 + rnd(12)).map(|_| 1 + rnd(320)).collect();
                assert_eq!(
                    a.sentence_cost(&words),
                    brute(&phrases, &words, -2.0),
                    "{words:?}"
                );
            }
        }
    }

    /// A state whose future equals its failure target's (a leaf: a completed phrase that
    /// starts no longer one) is that target: tokens holding either recombine in the search.
    #[test]
    fn a_completed_phrase_moves_to_its_failure_target() {
        let a = PhraseAutomaton::new(&[vec![1, 2], vec![3], vec![2, 5]], -2.0).unwrap();
        let (s1, c1) = a.word(0, 1);
        assert!(s1 != 0 && c1 == -2.0);
        // "1 2" is complete; its failure target "2" starts "2 5": the state is "2"'s.
        let (s12, c12) = a.word(s1, 2);
        assert_eq!((s12, c12), (a.word(0, 2).0, -2.0));
        assert_ne!(s12, 0);
        // "3" starts nothing longer: back at the root, the discount still paid.
        assert_eq!(a.word(0, 3), (0, -2.0));
        assert_eq!(a.word(s1, 3), (0, -2.0));
        // Completion form: "7 8" ends there and so does "8"; nothing continues either.
        let c = PhraseAutomaton::completions(&[(vec![7, 8], 3.0), (vec![8], 1.0)]).unwrap();
        let (s7, _) = c.word(0, 7);
        assert_eq!(c.word(s7, 8), (0, 4.0));
        assert_eq!(c.word(0, 8), (0, 1.0));
    }
}

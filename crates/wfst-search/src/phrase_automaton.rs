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

use crate::error::{DecodeError, Result};
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
    /// Child nodes.
    next: Vec<u32>,
    /// Failure link: the longest proper suffix of the node's prefix that is a node.
    fail: Vec<u32>,
    discount: f32,
}

impl PhraseAutomaton {
    /// Builds the automaton of `phrases` (word ids; empty phrases are ignored).
    pub fn new(phrases: &[Vec<u32>], discount: f32) -> Result<Self> {
        if !discount.is_finite() {
            return Err(DecodeError::Booster(format!(
                "discount {discount} is not finite"
            )));
        }
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
            fail,
            discount,
        };
        for k in &kids {
            for (&w, &c) in k {
                trie.words.push(w);
                trie.next.push(c);
            }
            trie.offsets.push(trie.words.len() as u32);
        }
        Ok(Self {
            inner: Arc::new(trie),
        })
    }

    /// Nodes of the trie (the root included).
    pub fn num_states(&self) -> usize {
        self.inner.fail.len()
    }

    /// Reads `word` in node `s`: the next node and the cost to add (the discount when the next
    /// node is not the root, i.e. the text ends with a phrase prefix).
    #[inline]
    pub fn word(&self, mut s: u32, word: u32) -> (u32, f32) {
        let t = &*self.inner;
        loop {
            let (lo, hi) = (
                t.offsets[s as usize] as usize,
                t.offsets[s as usize + 1] as usize,
            );
            if let Ok(k) = t.words[lo..hi].binary_search(&word) {
                return (t.next[lo + k], t.discount);
            }
            if s == 0 {
                return (0, 0.0);
            }
            s = t.fail[s as usize];
        }
    }

    /// The discount summed over a word sequence.
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

//! The arcs of a decoding graph that arc-index boosting discounts for a phrase list: Algorithm 1
//! of Nigmatulina et al. (000 §4.2), without the reference code's bugs (docs/design.md §3).
//!
//! For a phrase `w1 w2 … wk` the boosted arcs are
//! - every arc whose output label is `w1` (a phrase may start anywhere in an utterance), and
//! - for `t = 2..k`, every arc with output `wt` that a path reaches from the destination of a
//!   boosted `w(t−1)` arc of the same phrase through arcs without output (ε-output arcs, emitting
//!   or not: the rest of the previous word's HMM, back-off arcs, the next word's first phones).
//!
//! So an arc is boosted iff some path of the graph that ends with it outputs a prefix of a phrase
//! (and that arc outputs the prefix's last word) — the arc-level counterpart of the biasing FST's
//! prefix rule, except that the graph state cannot tell which words came before: a `wt` arc after
//! a back-off is boosted whatever the history (as on the GPU in the paper).
//!
//! The phrases are walked as a trie, so a shared prefix is searched once — within a list and,
//! through [`PhraseArcFinder::find_lists`], across all the lists of a run; each search step is one
//! multi-source depth-first search with its own visited set (the reference code shares one set
//! across seed states and steps, so a state seen for one phrase was skipped for the next).

use crate::csr::DecodingGraph;
use std::collections::BTreeMap;

/// What [`phrase_arcs`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhraseArcs {
    /// The boosted arc indices, ascending and distinct.
    pub arcs: Vec<u32>,
    /// Phrases with at least one arc for every word (the others cannot be spelled by the graph,
    /// usually for an out-of-vocabulary word; their found prefix arcs are still boosted).
    pub spelled: usize,
    /// Phrases given (empty ones ignored).
    pub phrases: usize,
}

/// Finds the arcs to boost for `phrases` (word ids, 0 = ε is not a word) in `graph`. Scans the
/// graph once for the first words; to search many lists in one graph, build a [`PhraseArcFinder`]
/// once instead.
pub fn phrase_arcs(graph: &DecodingGraph, phrases: &[Vec<u32>]) -> PhraseArcs {
    PhraseArcFinder::new(graph).find(phrases)
}

/// Algorithm 1 for many lists in one graph: every arc with an output word, grouped by word (a
/// CSR over word ids), so a list's first words cost a lookup each instead of a scan of every
/// arc — that scan was most of a per-utterance list's search time (7.7 ms of it per
/// ~210-phrase ATC list). Tied to its graph by the borrow, so it cannot be used with another.
///
/// Hubs: the region behind a word's end (LM histories, back-off, the lexicon's branching word
/// starts) is reached by the search of nearly every phrase prefix, and was walked again each
/// time (19.5 s for 20,000 phrases on Earnings-21's HCLG, the profile all output-label loads
/// and visited stamps). So every state with at least [`HUB_ARCS`] arcs is a hub whose region
/// up to the next hubs is walked once, when the finder is built: its word arcs by word, and the
/// hubs it leads to. A search that reaches a hub looks its children's words up there and goes
/// on to the next hubs; the arcs found are the same (a test holds it against the plain search
/// on random graphs, at several thresholds).
#[derive(Debug, Clone)]
pub struct PhraseArcFinder<'g> {
    graph: &'g DecodingGraph,
    /// Word `w`'s arcs are `arcs[offsets[w]..offsets[w + 1]]`, ascending.
    offsets: Vec<u32>,
    arcs: Vec<u32>,
    /// Per state, its hub index (`NO_NODE`: not a hub).
    hub_of: Vec<u32>,
    /// Per hub, the word arcs of its region as (word, arc), sorted:
    /// `hub_arcs[hub_off[h]..hub_off[h + 1]]`.
    hub_off: Vec<u32>,
    hub_arcs: Vec<(u32, u32)>,
    /// Per hub, the hubs its region leads to: `hub_next[next_off[h]..next_off[h + 1]]`.
    next_off: Vec<u32>,
    hub_next: Vec<u32>,
}

/// A state with at least this many arcs is a hub ([`PhraseArcFinder`]). On Earnings-21's HCLG
/// with 20,000 phrases (`context_s` of `ctxbench decode --dataset earnings21 --limit 20
/// --method arc-boosting --arcs-list file:datasets/scale-lists/vocab-phrases-20000.txt.gz`,
/// rebuilt with each value): 64 → 20.7 s (the hubs too few to cut the walks), 8 → 1.0 s,
/// 4 → 2.6 s (regions too small: the hub graph walked instead); the one-time walk adds ~0.1 s.
const HUB_ARCS: usize = 8;

impl<'g> PhraseArcFinder<'g> {
    /// Indexes `graph`'s arcs by output word (one pass, counting sort).
    pub fn new(graph: &'g DecodingGraph) -> Self {
        let words = graph
            .olabel
            .iter()
            .copied()
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut offsets = vec![0u32; words + 1];
        for &o in graph.olabel.iter().filter(|&&o| o != 0) {
            offsets[o as usize + 1] += 1;
        }
        for w in 0..words {
            offsets[w + 1] += offsets[w];
        }
        let mut fill = offsets.clone();
        let mut arcs = vec![0u32; offsets[words] as usize];
        for (a, &o) in graph.olabel.iter().enumerate().filter(|(_, &o)| o != 0) {
            arcs[fill[o as usize] as usize] = a as u32;
            fill[o as usize] += 1;
        }
        let mut f = Self {
            graph,
            offsets,
            arcs,
            hub_of: Vec::new(),
            hub_off: vec![0],
            hub_arcs: Vec::new(),
            next_off: vec![0],
            hub_next: Vec::new(),
        };
        f.build_hubs(HUB_ARCS);
        f
    }

    /// Marks the states with at least `min_arcs` arcs as hubs and walks each hub's region once
    /// (through ε-output arcs, up to word arcs and other hubs).
    fn build_hubs(&mut self, min_arcs: usize) {
        let g = self.graph;
        let n = g.num_states();
        self.hub_off = vec![0];
        self.hub_arcs.clear();
        self.next_off = vec![0];
        self.hub_next.clear();
        self.hub_of = vec![NO_NODE; n];
        let mut hubs = Vec::new();
        for s in 0..n as u32 {
            if g.emitting(s).len() + g.non_emitting(s).len() >= min_arcs {
                self.hub_of[s as usize] = hubs.len() as u32;
                hubs.push(s);
            }
        }
        let mut stamp = vec![0u32; n];
        let mut stack = Vec::new();
        for (h, &hs) in hubs.iter().enumerate() {
            let gen = h as u32 + 1;
            let (arcs_from, next_from) = (self.hub_arcs.len(), self.hub_next.len());
            stamp[hs as usize] = gen;
            stack.clear();
            stack.push(hs);
            while let Some(s) = stack.pop() {
                for a in g.emitting(s).chain(g.non_emitting(s)) {
                    let o = g.olabel[a];
                    if o != 0 {
                        self.hub_arcs.push((o, a as u32));
                        continue;
                    }
                    let d = g.next[a];
                    if stamp[d as usize] == gen {
                        continue;
                    }
                    stamp[d as usize] = gen;
                    match self.hub_of[d as usize] {
                        NO_NODE => stack.push(d),
                        k => self.hub_next.push(k),
                    }
                }
            }
            self.hub_arcs[arcs_from..].sort_unstable();
            self.hub_next[next_from..].sort_unstable();
            self.hub_off.push(self.hub_arcs.len() as u32);
            self.next_off.push(self.hub_next.len() as u32);
        }
    }

    /// Hub `h`'s word arcs with output `w`.
    fn hub_word_arcs(&self, h: u32, w: u32) -> &[(u32, u32)] {
        let all = &self.hub_arcs
            [self.hub_off[h as usize] as usize..self.hub_off[h as usize + 1] as usize];
        let lo = all.partition_point(|x| x.0 < w);
        let hi = all.partition_point(|x| x.0 <= w);
        &all[lo..hi]
    }

    /// The hubs hub `h`'s region leads to.
    fn hub_next(&self, h: u32) -> &[u32] {
        &self.hub_next[self.next_off[h as usize] as usize..self.next_off[h as usize + 1] as usize]
    }

    /// The arcs with output word `w`, ascending (none for ε or a word the graph lacks).
    pub fn arcs_of(&self, w: u32) -> &[u32] {
        match (
            self.offsets.get(w as usize),
            self.offsets.get(w as usize + 1),
        ) {
            (Some(&b), Some(&e)) if w != 0 => &self.arcs[b as usize..e as usize],
            _ => &[],
        }
    }

    /// Finds the arcs to boost for `phrases` (word ids, 0 = ε is not a word).
    pub fn find(&self, phrases: &[Vec<u32>]) -> PhraseArcs {
        self.find_lists(&[phrases]).list(0)
    }

    /// Searches many lists at once: every distinct phrase prefix of all of them is searched
    /// once, so lists that share phrases (the radar lists of consecutive ATC utterances) pay
    /// for each shared prefix once instead of once per list. Each list's arcs are then the
    /// union of its prefixes' arcs ([`ListArcs::list`]), the same as [`Self::find`] on the list
    /// alone: a prefix's arcs depend on the prefix only, not on the other phrases searched.
    pub fn find_lists<L: AsRef<[Vec<u32>]>>(&self, lists: &[L]) -> ListArcs {
        let mut trie = ListArcs {
            parent: vec![NO_NODE],
            children: vec![BTreeMap::new()],
            arcs: vec![Vec::new()],
            ends: Vec::with_capacity(lists.len()),
        };
        for list in lists {
            let mut ends = Vec::new();
            for p in list.as_ref().iter().filter(|p| !p.is_empty()) {
                let mut node = 0;
                for &w in p {
                    node = match trie.children[node].get(&w) {
                        Some(&c) => c as usize,
                        None => {
                            let c = trie.parent.len();
                            trie.children[node].insert(w, c as u32);
                            trie.parent.push(node as u32);
                            trie.children.push(BTreeMap::new());
                            trie.arcs.push(Vec::new());
                            c
                        }
                    };
                }
                ends.push(node as u32);
            }
            trie.ends.push(ends);
        }
        // A child is created after its parent, so node order is an order of the search: the
        // first words' arcs from the index, each later word's from its parent's arcs.
        for (&w, &c) in &trie.children[0] {
            trie.arcs[c as usize] = self.arcs_of(w).to_vec();
        }
        let mut search = Search::new(self);
        for node in 1..trie.parent.len() {
            if trie.children[node].is_empty() || trie.arcs[node].is_empty() {
                continue;
            }
            // Children come after their parent: take the node's arcs out while they fill.
            let from = std::mem::take(&mut trie.arcs[node]);
            search.step(&from, &trie.children[node], |c, a| {
                trie.arcs[c as usize].push(a)
            });
            trie.arcs[node] = from;
        }
        // A hub reached along two ways hands an arc over twice: each node's arcs once.
        for a in trie.arcs.iter_mut() {
            a.sort_unstable();
            a.dedup();
        }
        trie
    }
}

/// No trie node (the root's parent).
const NO_NODE: u32 = u32::MAX;

/// What [`PhraseArcFinder::find_lists`] found: a trie of every list's phrase prefixes, each node
/// holding the arcs of its prefix's last word; [`ListArcs::list`] assembles one list's arcs.
/// Immutable once built, so lists can be assembled in parallel.
#[derive(Debug, Clone)]
pub struct ListArcs {
    /// Per trie node (0 = the empty prefix): its parent, children by word, and the arcs of its
    /// last word (none when the prefix cannot be spelled: a word without arcs has no arcs
    /// below it either).
    parent: Vec<u32>,
    children: Vec<BTreeMap<u32, u32>>,
    arcs: Vec<Vec<u32>>,
    /// Per list, the node of each of its (non-empty) phrases.
    ends: Vec<Vec<u32>>,
}

impl ListArcs {
    /// How many lists were searched.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no list was searched.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// List `i`'s arcs: the union of the arcs of its phrases' prefixes. Panics if `i` is not a
    /// list index (below [`Self::len`]).
    pub fn list(&self, i: usize) -> PhraseArcs {
        let ends = &self.ends[i];
        let mut nodes = Vec::new();
        for &e in ends {
            let mut n = e;
            while n != 0 {
                nodes.push(n);
                n = self.parent[n as usize];
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        let mut arcs: Vec<u32> = Vec::new();
        for &n in &nodes {
            arcs.extend_from_slice(&self.arcs[n as usize]);
        }
        arcs.sort_unstable();
        arcs.dedup();
        PhraseArcs {
            arcs,
            spelled: ends
                .iter()
                .filter(|&&e| !self.arcs[e as usize].is_empty())
                .count(),
            phrases: ends.len(),
        }
    }
}

/// The depth-first search of one step, with visited sets (states, hubs) reset by generation
/// stamps.
struct Search<'f, 'g> {
    f: &'f PhraseArcFinder<'g>,
    stamp: Vec<u32>,
    hub_stamp: Vec<u32>,
    generation: u32,
    stack: Vec<u32>,
    hubs: Vec<u32>,
}

impl<'f, 'g> Search<'f, 'g> {
    fn new(f: &'f PhraseArcFinder<'g>) -> Self {
        Self {
            f,
            stamp: vec![0; f.graph.num_states()],
            hub_stamp: vec![0; f.hub_off.len() - 1],
            generation: 0,
            stack: Vec::new(),
            hubs: Vec::new(),
        }
    }

    /// Visits state `s` (once per generation): a hub goes on the hub stack, any other state on
    /// the state stack.
    fn visit(&mut self, s: u32, gen: u32) {
        if self.stamp[s as usize] == gen {
            return;
        }
        self.stamp[s as usize] = gen;
        match self.f.hub_of[s as usize] {
            NO_NODE => self.stack.push(s),
            h => self.visit_hub(h, gen),
        }
    }

    fn visit_hub(&mut self, h: u32, gen: u32) {
        if self.hub_stamp[h as usize] != gen {
            self.hub_stamp[h as usize] = gen;
            self.hubs.push(h);
        }
    }

    /// From the destinations of `arcs` (a prefix's last word), through ε-output arcs: hands
    /// each arc whose output word is in `children` to `found` with that word's child node.
    fn step(
        &mut self,
        arcs: &[u32],
        children: &BTreeMap<u32, u32>,
        mut found: impl FnMut(u32, u32),
    ) {
        let g = self.f.graph;
        self.generation += 1;
        let gen = self.generation;
        self.stack.clear();
        self.hubs.clear();
        for &a in arcs {
            self.visit(g.next[a as usize], gen);
        }
        loop {
            while let Some(s) = self.stack.pop() {
                for a in g.emitting(s).chain(g.non_emitting(s)) {
                    let o = g.olabel[a];
                    if o != 0 {
                        if let Some(&c) = children.get(&o) {
                            found(c, a as u32);
                        }
                        continue;
                    }
                    self.visit(g.next[a], gen);
                }
            }
            // A hub's region was walked when the finder was built: its arcs of the children's
            // words, then the hubs it leads to.
            let Some(h) = self.hubs.pop() else {
                break;
            };
            for (&w, &c) in children {
                for &(_, a) in self.f.hub_word_arcs(h, w) {
                    found(c, a);
                }
            }
            for k in 0..self.f.hub_next(h).len() {
                let next = self.f.hub_next(h)[k];
                self.visit_hub(next, gen);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made graph: 0 -a-> 1 -ε-> 2 (self-loop ε) -b-> 3 -c-> 4, and 0 -b-> 5 -c-> 6.
    fn graph() -> DecodingGraph {
        // (from, ilabel, olabel, to)
        let arcs = [
            (0, 1, 1, 1),
            (1, 2, 0, 2),
            (2, 2, 0, 2),
            (2, 3, 2, 3),
            (3, 4, 3, 4),
            (0, 5, 2, 5),
            (5, 6, 3, 6),
        ];
        let n = 7;
        let mut g = DecodingGraph {
            start: 0,
            final_cost: vec![f32::INFINITY; n],
            ..Default::default()
        };
        for s in 0..n as u32 {
            g.e_offsets.push(g.ilabel.len() as u32);
            for &(f, i, o, t) in &arcs {
                if f == s {
                    g.ilabel.push(i);
                    g.olabel.push(o);
                    g.weight.push(0.0);
                    g.next.push(t);
                }
            }
        }
        g.e_offsets.push(g.ilabel.len() as u32);
        g.ne_offsets = vec![g.ilabel.len() as u32; n + 1];
        g.validate().unwrap();
        g
    }

    /// Walking hubs' regions once (any threshold) finds the arcs the plain search finds, on
    /// random graphs with ε-output cycles, back-off-like fan-in and repeated words.
    #[test]
    fn hubs_find_what_the_plain_search_finds() {
        let mut seed = 7u64;
        let mut next = |m: u32| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % m as u64) as u32
        };
        for case in 0..200 {
            let n = 3 + next(30);
            let mut g = DecodingGraph {
                start: 0,
                final_cost: vec![f32::INFINITY; n as usize],
                ..Default::default()
            };
            // Emitting arcs per state, then ε arcs, as CSR.
            let mut ne: Vec<(u32, u32, u32)> = Vec::new();
            for s in 0..n {
                g.e_offsets.push(g.ilabel.len() as u32);
                for _ in 0..next(6) {
                    g.ilabel.push(1 + next(3));
                    // Half the arcs write no word.
                    g.olabel.push(if next(2) == 0 { 0 } else { 1 + next(5) });
                    g.weight.push(0.0);
                    g.next.push(next(n));
                }
                if next(3) == 0 {
                    ne.push((s, next(n), if next(3) == 0 { 1 + next(5) } else { 0 }));
                }
            }
            g.e_offsets.push(g.ilabel.len() as u32);
            for s in 0..n {
                g.ne_offsets.push(g.ilabel.len() as u32);
                for &(f, d, o) in ne.iter().filter(|x| x.0 == s) {
                    let _ = f;
                    g.ilabel.push(0);
                    g.olabel.push(o);
                    g.weight.push(0.0);
                    g.next.push(d);
                }
            }
            g.ne_offsets.push(g.ilabel.len() as u32);
            g.validate().unwrap();
            let lists: Vec<Vec<Vec<u32>>> = (0..3)
                .map(|_| {
                    (0..1 + next(6))
                        .map(|_| (0..1 + next(4)).map(|_| 1 + next(5)).collect())
                        .collect()
                })
                .collect();
            let mut plain = PhraseArcFinder::new(&g);
            plain.build_hubs(usize::MAX);
            let want = plain.find_lists(&lists);
            for min_arcs in [1, 2, 4] {
                let mut hubbed = PhraseArcFinder::new(&g);
                hubbed.build_hubs(min_arcs);
                let got = hubbed.find_lists(&lists);
                for i in 0..lists.len() {
                    assert_eq!(
                        got.list(i),
                        want.list(i),
                        "case {case}, hubs from {min_arcs} arcs, list {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn later_words_only_along_the_phrase() {
        let g = graph();
        // Arcs by index: 0 0-a->1, 1 0-b->5, 2 1-ε->2, 3 2-ε->2, 4 2-b->3, 5 3-c->4, 6 5-c->6.
        // a b c: a, b after a through the ε arcs, c after that b; not the b and c of 0-b->5-c->6.
        let r = phrase_arcs(&g, &[vec![1, 2, 3]]);
        assert_eq!(r.arcs, vec![0, 4, 5]);
        assert_eq!((r.spelled, r.phrases), (1, 1));
        // b c: both b arcs start it, so both c arcs follow.
        let r = phrase_arcs(&g, &[vec![2, 3]]);
        assert_eq!(r.arcs, vec![1, 4, 5, 6]);
        // a c cannot be spelled (a b sits between): only a is boosted.
        let r = phrase_arcs(&g, &[vec![1, 3], vec![]]);
        assert_eq!(r.arcs, vec![0]);
        assert_eq!((r.spelled, r.phrases), (0, 1));
        // A word the graph lacks.
        assert!(phrase_arcs(&g, &[vec![9]]).arcs.is_empty());
        // The index: b's two arcs, ascending; nothing for ε or an unknown word.
        let f = PhraseArcFinder::new(&g);
        assert_eq!(f.arcs_of(2), &[1, 4]);
        assert!(f.arcs_of(0).is_empty() && f.arcs_of(9).is_empty());
        assert_eq!(f.find(&[vec![2, 3]]).arcs, vec![1, 4, 5, 6]);
    }
}

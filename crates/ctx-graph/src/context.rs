//! A stream's context graph for open-vocabulary biasing (docs/design.md §3): the
//! phrases of a [`ContextList`] spelled in the model's tokens and laid out with the CTC rules of
//! the main graph's topology ([`ContextGraph::compile`]), or pronounced in phones and laid out as
//! their HMMs ([`ContextGraph::compile_hybrid`]), compiled at run time in the [`DecodingGraph`]
//! layout so the search walks it as it walks TLG or HCLG.
//!
//! The phrases form a trie over (token, word output) pairs: phrases that start with the same
//! words share states; a word's output label sits on the arc that reads its first token, so two
//! words spelled alike still leave apart. A phrase with spellings (NeMo's `WORD_SPELLING…`,
//! [`ContextList`]) is a path per spelling that writes the phrase's own words: `gpu_g p u`
//! reads the tokens of *g p u* and writes *gpu*. Each trie node becomes the states of one CTC token:
//! - **normal** (exact CTC rules): node `n` holding token `u` has `E(n)` (just read `u`; `u`
//!   again holds it) and, when it has children, `B(n)` (a blank after `u`). A child with token `v`
//!   is entered from `E(n)` when `v ≠ u` and always from `B(n)`: a repeated token needs a blank.
//! - **compact** (one loop per token, repeats not collapsed): `H(n)` holds `u`, an ε arc leads to
//!   `L(n)`, whose blank self-loop and child arcs continue.
//!
//! The start state reads a first token only (blanks before a phrase belong to the main graph).
//! Inside a phrase the blanks between two tokens may be bounded (`max_blanks`: a chain of blank
//! states instead of the self-loop, the last without a blank arc): a pause longer than the
//! bound ends the match, so a context path cannot read blanks across the words spoken between
//! two names of a phrase to earn its weight while the LM costs of those words go unpaid.
//! The states that complete a phrase are final with cost `−weight`: the weight is earned only by
//! a finished phrase, a broken-off prefix has no way out and earns nothing. A negative weight
//! only makes this copy of the phrase dearer: a context path skips the LM costs of its words,
//! so a caller that wants a phrase suppressed leaves it out of the graph and penalises the
//! main graph's paths instead (`wfst_search::PhraseAutomaton::penalties`). Input labels follow
//! T's convention (blank = 1, token `u` = `u + 1`); output label `k > 0` is `words[k − 1]`, the
//! word as spelled in the list, whether or not the main graph knows it.
//!
//! ```
//! use ctx_core::context_list::ContextList;
//! use ctx_graph::context::ContextGraph;
//! use ctx_graph::ctc::CtcTopology;
//! use std::path::Path;
//!
//! let list = ContextList::parse("zorblax corp\t3", Path::new("ctx"), 2.0, true).unwrap();
//! // A toy spelling: "zorblax" = tokens 7 7 9 (a repeated token), "corp" = 4.
//! let spell = |w: &str| Some(if w == "zorblax" { vec![7, 7, 9] } else { vec![4] });
//! let g = ContextGraph::compile(&list, spell, CtcTopology::Normal, None).unwrap();
//! assert_eq!(g.words, ["zorblax", "corp"]);
//! assert_eq!(g.phrases, 1);
//! // Start, E/B for the first 7, E/B for the second, E/B for 9, E for 4.
//! assert_eq!(g.graph.num_states(), 8);
//! ```

use crate::csr::DecodingGraph;
use crate::ctc::{unit_label, CtcTopology, BLANK_LABEL};
use crate::error::{GraphError, Result};
use crate::hmm::UnitHmms;
use ctx_core::context_list::ContextList;
use rustc_hash::FxHashMap;

/// A compiled context: the graph, its output words, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextGraph {
    /// The graph (start state 0; final states complete a phrase).
    pub graph: DecodingGraph,
    /// Output label `k > 0` is `words[k − 1]`.
    pub words: Vec<String>,
    /// Phrases compiled (with at least one spelling kept).
    pub phrases: usize,
    /// Word sequences (phrases, or a phrase's spellings) left out because a word could not be
    /// spelled (the spelling gave nothing).
    pub unspellable: Vec<String>,
}

/// An arc while building: input, output, weight, destination.
#[derive(Debug, Clone, Copy)]
struct Arc {
    il: u32,
    ol: u32,
    w: f32,
    next: u32,
}

/// A trie node: its token (0 at the root), its children, the best weight of a phrase ending
/// here (`None` when none does), and the class cost pushed onto the arcs entering it and onto
/// its phrase end ([`ClassCost`]; 0 without one).
#[derive(Debug, Default)]
struct Node {
    token: u32,
    children: Vec<(u32, u32, usize)>,
    weight: Option<f32>,
    enter: f32,
    end: f32,
}

/// What choosing one phrase of the list costs a path, besides the phrase's weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClassCost {
    /// Nothing: a context path pays only its acoustics, the slot's entry cost and −weight at
    /// the end, whatever the list's size.
    #[default]
    None,
    /// A class language model's uniform member cost, ln N for a list of N phrases, pushed
    /// towards the start (an arc into trie node c from node n costs ln(count(n)/count(c)), a
    /// phrase ending at n costs ln(count(n)/1) more, `count` = phrases through a node): every
    /// phrase still costs ln N in all, but a prefix that few phrases share is dear from its
    /// first token, so the beam cuts it as the acoustics leave it — the search's cost follows
    /// the prefixes alive, not the list's size — and a larger list is a weaker prior on each
    /// phrase, as a class of N names is.
    Uniform,
}

impl std::str::FromStr for ClassCost {
    type Err = String;
    /// `none` or `uniform`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Self::None),
            "uniform" => Ok(Self::Uniform),
            _ => Err(format!("class cost '{s}' (none or uniform)")),
        }
    }
}

impl std::fmt::Display for ClassCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Uniform => "uniform",
        })
    }
}

impl ContextGraph {
    /// Compiles `list`: each word spelled by `spell` into token ids (1-based, as in T; `None` or
    /// an empty spelling leaves that word sequence out and names it in `unspellable`; a phrase
    /// with more words than a spelling of it has tokens is an error), laid out for
    /// `topo`, with at most `max_blanks` blank frames between two tokens of a phrase (`None`:
    /// unbounded; `Some(0)` is an error). A token id 0 (the blank) in a spelling is an error.
    pub fn compile(
        list: &ContextList,
        spell: impl FnMut(&str) -> Option<Vec<u32>>,
        topo: CtcTopology,
        max_blanks: Option<u32>,
    ) -> Result<Self> {
        Self::compile_priced(list, spell, topo, max_blanks, ClassCost::None)
    }

    /// [`Self::compile`] with the phrases priced as members of a class ([`ClassCost`]).
    ///
    /// ```
    /// use ctx_core::context_list::ContextList;
    /// use ctx_graph::context::{ClassCost, ContextGraph};
    /// use ctx_graph::ctc::CtcTopology;
    /// use std::path::Path;
    ///
    /// // Four phrases: three start with the word a (token 7), one is d (token 8).
    /// let list = ContextList::parse("a x\na y\na\nd", Path::new("l"), 0.0, true).unwrap();
    /// let spell = |w: &str| Some(match w { "a" => vec![7], "x" => vec![1], "y" => vec![2], _ => vec![8] });
    /// let g = ContextGraph::compile_priced(&list, spell, CtcTopology::Normal, None, ClassCost::Uniform)
    ///     .unwrap();
    /// let root: Vec<f32> = g.graph.emitting(0).map(|a| g.graph.weight[a]).collect();
    /// // Into 7: ln(4/3); into 8: ln(4/1).
    /// assert!((root[0] - (4f32 / 3.0).ln()).abs() < 1e-6 && (root[1] - 4f32.ln()).abs() < 1e-6);
    /// ```
    pub fn compile_priced(
        list: &ContextList,
        spell: impl FnMut(&str) -> Option<Vec<u32>>,
        topo: CtcTopology,
        max_blanks: Option<u32>,
        class: ClassCost,
    ) -> Result<Self> {
        if max_blanks == Some(0) {
            return Err(GraphError::Invalid(
                "a phrase needs room for at least one blank between tokens (max_blanks 0)".into(),
            ));
        }
        let mut trie = Trie::build(list, spell, "token 0 (the blank)")?;
        trie.price(class);
        let graph = match topo {
            CtcTopology::Normal => layout_normal(&trie.nodes, max_blanks),
            CtcTopology::Compact => layout_compact(&trie.nodes, max_blanks),
        };
        Ok(trie.into_graph(graph))
    }

    /// The hybrid form: each word pronounced by `pronounce` as 1-based unit (phone) ids — for
    /// words the lexicon lacks, letter-to-sound pronunciations — and each unit laid out as its
    /// left-to-right HMM from `hmms` (C is the identity: monophones, as in the simulated hybrid
    /// models' HCLG). A unit's states read their pdfs (input label pdf + 1), are entered at
    /// their entry cost and loop at their loop cost, as in HCLG. An unknown unit id is an error.
    pub fn compile_hybrid(
        list: &ContextList,
        pronounce: impl FnMut(&str) -> Option<Vec<u32>>,
        hmms: &UnitHmms,
    ) -> Result<Self> {
        Self::compile_hybrid_priced(list, pronounce, hmms, ClassCost::None)
    }

    /// [`Self::compile_hybrid`] with the phrases priced as members of a class ([`ClassCost`]).
    pub fn compile_hybrid_priced(
        list: &ContextList,
        pronounce: impl FnMut(&str) -> Option<Vec<u32>>,
        hmms: &UnitHmms,
        class: ClassCost,
    ) -> Result<Self> {
        let mut trie = Trie::build(list, pronounce, "unit 0")?;
        trie.price(class);
        if let Some(n) = trie
            .nodes
            .iter()
            .skip(1)
            .find(|n| n.token as usize > hmms.pdfs.len())
        {
            return Err(GraphError::Invalid(format!(
                "a pronunciation uses unit {} of {}",
                n.token,
                hmms.pdfs.len()
            )));
        }
        let graph = layout_hmm(&trie.nodes, hmms);
        Ok(trie.into_graph(graph))
    }
}

/// The phrases as a trie over (unit, word output) pairs, with the output words and what was
/// left out.
struct Trie {
    nodes: Vec<Node>,
    words: Vec<String>,
    phrases: usize,
    unspellable: Vec<String>,
}

impl Trie {
    /// Spells every word of every phrase (once per word); `zero` names unit 0 in the error a
    /// spelling holding it gets.
    fn build(
        list: &ContextList,
        mut spell: impl FnMut(&str) -> Option<Vec<u32>>,
        zero: &str,
    ) -> Result<Self> {
        let mut words: Vec<String> = Vec::new();
        // Keyed by the list's own words (no copies) with a fast hash: at 1,000 phrases the
        // maps are a good part of the compile time.
        let mut word_ids: FxHashMap<&str, u32> = FxHashMap::default();
        let mut spelled: FxHashMap<&str, Option<Vec<u32>>> = FxHashMap::default();
        let mut nodes = vec![Node::default()];
        let mut index: FxHashMap<(usize, u32, u32), usize> = FxHashMap::default();
        let mut unspellable = Vec::new();
        let mut phrases = 0;
        for p in &list.phrases {
            let mut kept = false;
            'spelling: for sp in p.spelled() {
                // Units of the spelling and, per unit, the display word it writes: the
                // phrase's own words each on its first unit; a spelling's display words on the
                // first units of its words, then on the units after them (NeMo writes the
                // phrase, not the spelling).
                let mut units: Vec<u32> = Vec::new();
                let mut firsts: Vec<usize> = Vec::new();
                for w in sp {
                    let s = spelled
                        .entry(w.as_str())
                        .or_insert_with(|| spell(w).filter(|s| !s.is_empty()));
                    let Some(s) = s else {
                        unspellable.push(sp.join(" "));
                        continue 'spelling;
                    };
                    if s.contains(&0) {
                        return Err(GraphError::Invalid(format!(
                            "the spelling of '{w}' holds {zero}"
                        )));
                    }
                    firsts.push(units.len());
                    units.extend_from_slice(s);
                }
                let rest = (0..units.len()).filter(|i| !firsts.contains(i));
                let slots: Vec<usize> = firsts.iter().copied().chain(rest).collect();
                if p.words.len() > slots.len() {
                    return Err(GraphError::Invalid(format!(
                        "'{}' has more words than its spelling '{}' has units",
                        p.words.join(" "),
                        sp.join(" ")
                    )));
                }
                let mut out = vec![0u32; units.len()];
                for (w, &slot) in p.words.iter().zip(&slots) {
                    out[slot] = *word_ids.entry(w.as_str()).or_insert_with(|| {
                        words.push(w.clone());
                        words.len() as u32
                    });
                }
                let mut n = 0;
                for (t, o) in units.into_iter().zip(out) {
                    n = match index.get(&(n, t, o)) {
                        Some(&c) => c,
                        None => {
                            let c = nodes.len();
                            nodes.push(Node {
                                token: t,
                                ..Node::default()
                            });
                            nodes[n].children.push((t, o, c));
                            index.insert((n, t, o), c);
                            c
                        }
                    };
                }
                let best = nodes[n].weight.map_or(p.weight, |w| w.max(p.weight));
                nodes[n].weight = Some(best);
                kept = true;
            }
            phrases += usize::from(kept);
        }
        Ok(Self {
            nodes,
            words,
            phrases,
            unspellable,
        })
    }

    /// Sets each node's pushed class cost ([`ClassCost`]). A child is created after its
    /// parent, so a reverse pass counts the phrases through every node.
    fn price(&mut self, class: ClassCost) {
        if class == ClassCost::None {
            return;
        }
        let nodes = &mut self.nodes;
        let mut count = vec![0f64; nodes.len()];
        for n in (0..nodes.len()).rev() {
            count[n] += f64::from(u8::from(nodes[n].weight.is_some()));
            for &(_, _, c) in &nodes[n].children {
                count[n] += count[c];
            }
        }
        for n in 0..nodes.len() {
            if nodes[n].weight.is_some() {
                nodes[n].end = count[n].ln() as f32;
            }
            for k in 0..nodes[n].children.len() {
                let c = nodes[n].children[k].2;
                nodes[c].enter = (count[n] / count[c]).ln() as f32;
            }
        }
    }

    fn into_graph(self, b: Building) -> ContextGraph {
        ContextGraph {
            graph: to_csr(b),
            words: self.words,
            phrases: self.phrases,
            unspellable: self.unspellable,
        }
    }
}

/// States and arcs of a graph being built, with final costs: the arcs in one flat list (with
/// their source state) in the order they were added — a chained context has ~10 states per
/// trie node, and one allocation per state would dominate its compile time.
struct Building {
    arcs: Vec<(u32, Arc)>,
    final_cost: Vec<f32>,
}

impl Building {
    /// `n` states, room for `chain + 1` states of two arcs per state (a node and its blanks).
    fn with_states(n: usize, chain: u32) -> Self {
        let per = chain as usize + 1;
        let mut final_cost = Vec::with_capacity(n * per);
        final_cost.resize(n, f32::INFINITY);
        Self {
            arcs: Vec::with_capacity(2 * n * per),
            final_cost,
        }
    }

    fn state(&mut self) -> u32 {
        self.final_cost.push(f32::INFINITY);
        (self.final_cost.len() - 1) as u32
    }

    fn arc(&mut self, from: u32, il: u32, ol: u32, next: u32) {
        self.weighted(from, il, ol, 0.0, next);
    }

    fn weighted(&mut self, from: u32, il: u32, ol: u32, w: f32, next: u32) {
        self.arcs.push((from, Arc { il, ol, w, next }));
    }
}

/// Normal topology: `E(n)` for every node but the root (state of node n = n), then for each node
/// with children its blank states: one `B(n)` with a blank self-loop when `max_blanks` is
/// `None`, else a chain `B₁(n) … B_k(n)` (`Bᵢ` = i blanks since `u`, the last without a way to
/// a further blank), each with the child arcs and the node's final cost.
fn layout_normal(nodes: &[Node], max_blanks: Option<u32>) -> Building {
    let mut b = Building::with_states(nodes.len(), max_blanks.unwrap_or(1));
    let mut blank_of = vec![u32::MAX; nodes.len()];
    for (n, node) in nodes.iter().enumerate().skip(1) {
        if !node.children.is_empty() {
            blank_of[n] = b.state();
            for _ in 1..max_blanks.unwrap_or(1) {
                b.state();
            }
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        let e = n as u32;
        if n == 0 {
            for &(t, o, c) in &node.children {
                b.weighted(0, unit_label(t), o, nodes[c].enter, c as u32);
            }
            continue;
        }
        b.arc(e, unit_label(node.token), 0, e);
        if let Some(w) = node.weight {
            b.final_cost[n] = node.end - w;
        }
        if node.children.is_empty() {
            continue;
        }
        for &(t, o, c) in &node.children {
            if t != node.token {
                b.weighted(e, unit_label(t), o, nodes[c].enter, c as u32);
            }
        }
        b.arc(e, BLANK_LABEL, 0, blank_of[n]);
        let chain = max_blanks.unwrap_or(1);
        blank_run(&mut b, nodes, n, blank_of[n], chain, max_blanks.is_none());
    }
    b
}

/// The blank states `first … first + chain − 1` of `node` (consecutive): each reads a blank into
/// the next (the last into itself when `looped`), reads the node's children and ends its phrase
/// where the node does.
fn blank_run(b: &mut Building, nodes: &[Node], n: usize, first: u32, chain: u32, looped: bool) {
    let node = &nodes[n];
    for i in 0..chain {
        let s = first + i;
        if i + 1 < chain {
            b.arc(s, BLANK_LABEL, 0, s + 1);
        } else if looped {
            b.arc(s, BLANK_LABEL, 0, s);
        }
        if let Some(w) = node.weight {
            b.final_cost[s as usize] = node.end - w;
        }
        for &(t, o, c) in &node.children {
            b.weighted(s, unit_label(t), o, nodes[c].enter, c as u32);
        }
    }
}

/// Compact topology: `H(n)` for every node but the root (state n; the root's state 0 plays its
/// loop state without a blank loop), then for nodes with children `L(n)` (entered by ε, reads
/// the children) with a blank self-loop when `max_blanks` is `None`, else `L(n)` and a chain of
/// `k` blank states after it, as in the normal layout.
fn layout_compact(nodes: &[Node], max_blanks: Option<u32>) -> Building {
    let mut b = Building::with_states(nodes.len(), max_blanks.unwrap_or(0) + 1);
    for (n, node) in nodes.iter().enumerate() {
        if n == 0 {
            for &(t, o, c) in &node.children {
                b.weighted(0, unit_label(t), o, nodes[c].enter, c as u32);
            }
            continue;
        }
        let h = n as u32;
        b.arc(h, unit_label(node.token), 0, h);
        if let Some(w) = node.weight {
            b.final_cost[n] = node.end - w;
        }
        if node.children.is_empty() {
            continue;
        }
        let l = b.state();
        b.arc(h, 0, 0, l);
        match max_blanks {
            None => blank_run(&mut b, nodes, n, l, 1, true),
            Some(k) => {
                for _ in 0..k {
                    b.state();
                }
                // L(n) reads no blank itself: its blank leads into the chain.
                blank_run(&mut b, nodes, n, l, k + 1, false);
            }
        }
    }
    b
}

/// HMM layout: node n's unit is a chain of its pdfs, the first HMM state being state n and the
/// others appended; a child is entered from the last state of its parent (the start state for
/// the first unit), the phrase-end nodes' last states are final.
fn layout_hmm(nodes: &[Node], hmms: &UnitHmms) -> Building {
    let mut b = Building::with_states(nodes.len(), 2);
    let mut last = vec![0u32; nodes.len()];
    for (n, node) in nodes.iter().enumerate().skip(1) {
        let pdfs = &hmms.pdfs[node.token as usize - 1];
        let mut s = n as u32;
        b.weighted(s, pdfs[0] + 1, 0, hmms.loop_cost[pdfs[0] as usize], s);
        for &p in &pdfs[1..] {
            let d = b.state();
            b.weighted(s, p + 1, 0, hmms.enter_cost[p as usize], d);
            b.weighted(d, p + 1, 0, hmms.loop_cost[p as usize], d);
            s = d;
        }
        last[n] = s;
        if let Some(w) = node.weight {
            b.final_cost[s as usize] = node.end - w;
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        for &(t, o, c) in &node.children {
            let p = hmms.pdfs[t as usize - 1][0];
            let w = hmms.enter_cost[p as usize] + nodes[c].enter;
            b.weighted(last[n], p + 1, o, w, c as u32);
        }
    }
    b
}

/// Lays the arcs out as CSR: every state's emitting arcs first, sorted by input label (stable:
/// arcs of one label in the order they were added — the search skips a label's run at once
/// when its cheapest arc fails the beam), then the non-emitting ones in the order they were
/// added (the layout of [`DecodingGraph`]).
fn to_csr(b: Building) -> DecodingGraph {
    let n = b.final_cost.len();
    let total = b.arcs.len();
    // Each state's arcs, emitting ones first, by a counting sort on (state, ε) — stable, so
    // arcs keep the order they were added in — then each state's emitting arcs by label.
    let key = |(s, a): &(u32, Arc)| 2 * *s as usize + usize::from(a.il == 0);
    let mut start = vec![0u32; 2 * n + 1];
    for x in &b.arcs {
        start[key(x) + 1] += 1;
    }
    for k in 0..2 * n {
        start[k + 1] += start[k];
    }
    let mut fill = start.clone();
    let mut order = vec![0u32; total];
    for (i, x) in b.arcs.iter().enumerate() {
        let k = key(x);
        order[fill[k] as usize] = i as u32;
        fill[k] += 1;
    }
    for s in 0..n {
        let run = &mut order[start[2 * s] as usize..start[2 * s + 1] as usize];
        if run.len() > 1 {
            run.sort_by_key(|&i| b.arcs[i as usize].1.il);
        }
    }
    let mut g = DecodingGraph {
        start: 0,
        final_cost: b.final_cost,
        e_offsets: Vec::with_capacity(n + 1),
        ne_offsets: Vec::with_capacity(n + 1),
        ilabel: Vec::with_capacity(total),
        olabel: Vec::with_capacity(total),
        weight: Vec::with_capacity(total),
        next: Vec::with_capacity(total),
    };
    let push = |g: &mut DecodingGraph, range: std::ops::Range<u32>| {
        for &i in &order[range.start as usize..range.end as usize] {
            let a = &b.arcs[i as usize].1;
            g.ilabel.push(a.il);
            g.olabel.push(a.ol);
            g.weight.push(a.w);
            g.next.push(a.next);
        }
    };
    for s in 0..n {
        g.e_offsets.push(g.ilabel.len() as u32);
        push(&mut g, start[2 * s]..start[2 * s + 1]);
    }
    g.e_offsets.push(g.ilabel.len() as u32);
    for s in 0..n {
        g.ne_offsets.push(g.ilabel.len() as u32);
        push(&mut g, start[2 * s + 1]..start[2 * s + 2]);
    }
    g.ne_offsets.push(g.ilabel.len() as u32);
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The cheapest way through `g` reading `frames` (input labels, one per frame) from the
    /// start to a final state: (cost incl. the final cost, output labels), or `None`.
    fn read(g: &DecodingGraph, frames: &[u32]) -> Option<(f32, Vec<u32>)> {
        let n = g.num_states();
        let mut cur: Vec<Option<(f32, Vec<u32>)>> = vec![None; n];
        cur[g.start as usize] = Some((0.0, Vec::new()));
        let closure = |cur: &mut Vec<Option<(f32, Vec<u32>)>>| {
            for _ in 0..n {
                for s in 0..n {
                    let Some((c, out)) = cur[s].clone() else {
                        continue;
                    };
                    for a in g.ne_offsets[s] as usize..g.ne_offsets[s + 1] as usize {
                        let d = g.next[a] as usize;
                        let c2 = c + g.weight[a];
                        if cur[d].as_ref().is_none_or(|(x, _)| c2 < *x) {
                            let mut o = out.clone();
                            if g.olabel[a] != 0 {
                                o.push(g.olabel[a]);
                            }
                            cur[d] = Some((c2, o));
                        }
                    }
                }
            }
        };
        closure(&mut cur);
        for &f in frames {
            let mut next: Vec<Option<(f32, Vec<u32>)>> = vec![None; n];
            for (s, tok) in cur.iter().enumerate() {
                let Some((c, out)) = tok else { continue };
                for a in g.e_offsets[s] as usize..g.e_offsets[s + 1] as usize {
                    if g.ilabel[a] != f {
                        continue;
                    }
                    let d = g.next[a] as usize;
                    let c2 = c + g.weight[a];
                    if next[d].as_ref().is_none_or(|(x, _)| c2 < *x) {
                        let mut o = out.clone();
                        if g.olabel[a] != 0 {
                            o.push(g.olabel[a]);
                        }
                        next[d] = Some((c2, o));
                    }
                }
            }
            closure(&mut next);
            cur = next;
        }
        (0..n)
            .filter_map(|s| {
                let (c, o) = cur[s].clone()?;
                g.final_cost[s]
                    .is_finite()
                    .then(|| (c + g.final_cost[s], o))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    const B: u32 = BLANK_LABEL;
    /// Input label of token `t`.
    fn t(t: u32) -> u32 {
        unit_label(t)
    }

    fn compile(text: &str, topo: CtcTopology) -> ContextGraph {
        compile_bounded(text, topo, None)
    }

    /// Unknown-looking words, spelled by hand: zorblax = 7 7 9, corp = 4, zorro = 7 5, mute = 6.
    fn spell(w: &str) -> Option<Vec<u32>> {
        match w {
            "zorblax" => Some(vec![7, 7, 9]),
            "corp" => Some(vec![4]),
            "zorro" => Some(vec![7, 5]),
            "mute" => Some(vec![6]),
            _ => None,
        }
    }

    fn compile_bounded(text: &str, topo: CtcTopology, max_blanks: Option<u32>) -> ContextGraph {
        let list = ContextList::parse(text, Path::new("ctx"), 2.0, true).unwrap();
        ContextGraph::compile(&list, spell, topo, max_blanks).unwrap()
    }

    /// With the uniform class cost every phrase of N costs ln N − weight in all, on both CTC
    /// topologies, bounded or not, and in the hybrid layout; a prefix shared by few phrases is
    /// dearer at its first token than one shared by many.
    #[test]
    fn a_uniform_class_cost_prices_every_phrase_at_ln_n() {
        let text = "zorblax corp\t3\nzorro\nmute\t-1.5\nzorblax\n";
        let list = ContextList::parse(text, Path::new("ctx"), 2.0, true).unwrap();
        let ln4 = 4f32.ln();
        let close = |got: Option<(f32, Vec<u32>)>, cost: f32, words: &[u32]| {
            let (c, w) = got.expect("the phrase reads");
            assert!((c - cost).abs() < 1e-5, "{c} vs {cost}");
            assert_eq!(w, words);
        };
        for (topo, max_blanks) in [
            (CtcTopology::Normal, None),
            (CtcTopology::Normal, Some(3)),
            (CtcTopology::Compact, None),
            (CtcTopology::Compact, Some(3)),
        ] {
            let g =
                ContextGraph::compile_priced(&list, spell, topo, max_blanks, ClassCost::Uniform)
                    .unwrap();
            let gr = &g.graph;
            let what = format!("{topo:?} {max_blanks:?}");
            close(
                read(gr, &[t(7), B, t(7), t(9), B, t(4)]),
                ln4 - 3.0,
                &[1, 2],
            );
            close(read(gr, &[t(7), B, t(7), t(9)]), ln4 - 2.0, &[1]);
            close(read(gr, &[t(7), t(5)]), ln4 - 2.0, &[3]);
            close(read(gr, &[t(6)]), ln4 + 1.5, &[4]);
            // Into zorblax's 7 (two phrases of four): ln 2; into zorro's 7 and mute's 6 (one
            // each): ln 4.
            let mut root: Vec<f32> = gr.emitting(0).map(|a| gr.weight[a]).collect();
            root.sort_by(f32::total_cmp);
            assert_eq!(root.len(), 3, "{what}");
            for (got, want) in root.iter().zip([2f32.ln(), ln4, ln4]) {
                assert!((got - want).abs() < 1e-6, "{what}: {root:?}");
            }
        }
        // Without a class cost the compile is the plain one, arc for arc.
        let plain = ContextGraph::compile(&list, spell, CtcTopology::Normal, Some(3)).unwrap();
        let none = ContextGraph::compile_priced(
            &list,
            spell,
            CtcTopology::Normal,
            Some(3),
            ClassCost::None,
        )
        .unwrap();
        assert_eq!(plain, none);
        // The hybrid layout: units 4..9 as one-state HMMs with entry cost 0.5.
        let hmms = UnitHmms {
            pdfs: (0..9).map(|u| vec![u]).collect(),
            enter_cost: vec![0.5; 9],
            loop_cost: vec![0.1; 9],
        };
        let h =
            ContextGraph::compile_hybrid_priced(&list, spell, &hmms, ClassCost::Uniform).unwrap();
        // zorro: units 7, 5 (unit u's pdf is u − 1, read as label u), entered once each.
        close(read(&h.graph, &[7, 5]), 1.0 + ln4 - 2.0, &[3]);
    }

    #[test]
    fn a_completed_phrase_earns_its_weight_and_spells_its_words() {
        let g = compile(
            "zorblax corp\t3\nzorro\nmute\t-1.5\nnobody knows\n",
            CtcTopology::Normal,
        );
        assert_eq!(g.words, ["zorblax", "corp", "zorro", "mute"]);
        assert_eq!(g.phrases, 3);
        assert_eq!(g.unspellable, ["nobody knows"]);
        let gr = &g.graph;
        // zorblax corp with held tokens and blanks: bonus 3, words 1 2.
        let full = [t(7), t(7), B, t(7), t(9), t(9), B, t(4)];
        assert_eq!(read(gr, &full), Some((-3.0, vec![1, 2])));
        // A broken-off prefix has no way out: it earns nothing.
        assert_eq!(read(gr, &[t(7), B, t(7), t(9)]), None);
        // The repeated 7 needs a blank: without it the two frames are one held token.
        assert_eq!(read(gr, &[t(7), t(7), t(9), t(4)]), None);
        // zorro shares the first token with zorblax but not the word: its own output.
        assert_eq!(read(gr, &[t(7), t(5)]), Some((-2.0, vec![3])));
        // A negative weight is a penalty at completion.
        assert_eq!(read(gr, &[t(6), t(6)]), Some((1.5, vec![4])));
        // Blanks before the first token belong to the main graph.
        assert_eq!(read(gr, &[B, t(6)]), None);
    }

    mod spellings;

    #[test]
    fn compact_topology_does_not_enforce_the_repeat_rule() {
        let g = compile("zorblax corp\t3\nzorro\n", CtcTopology::Compact);
        let gr = &g.graph;
        assert_eq!(
            read(gr, &[t(7), t(7), t(9), t(4)]),
            Some((-3.0, vec![1, 2]))
        );
        assert_eq!(
            read(gr, &[t(7), B, B, t(7), t(9), B, t(4), t(4)]),
            Some((-3.0, vec![1, 2]))
        );
        assert_eq!(read(gr, &[t(7), t(7), t(9)]), None);
        // H/L per inner node: start, 3 nodes of zorblax (+3 L), corp, zorro's 7 (+L) and 5.
        assert_eq!(gr.num_states(), 1 + 3 + 3 + 1 + 2 + 1);
    }

    #[test]
    fn hybrid_phrases_walk_their_phones_hmms() {
        use crate::hmm::HmmTopology;
        let topo = HmmTopology {
            states_per_phone: 2,
            self_loop_prob: 0.5,
            transition_scale: 1.0,
        };
        let hmms = UnitHmms::uniform(&topo, 5);
        let list = ContextList::parse("zorblax\t2\nzorblax corp\t4\n", Path::new("ctx"), 1.0, true)
            .unwrap();
        // Letter-to-sound stand-ins: zorblax = units 3 1, corp = unit 5.
        let pron = |w: &str| match w {
            "zorblax" => Some(vec![3, 1]),
            "corp" => Some(vec![5]),
            _ => None,
        };
        let g = ContextGraph::compile_hybrid(&list, pron, &hmms).unwrap();
        let ln2 = std::f32::consts::LN_2;
        // pdf(u, k) = 2(u − 1) + k, label = pdf + 1: unit 3 reads 5 6, unit 1 reads 1 2.
        let (cost, out) = read(&g.graph, &[5, 5, 6, 1, 2]).unwrap();
        assert!((cost - (5.0 * ln2 - 2.0)).abs() < 1e-5, "{cost}");
        assert_eq!(out, [1]);
        // On into corp (unit 5: labels 9 10): the longer phrase's weight.
        let (cost, out) = read(&g.graph, &[5, 6, 1, 2, 9, 10, 10]).unwrap();
        assert!((cost - (7.0 * ln2 - 4.0)).abs() < 1e-5, "{cost}");
        assert_eq!(out, [1, 2]);
        assert_eq!(read(&g.graph, &[5, 6, 1]), None, "a prefix earns nothing");
        assert_eq!(read(&g.graph, &[1, 2, 5, 6]), None);
        let e = ContextGraph::compile_hybrid(&list, |_| Some(vec![6]), &hmms).unwrap_err();
        assert!(e.to_string().contains("unit 6 of 5"), "{e}");
    }

    #[test]
    fn phrases_share_their_common_first_words() {
        let g = compile(
            "zorblax corp\nzorblax\t5\nzorblax zorro\n",
            CtcTopology::Normal,
        );
        assert_eq!(g.words, ["zorblax", "corp", "zorro"]);
        // One spelling of zorblax (3 nodes), then corp (1) and zorro (2): 6 nodes + start; B
        // states for the 4 nodes with children (7, 7, 9, zorro's 7).
        assert_eq!(g.graph.num_states(), 7 + 4);
        // zorblax alone ends at an inner node: it exits there with its own weight.
        assert_eq!(
            read(&g.graph, &[t(7), B, t(7), t(9)]),
            Some((-5.0, vec![1]))
        );
        assert_eq!(
            read(&g.graph, &[t(7), B, t(7), t(9), B, B]),
            Some((-5.0, vec![1]))
        );
        let bad = ContextList::parse("x", Path::new("ctx"), 1.0, true).unwrap();
        let e = ContextGraph::compile(&bad, |_| Some(vec![3, 0]), CtcTopology::Normal, None)
            .unwrap_err();
        assert!(e.to_string().contains("token 0"), "{e}");
    }

    #[test]
    fn a_bound_on_blanks_ends_a_match_at_a_longer_pause() {
        let blanks = |n: usize| vec![B; n];
        // zorblax corp with `gap` blanks between the two words (and one inside zorblax).
        let phrase = |gap: usize| {
            let mut f = vec![t(7), B, t(7), t(9)];
            f.extend(blanks(gap));
            f.push(t(4));
            f
        };
        for topo in [CtcTopology::Normal, CtcTopology::Compact] {
            let g = compile_bounded("zorblax corp\t3\nzorblax\t1\n", topo, Some(3));
            for gap in 1..=3 {
                assert_eq!(
                    read(&g.graph, &phrase(gap)),
                    Some((-3.0, vec![1, 2])),
                    "{topo:?} gap {gap}"
                );
            }
            // Four blanks: corp can no longer follow, nor a fourth blank be read inside the
            // context (in the search, zorblax exits first and the main graph reads them).
            assert_eq!(read(&g.graph, &phrase(4)), None, "{topo:?}");
            let mut cut = phrase(4);
            cut.pop();
            assert_eq!(read(&g.graph, &cut), None, "{topo:?}");
            // A node's bounded blanks still end a phrase: zorblax then three blanks, final.
            assert_eq!(
                read(&g.graph, &[t(7), B, t(7), t(9), B, B, B]),
                Some((-1.0, vec![1])),
                "{topo:?}"
            );
            // Unbounded, the long pause is read.
            let open = compile("zorblax corp\t3\n", topo);
            assert_eq!(read(&open.graph, &phrase(40)), Some((-3.0, vec![1, 2])));
        }
        // Normal: 3 blank states per node with children instead of one.
        let g = compile_bounded("zorblax corp\n", CtcTopology::Normal, Some(3));
        assert_eq!(g.graph.num_states(), 5 + 3 * 3);
        let list = ContextList::parse("x", Path::new("ctx"), 1.0, true).unwrap();
        let e = ContextGraph::compile(&list, |_| Some(vec![3]), CtcTopology::Normal, Some(0))
            .unwrap_err();
        assert!(e.to_string().contains("max_blanks 0"), "{e}");
    }
}

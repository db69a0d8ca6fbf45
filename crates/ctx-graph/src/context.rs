//! A stream's context graph for open-vocabulary biasing (docs/design.md §3, issue 42): the
//! phrases of a [`ContextList`] spelled in the model's tokens and laid out with the CTC rules of
//! the main graph's topology ([`ContextGraph::compile`]), or pronounced in phones and laid out as
//! their HMMs ([`ContextGraph::compile_hybrid`]), compiled at run time in the [`DecodingGraph`]
//! layout so the search walks it as it walks TLG or HCLG.
//!
//! The phrases form a trie over (token, word output) pairs: phrases that start with the same
//! words share states; a word's output label sits on the arc that reads its first token, so two
//! words spelled alike still leave apart. Each trie node becomes the states of one CTC token:
//! - **normal** (exact CTC rules): node `n` holding token `u` has `E(n)` (just read `u`; `u`
//!   again holds it) and, when it has children, `B(n)` (a blank after `u`). A child with token `v`
//!   is entered from `E(n)` when `v ≠ u` and always from `B(n)`: a repeated token needs a blank.
//! - **compact** (one loop per token, repeats not collapsed): `H(n)` holds `u`, an ε arc leads to
//!   `L(n)`, whose blank self-loop and child arcs continue.
//!
//! The start state reads a first token only (blanks before a phrase belong to the main graph).
//! The states that complete a phrase are final with cost `−weight`: the weight is earned only by
//! a finished phrase, a broken-off prefix has no way out and earns nothing. Input labels follow
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
//! let g = ContextGraph::compile(&list, spell, CtcTopology::Normal).unwrap();
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
use std::collections::HashMap;

/// A compiled context: the graph, its output words, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextGraph {
    /// The graph (start state 0; final states complete a phrase).
    pub graph: DecodingGraph,
    /// Output label `k > 0` is `words[k − 1]`.
    pub words: Vec<String>,
    /// Phrases compiled.
    pub phrases: usize,
    /// Phrases left out because a word could not be spelled (the spelling gave nothing).
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

/// A trie node: its token (0 at the root), its children, and the best weight of a phrase ending
/// here (`None` when none does).
#[derive(Debug, Default)]
struct Node {
    token: u32,
    children: Vec<(u32, u32, usize)>,
    weight: Option<f32>,
}

impl ContextGraph {
    /// Compiles `list`: each word spelled by `spell` into token ids (1-based, as in T; `None` or
    /// an empty spelling leaves the phrase out and names it in `unspellable`), laid out for
    /// `topo`. A token id 0 (the blank) in a spelling is an error.
    pub fn compile(
        list: &ContextList,
        spell: impl FnMut(&str) -> Option<Vec<u32>>,
        topo: CtcTopology,
    ) -> Result<Self> {
        let trie = Trie::build(list, spell, "token 0 (the blank)")?;
        let graph = match topo {
            CtcTopology::Normal => layout_normal(&trie.nodes),
            CtcTopology::Compact => layout_compact(&trie.nodes),
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
        let trie = Trie::build(list, pronounce, "unit 0")?;
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
        let mut word_ids: HashMap<String, u32> = HashMap::new();
        let mut spelled: HashMap<String, Option<Vec<u32>>> = HashMap::new();
        let mut nodes = vec![Node::default()];
        let mut index: HashMap<(usize, u32, u32), usize> = HashMap::new();
        let mut unspellable = Vec::new();
        let mut phrases = 0;
        'phrase: for p in &list.phrases {
            let mut pieces: Vec<(u32, u32)> = Vec::new();
            for w in &p.words {
                let sp = spelled
                    .entry(w.clone())
                    .or_insert_with(|| spell(w).filter(|s| !s.is_empty()));
                let Some(sp) = sp else {
                    unspellable.push(p.words.join(" "));
                    continue 'phrase;
                };
                if sp.contains(&0) {
                    return Err(GraphError::Invalid(format!(
                        "the spelling of '{w}' holds {zero}"
                    )));
                }
                let id = *word_ids.entry(w.clone()).or_insert_with(|| {
                    words.push(w.clone());
                    words.len() as u32
                });
                for (i, &t) in sp.iter().enumerate() {
                    pieces.push((t, if i == 0 { id } else { 0 }));
                }
            }
            let mut n = 0;
            for (t, o) in pieces {
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
            phrases += 1;
        }
        Ok(Self {
            nodes,
            words,
            phrases,
            unspellable,
        })
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

/// States and arcs of a graph being built, with final costs.
struct Building {
    arcs: Vec<Vec<Arc>>,
    final_cost: Vec<f32>,
}

impl Building {
    fn with_states(n: usize) -> Self {
        Self {
            arcs: vec![Vec::new(); n],
            final_cost: vec![f32::INFINITY; n],
        }
    }

    fn state(&mut self) -> u32 {
        self.arcs.push(Vec::new());
        self.final_cost.push(f32::INFINITY);
        (self.arcs.len() - 1) as u32
    }

    fn arc(&mut self, from: u32, il: u32, ol: u32, next: u32) {
        self.weighted(from, il, ol, 0.0, next);
    }

    fn weighted(&mut self, from: u32, il: u32, ol: u32, w: f32, next: u32) {
        self.arcs[from as usize].push(Arc { il, ol, w, next });
    }
}

/// Normal topology: `E(n)` for every node but the root (state of node n = n), `B(n)` appended
/// for nodes with children.
fn layout_normal(nodes: &[Node]) -> Building {
    let mut b = Building::with_states(nodes.len());
    let mut blank_of = vec![u32::MAX; nodes.len()];
    for (n, node) in nodes.iter().enumerate().skip(1) {
        if !node.children.is_empty() {
            blank_of[n] = b.state();
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        let e = n as u32;
        if n == 0 {
            for &(t, o, c) in &node.children {
                b.arc(0, unit_label(t), o, c as u32);
            }
            continue;
        }
        b.arc(e, unit_label(node.token), 0, e);
        if let Some(w) = node.weight {
            b.final_cost[n] = -w;
        }
        if node.children.is_empty() {
            continue;
        }
        let bl = blank_of[n];
        b.arc(e, BLANK_LABEL, 0, bl);
        b.arc(bl, BLANK_LABEL, 0, bl);
        if let Some(w) = node.weight {
            b.final_cost[bl as usize] = -w;
        }
        for &(t, o, c) in &node.children {
            if t != node.token {
                b.arc(e, unit_label(t), o, c as u32);
            }
            b.arc(bl, unit_label(t), o, c as u32);
        }
    }
    b
}

/// Compact topology: `H(n)` for every node but the root (state n; the root's state 0 plays its
/// loop state without a blank loop), `L(n)` appended for nodes with children.
fn layout_compact(nodes: &[Node]) -> Building {
    let mut b = Building::with_states(nodes.len());
    for (n, node) in nodes.iter().enumerate() {
        if n == 0 {
            for &(t, o, c) in &node.children {
                b.arc(0, unit_label(t), o, c as u32);
            }
            continue;
        }
        let h = n as u32;
        b.arc(h, unit_label(node.token), 0, h);
        if let Some(w) = node.weight {
            b.final_cost[n] = -w;
        }
        if node.children.is_empty() {
            continue;
        }
        let l = b.state();
        b.arc(h, 0, 0, l);
        b.arc(l, BLANK_LABEL, 0, l);
        if let Some(w) = node.weight {
            b.final_cost[l as usize] = -w;
        }
        for &(t, o, c) in &node.children {
            b.arc(l, unit_label(t), o, c as u32);
        }
    }
    b
}

/// HMM layout: node n's unit is a chain of its pdfs, the first HMM state being state n and the
/// others appended; a child is entered from the last state of its parent (the start state for
/// the first unit), the phrase-end nodes' last states are final.
fn layout_hmm(nodes: &[Node], hmms: &UnitHmms) -> Building {
    let mut b = Building::with_states(nodes.len());
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
            b.final_cost[s as usize] = -w;
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        for &(t, o, c) in &node.children {
            let p = hmms.pdfs[t as usize - 1][0];
            b.weighted(last[n], p + 1, o, hmms.enter_cost[p as usize], c as u32);
        }
    }
    b
}

/// Lays the arcs out as CSR: every state's emitting arcs first, sorted by input label (stable:
/// arcs of one label in the order they were added — the search skips a label's run at once
/// when its cheapest arc fails the beam), then the non-emitting ones in the order they were
/// added (the layout of [`DecodingGraph`]).
fn to_csr(b: Building) -> DecodingGraph {
    let n = b.arcs.len();
    let total: usize = b.arcs.iter().map(Vec::len).sum();
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
    let push = |g: &mut DecodingGraph, a: &Arc| {
        g.ilabel.push(a.il);
        g.olabel.push(a.ol);
        g.weight.push(a.w);
        g.next.push(a.next);
    };
    for arcs in &b.arcs {
        g.e_offsets.push(g.ilabel.len() as u32);
        let mut emitting: Vec<&Arc> = arcs.iter().filter(|a| a.il != 0).collect();
        emitting.sort_by_key(|a| a.il);
        for a in emitting {
            push(&mut g, a);
        }
    }
    g.e_offsets.push(g.ilabel.len() as u32);
    for arcs in &b.arcs {
        g.ne_offsets.push(g.ilabel.len() as u32);
        for a in arcs.iter().filter(|a| a.il == 0) {
            push(&mut g, a);
        }
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
        let list = ContextList::parse(text, Path::new("ctx"), 2.0, true).unwrap();
        // Unknown-looking words, spelled by hand: zorblax = 7 7 9, corp = 4, zorro = 7 5.
        let spell = |w: &str| match w {
            "zorblax" => Some(vec![7, 7, 9]),
            "corp" => Some(vec![4]),
            "zorro" => Some(vec![7, 5]),
            "mute" => Some(vec![6]),
            _ => None,
        };
        ContextGraph::compile(&list, spell, topo).unwrap()
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
        let e = ContextGraph::compile(&bad, |_| Some(vec![3, 0]), CtcTopology::Normal).unwrap_err();
        assert!(e.to_string().contains("token 0"), "{e}");
    }
}

//! Lattice biasing (003 §3.1.2): the best path of word lattice ∘ biasing FST.
//!
//! The lattice is acyclic and ε-free, so the composition is a single forward pass over its
//! states in topological order; each lattice state holds the biasing-FST states reached with
//! their best cost. Before a lattice arc is matched, a biasing state moves through its
//! ε-closure (the ε arcs back to the loop state that let a matched prefix keep its discount).
//! Ties go to the earlier-visited candidate, so the result is deterministic.
//!
//! Two forms of the biasing side. [`biased_best_path`] composes with the biasing FST itself
//! (the reference, any discount). [`prefix_biased_best_path`] composes with its deterministic
//! equivalent, the phrase-prefix automaton ([`wfst_search::PhraseAutomaton`]): for a discount
//! ≤ 0 the FST's best cost over a word sequence is the discount times the number of words that
//! end a phrase prefix occurrence (every such word can be covered by one segmentation into
//! loop words and prefixes, and a covered word ends one), which is what the automaton adds.
//! It needs no FST build per segment and keeps one state per path instead of a closure, which
//! is what keeps lattice biasing within its time budget (`benches/overhead.rs`).

use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeMap;
use wfst_search::{LatticePath, PhraseAutomaton, WordLattice};

/// The best biased path.
#[derive(Debug, Clone, PartialEq)]
pub struct BiasedPath {
    /// The path, with the lattice's own graph and acoustic costs.
    pub path: LatticePath,
    /// The biasing FST's cost along it (the discounts earned).
    pub bias: f32,
}

impl BiasedPath {
    /// Total cost of the composed path.
    pub fn cost(&self) -> f32 {
        self.path.cost() + self.bias
    }
}

/// ε-closure of every biasing state: (state, cost) pairs, the state itself first at cost 0.
fn eps_closures(b: &StdFst) -> Vec<Vec<(StateId, f32)>> {
    let n = b.num_states();
    (0..n as StateId)
        .map(|s| {
            let mut best: BTreeMap<StateId, f32> = BTreeMap::new();
            best.insert(s, 0.0);
            let mut stack = vec![s];
            let mut rounds = 0usize;
            while let Some(u) = stack.pop() {
                rounds += 1;
                if rounds > 64 * n + 64 {
                    break; // negative ε cycle: keep what we have
                }
                let cu = best[&u];
                for tr in b.get_trs(u).expect("state exists").trs() {
                    if tr.ilabel != 0 {
                        continue;
                    }
                    let c = cu + *tr.weight.value();
                    let e = best.entry(tr.nextstate).or_insert(f32::INFINITY);
                    if c < *e {
                        *e = c;
                        stack.push(tr.nextstate);
                    }
                }
            }
            let mut v: Vec<(StateId, f32)> = best.into_iter().collect();
            v.sort_by(|a, c| (a.0 != s).cmp(&(c.0 != s)).then(a.0.cmp(&c.0)));
            v
        })
        .collect()
}

/// The best path of `lattice ∘ bias` (`bias` sorted by input label, as
/// [`ctx_graph::biasing::build_biasing_fst`] makes it), or `None` when no path survives.
pub fn biased_best_path(lattice: &WordLattice, bias: &StdFst) -> Option<BiasedPath> {
    let start = bias.start()?;
    let closures = eps_closures(bias);
    let n = lattice.num_states();
    // Per lattice state: biasing state -> (cost, bias cost, back (lattice arc, prev bias state)).
    type Cell = (f32, f32, u32, StateId);
    let mut cells: Vec<BTreeMap<StateId, Cell>> = vec![BTreeMap::new(); n];
    cells[0].insert(start, (0.0, 0.0, u32::MAX, 0));
    let mut best_end: Option<(f32, usize, StateId, f32)> = None;
    for s in 0..n {
        let here: Vec<(StateId, Cell)> = cells[s].iter().map(|(k, v)| (*k, *v)).collect();
        for &(b, (c, bc, _, _)) in &here {
            for &(b2, ce) in &closures[b as usize] {
                let trs = bias.get_trs(b2).expect("state exists");
                let trs = trs.trs();
                let (fg, fa) = lattice.finals[s];
                if fg.is_finite() {
                    if let Some(fw) = bias.final_weight(b2).expect("state exists") {
                        let total = c + ce + fg + fa + *fw.value();
                        if best_end.is_none_or(|e| total < e.0) {
                            best_end = Some((total, s, b, bc + ce + *fw.value()));
                        }
                    }
                }
                let range = lattice.arc_range(s as u32);
                for (a, arc_index) in lattice.arcs[range.clone()].iter().zip(range) {
                    let lo = trs.partition_point(|t| t.ilabel < a.word);
                    for tr in trs[lo..].iter().take_while(|t| t.ilabel == a.word) {
                        let w = *tr.weight.value();
                        let nc = c + ce + a.graph + a.ac + w;
                        let nbc = bc + ce + w;
                        let cell = cells[a.to as usize].entry(tr.nextstate).or_insert((
                            f32::INFINITY,
                            0.0,
                            u32::MAX,
                            0,
                        ));
                        if nc < cell.0 {
                            *cell = (nc, nbc, arc_index as u32, b);
                        }
                    }
                }
            }
        }
    }
    let (_, end, end_b, end_bias) = best_end?;
    // Trace back through (lattice state, biasing state).
    let mut arcs = Vec::new();
    let (mut s, mut b) = (end, end_b);
    while cells[s][&b].2 != u32::MAX {
        let (_, _, ai, pb) = cells[s][&b];
        let a = lattice.arcs[ai as usize];
        arcs.push(a);
        s = a.from as usize;
        b = pb;
    }
    arcs.reverse();
    let path = lattice.path_of(&arcs, end);
    Some(BiasedPath {
        path,
        bias: end_bias,
    })
}

/// The best path of `lattice ∘ automaton` for a phrase-prefix automaton — the same path and
/// cost as [`biased_best_path`] with the biasing FST of the automaton's phrases and a discount
/// ≤ 0 (tested on random cases; exact ties may pick another path of the same cost). `None` when
/// the lattice has no final state reachable from its start.
pub fn prefix_biased_best_path(
    lattice: &WordLattice,
    automaton: &PhraseAutomaton,
) -> Option<BiasedPath> {
    /// One (lattice state, automaton state) pair: its best cost, that path's bias and the
    /// lattice arc and automaton state it came from.
    #[derive(Clone, Copy)]
    struct Cell {
        state: u32,
        cost: f32,
        bias: f32,
        arc: u32,
        prev: u32,
    }
    let n = lattice.num_states();
    // Per lattice state, its cells in the order they were first reached (few: the automaton
    // is deterministic, so only paths ending in different prefixes keep apart).
    let mut cells: Vec<Vec<Cell>> = vec![Vec::new(); n];
    cells[0].push(Cell {
        state: 0,
        cost: 0.0,
        bias: 0.0,
        arc: u32::MAX,
        prev: 0,
    });
    let mut best_end: Option<(f32, usize, usize)> = None;
    for s in 0..n {
        let here = std::mem::take(&mut cells[s]);
        let (fg, fa) = lattice.finals[s];
        let range = lattice.arc_range(s as u32);
        for (k, c) in here.iter().enumerate() {
            if fg.is_finite() {
                let total = c.cost + fg + fa;
                if best_end.is_none_or(|e| total < e.0) {
                    best_end = Some((total, s, k));
                }
            }
            for (a, arc_index) in lattice.arcs[range.clone()].iter().zip(range.clone()) {
                let (next, w) = automaton.word(c.state, a.word);
                let cost = c.cost + a.graph + a.ac + w;
                let to = &mut cells[a.to as usize];
                let cell = Cell {
                    state: next,
                    cost,
                    bias: c.bias + w,
                    arc: arc_index as u32,
                    prev: c.state,
                };
                match to.iter_mut().find(|x| x.state == next) {
                    Some(x) if cost < x.cost => *x = cell,
                    Some(_) => {}
                    None => to.push(cell),
                }
            }
        }
        cells[s] = here;
    }
    let (_, end, k) = best_end?;
    let bias = cells[end][k].bias;
    // Trace back through (lattice state, automaton state).
    let mut arcs = Vec::new();
    let mut c = cells[end][k];
    while c.arc != u32::MAX {
        let a = lattice.arcs[c.arc as usize];
        arcs.push(a);
        c = *cells[a.from as usize]
            .iter()
            .find(|x| x.state == c.prev)
            .expect("a cell's predecessor is stored");
    }
    arcs.reverse();
    let path = lattice.path_of(&arcs, end);
    Some(BiasedPath { path, bias })
}

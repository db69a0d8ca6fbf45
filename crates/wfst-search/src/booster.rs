//! Per-stream cost modifiers (DESIGN.md §4). A booster never copies the graph: it adds a cost
//! delta to an arc when the arc is relaxed, looked up from the arc's CSR index, or — a word
//! automaton ([`LmDelta`]) — carries a state along each token and adds a cost per output word.

use crate::error::{DecodeError, Result};
use crate::lm_delta::LmDelta;
use crate::phrase_automaton::PhraseAutomaton;
use ctx_graph::csr::DecodingGraph;

/// Bits 0–6 of a state's mark: 0 when none of its emitting arcs is boosted, else 1 + the
/// number of such states before it in its block of 64 states (its row's place in
/// [`BoostedRows`], with the block's base).
const EMITTING: u8 = 0x7f;
/// A state's mark bit: one of its non-emitting arcs is boosted.
const EPSILON: u8 = 0x80;

/// A sorted, de-duplicated set of arc indices that all earn one discount (000 Algorithm 1's
/// per-context list). The sorted list is what the GPU binary-searches. The CPU backend keeps
/// two things built from it instead, because even a bitmap lookup per relaxed arc costs about
/// 12% of the decode (`benches/overhead.rs`; a binary search per arc: +79%):
/// - for every state with a boosted *emitting* arc, a copy of its row of emitting-arc weights
///   with the discount already added to the boosted ones ([`BoostedRows`]): such a token
///   expands exactly as any other, only reading its weights from the copy, so an arc costs no
///   more than without a booster, and the question per token is one byte;
/// - a bitmap over arc indices, for the ε-closure's arcs and [`ArcSetBooster::delta`].
///
/// All are shared (`Arc`), so cloning a booster per stream is cheap.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArcSetBooster {
    arcs: std::sync::Arc<Vec<u32>>,
    bits: std::sync::Arc<Vec<u64>>,
    rows: std::sync::Arc<BoostedRows>,
    num_states: usize,
    discount: f32,
}

/// The emitting rows of the states with a boosted emitting arc, weights with the discount
/// added (`weight + discount` for a boosted arc, `weight + (−0.0)` = `weight` for the others:
/// the very sums the search would form). A state's mark byte says whether it has such a row
/// and its rank within its block of 64 states; `block_base` holds the number of marked states
/// before each block, so a row is found with two loads and no search. Per list, 117 kB of
/// marks on the ATCO2 graph plus the rows (4 bytes per arc of a marked state).
#[derive(Debug, Clone, PartialEq, Default)]
struct BoostedRows {
    /// Per state: [`EMITTING`] rank bits and the [`EPSILON`] bit.
    marks: Vec<u8>,
    /// Per block of 64 states: the number of marked states before it.
    block_base: Vec<u32>,
    /// Per marked state, in state order: where its row starts in `weights`.
    row_start: Vec<u32>,
    /// The marked states' rows, concatenated in state order.
    weights: Vec<f32>,
}

impl BoostedRows {
    /// The rows for the boosted arcs `arcs` (sorted, inside the graph) of graph `g`.
    fn new(g: &DecodingGraph, arcs: &[u32], bits: &[u64], discount: f32) -> Self {
        let n = g.num_states();
        let num_e = g.num_emitting();
        // Each boosted arc's state, by binary search of the offsets (the arcs of one kind lie
        // in state order; a state without arcs of that kind never ends such a search): a
        // list is built per utterance, so this is per boosted arc, not per graph arc.
        let mut emitting = vec![false; n];
        let mut marks = vec![0u8; n];
        for &a in arcs {
            if (a as usize) < num_e {
                emitting[g.e_offsets[..n].partition_point(|&o| o <= a) - 1] = true;
            } else {
                marks[g.ne_offsets[..n].partition_point(|&o| o <= a) - 1] |= EPSILON;
            }
        }
        let boosted = |a: usize| bits.get(a / 64).is_some_and(|w| w >> (a % 64) & 1 == 1);
        let mut rows = BoostedRows {
            block_base: Vec::with_capacity(n.div_ceil(64)),
            ..Default::default()
        };
        for (s, &e) in emitting.iter().enumerate() {
            if s % 64 == 0 {
                rows.block_base.push(rows.row_start.len() as u32);
            }
            if e {
                let rank = rows.row_start.len() - rows.block_base[s / 64] as usize;
                marks[s] |= rank as u8 + 1;
                rows.row_start.push(rows.weights.len() as u32);
                for a in g.emitting(s as u32) {
                    let delta = if boosted(a) { discount } else { -0.0 };
                    rows.weights.push(g.weight[a] + delta);
                }
            }
        }
        rows.marks = marks;
        rows
    }
}

impl ArcSetBooster {
    /// Builds the set for graph `g`; `arcs` may come unsorted and with duplicates (emitting and
    /// non-emitting CSR ranges interleave when collected state by state). An arc index outside
    /// the graph is an error.
    pub fn new(g: &DecodingGraph, mut arcs: Vec<u32>, discount: f32) -> Result<Self> {
        if !discount.is_finite() {
            return Err(DecodeError::Booster(format!(
                "discount {discount} is not finite"
            )));
        }
        arcs.sort_unstable();
        arcs.dedup();
        if let Some(&a) = arcs.last().filter(|&&a| a as usize >= g.num_arcs()) {
            return Err(DecodeError::Booster(format!(
                "arc index {a} is outside the graph ({} arcs)",
                g.num_arcs()
            )));
        }
        let mut bits = vec![0u64; arcs.last().map_or(0, |&m| m as usize / 64 + 1)];
        for &a in &arcs {
            bits[a as usize / 64] |= 1 << (a % 64);
        }
        let rows = BoostedRows::new(g, &arcs, &bits, discount);
        Ok(Self {
            arcs: std::sync::Arc::new(arcs),
            bits: std::sync::Arc::new(bits),
            rows: std::sync::Arc::new(rows),
            num_states: g.num_states(),
            discount,
        })
    }

    /// Whether state `s` has a boosted arc (emitting or not).
    #[inline]
    pub fn touches(&self, s: u32) -> bool {
        self.rows.marks.get(s as usize).is_some_and(|&m| m != 0)
    }

    /// Whether `arc` is in the set, by binary search of the sorted list (the GPU's rule).
    pub fn contains_sorted(&self, arc: u32) -> bool {
        self.arcs.binary_search(&arc).is_ok()
    }

    /// The boosted arc indices, ascending.
    pub fn arcs(&self) -> &[u32] {
        &self.arcs
    }

    /// The discount added to a boosted arc's cost (negative = boost).
    pub fn discount(&self) -> f32 {
        self.discount
    }

    /// The cost delta of arc `arc` (bitmap lookup; same answer as [`Self::contains_sorted`]).
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        self.view().delta(arc)
    }
}

/// An arc's cost delta, as the search loops ask for it. The loops are generic over it so each
/// booster kind gets its own compiled loop ([`NoDelta`] for none: nothing left per arc).
///
/// A *stateful* booster (a word automaton) also has a state per token: tokens recombine per
/// (graph state, automaton state), and an arc with output word `w` moves the automaton with
/// [`ArcDelta::word`], adding its cost to the arc's graph cost.
pub(crate) trait ArcDelta {
    /// Whether tokens carry an automaton state (compile-time, so stateless loops pay nothing).
    const STATEFUL: bool = false;

    /// The weights of state `s`'s `len` emitting arcs with their deltas added, when the
    /// booster keeps such a row for `s` (asked once per expanded token; the expansion then
    /// reads the row instead of the graph's weights and asks nothing per arc).
    #[inline(always)]
    fn row_weights(&self, _s: u32, _len: usize) -> Option<&[f32]> {
        None
    }

    /// Whether an emitting arc of state `s` may have a delta that [`ArcDelta::row_weights`]
    /// does not hold: asked once per token, so that a token of a state without one expands
    /// with no per-arc lookup.
    fn touches(&self, s: u32) -> bool;

    /// Whether a non-emitting arc of `s` may have a delta (the ε-closure's question).
    #[inline(always)]
    fn touches_eps(&self, s: u32) -> bool {
        self.touches(s)
    }

    /// The cost delta of arc `arc` (0 for unboosted arcs).
    fn delta(&self, arc: u32) -> f32;

    /// The next automaton state and the added cost after output word `word`.
    #[inline(always)]
    fn word(&self, state: u32, _word: u32) -> (u32, f32) {
        (state, -0.0)
    }
}

/// No booster: every delta is −0.0, which `x + (−0.0) = x` lets the compiler drop.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoDelta;

impl ArcDelta for NoDelta {
    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }
}

/// An [`ArcSetBooster`] as the search loops read it: plain slices taken once per frame, so that
/// a lookup is one load (through the shared `Arc` it is dependent loads, which the compiler
/// cannot hoist out of a loop that writes tokens).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArcSetView<'a> {
    bits: &'a [u64],
    marks: &'a [u8],
    block_base: &'a [u32],
    row_start: &'a [u32],
    weights: &'a [f32],
    discount: f32,
}

impl ArcSetBooster {
    /// The view the search loops use.
    pub(crate) fn view(&self) -> ArcSetView<'_> {
        let r = &*self.rows;
        ArcSetView {
            bits: &self.bits,
            marks: &r.marks,
            block_base: &r.block_base,
            row_start: &r.row_start,
            weights: &r.weights,
            discount: self.discount,
        }
    }
}

impl ArcDelta for ArcSetView<'_> {
    /// One byte per token; a marked state's row is found from its block's base and its rank
    /// (the rows are built for this graph: the indices are in range by construction).
    #[inline(always)]
    fn row_weights(&self, s: u32, len: usize) -> Option<&[f32]> {
        let m = self.marks.get(s as usize)? & EMITTING;
        if m == 0 {
            return None;
        }
        let r = self.block_base[s as usize / 64] as usize + (m - 1) as usize;
        let start = self.row_start[r] as usize;
        Some(&self.weights[start..start + len])
    }

    /// Never: [`ArcDelta::row_weights`] holds every boosted emitting arc.
    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn touches_eps(&self, s: u32) -> bool {
        self.marks
            .get(s as usize)
            .is_some_and(|&m| m & EPSILON != 0)
    }

    /// Branch-free: within a state that has boosted arcs, whether the next arc is one is a coin
    /// toss the branch predictor loses.
    #[inline(always)]
    fn delta(&self, arc: u32) -> f32 {
        let w = self.bits.get(arc as usize / 64).copied().unwrap_or(0);
        self.discount * (w >> (arc % 64) & 1) as f32
    }
}

impl ArcDelta for LmDelta {
    const STATEFUL: bool = true;

    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        LmDelta::word(self, state, word)
    }
}

impl ArcDelta for PhraseAutomaton {
    const STATEFUL: bool = true;

    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        PhraseAutomaton::word(self, state, word)
    }
}

impl ArcDelta for Booster {
    const STATEFUL: bool = true;

    #[inline]
    fn touches(&self, s: u32) -> bool {
        Booster::touches(self, s)
    }

    #[inline]
    fn delta(&self, arc: u32) -> f32 {
        Booster::delta(self, arc)
    }

    #[inline]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        Booster::word(self, state, word)
    }
}

/// A stream's booster.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Booster {
    /// No change to the graph's costs.
    #[default]
    None,
    /// Arc-index set + discount.
    ArcSet(ArcSetBooster),
    /// A word automaton composed on the fly: an LM difference (G_boosted − G).
    Lm(LmDelta),
    /// A word automaton composed on the fly: phrase prefixes (G-boosting's cost change).
    Phrases(PhraseAutomaton),
    /// Several boosters whose deltas add up (at most one of them a word automaton).
    Stack(Vec<Booster>),
}

impl Booster {
    /// The cost delta of arc `arc` (0 for unboosted arcs).
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        match self {
            Booster::None => 0.0,
            Booster::ArcSet(b) => b.delta(arc),
            Booster::Lm(_) | Booster::Phrases(_) => 0.0,
            Booster::Stack(v) => v.iter().map(|b| b.delta(arc)).sum(),
        }
    }

    /// Whether an arc of state `s` may have a delta.
    #[inline]
    pub fn touches(&self, s: u32) -> bool {
        match self {
            Booster::None | Booster::Lm(_) | Booster::Phrases(_) => false,
            Booster::ArcSet(b) => b.touches(s),
            Booster::Stack(v) => v.iter().any(|b| b.touches(s)),
        }
    }

    /// The word automaton of the booster, if any (the first of a stack).
    fn automaton(&self) -> Option<&Booster> {
        match self {
            Booster::Lm(_) | Booster::Phrases(_) => Some(self),
            Booster::Stack(v) => v.iter().find_map(Booster::automaton),
            _ => None,
        }
    }

    /// Whether the booster carries a word automaton (tokens then have an automaton state).
    pub fn has_automaton(&self) -> bool {
        self.automaton().is_some()
    }

    /// The automaton state of a segment's start token (0 without an automaton).
    pub fn start(&self) -> u32 {
        match self.automaton() {
            Some(Booster::Lm(d)) => d.start(),
            _ => 0,
        }
    }

    /// The next automaton state and the added cost after output word `word`.
    #[inline]
    pub fn word(&self, state: u32, word: u32) -> (u32, f32) {
        match self {
            Booster::None | Booster::ArcSet(_) => (state, 0.0),
            Booster::Lm(d) => d.word(state, word),
            Booster::Phrases(p) => p.word(state, word),
            Booster::Stack(_) => match self.automaton() {
                Some(a) => a.word(state, word),
                None => (state, 0.0),
            },
        }
    }

    /// The cost added when a path ends with automaton state `state` (0 without an automaton).
    pub fn final_cost(&self, state: u32) -> f32 {
        match self.automaton() {
            Some(Booster::Lm(d)) => d.final_cost(state),
            _ => 0.0,
        }
    }

    /// Whether the booster changes nothing.
    pub fn is_none(&self) -> bool {
        match self {
            Booster::None => true,
            Booster::ArcSet(b) => b.arcs.is_empty() || b.discount == 0.0,
            Booster::Lm(_) | Booster::Phrases(_) => false,
            Booster::Stack(v) => v.iter().all(Booster::is_none),
        }
    }

    /// Checks an arc set was built for a graph of this size (every arc index below `num_arcs`,
    /// its state marks over `num_states`) and that a stack holds one automaton at most.
    pub fn validate(&self, num_arcs: usize, num_states: usize) -> Result<()> {
        match self {
            Booster::None | Booster::Lm(_) | Booster::Phrases(_) => Ok(()),
            Booster::Stack(v) if v.iter().filter(|b| b.automaton().is_some()).count() > 1 => Err(
                DecodeError::Booster("a booster stack holds more than one word automaton".into()),
            ),
            Booster::ArcSet(b) => match b.arcs.last() {
                Some(&a) if a as usize >= num_arcs => Err(DecodeError::Booster(format!(
                    "arc index {a} is outside the graph ({num_arcs} arcs)"
                ))),
                _ if b.num_states != num_states => Err(DecodeError::Booster(format!(
                    "the arc set was built for a graph of {} states, not this one ({num_states})",
                    b.num_states
                ))),
                _ => Ok(()),
            },
            Booster::Stack(v) => v.iter().try_for_each(|b| b.validate(num_arcs, num_states)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `states` states with `per` emitting arcs each (state s owns arcs `per·s..per·(s+1)`) and
    /// one non-emitting arc each after them (state s owns arc `per·states + s`).
    fn graph(states: u32, per: u32) -> DecodingGraph {
        let e = states * per;
        DecodingGraph {
            start: 0,
            final_cost: vec![0.0; states as usize],
            e_offsets: (0..=states).map(|s| s * per).collect(),
            ne_offsets: (0..=states).map(|s| e + s).collect(),
            ilabel: (0..e).map(|_| 1).chain((0..states).map(|_| 0)).collect(),
            olabel: vec![0; (e + states) as usize],
            weight: vec![0.0; (e + states) as usize],
            next: (0..e + states).map(|a| a % states).collect(),
        }
    }

    #[test]
    fn arc_set_sorts_dedups_and_finds() {
        let g = graph(1000, 6);
        let b = ArcSetBooster::new(&g, vec![9, 3, 7, 3, 12], -2.0).unwrap();
        assert_eq!(b.arcs(), &[3, 7, 9, 12]);
        let hits: Vec<u32> = (0..200).filter(|&a| b.delta(a) != 0.0).collect();
        assert_eq!(hits, vec![3, 7, 9, 12]);
        let sorted: Vec<u32> = (0..200).filter(|&a| b.contains_sorted(a)).collect();
        assert_eq!(sorted, hits);
        // Arcs 3 (state 0), 7 and 9 (state 1), 12 (state 2).
        let touched: Vec<u32> = (0..1000).filter(|&s| b.touches(s)).collect();
        assert_eq!(touched, vec![0, 1, 2]);
        let wide = ArcSetBooster::new(&g, vec![0, 63, 64, 127, 128, 5000, 6999], -1.0).unwrap();
        for a in 0..7000 {
            assert_eq!(wide.delta(a) != 0.0, wide.contains_sorted(a), "arc {a}");
        }
        // Emitting arcs 0, 63, 64, 127, 128, 5000 are states 0, 10, 10, 21, 21, 833; the
        // non-emitting arc 6999 is state 999's.
        let touched: Vec<u32> = (0..1000).filter(|&s| wide.touches(s)).collect();
        assert_eq!(touched, vec![0, 10, 21, 833, 999]);
        // Every state's row of weights: the graph's weight plus the discount on exactly the
        // boosted arcs, kept only for states with a boosted emitting arc (ranks straddle blocks
        // of 64 states: states 0, 10, 21, 833). The ε-only state 999 keeps none.
        let view = wide.view();
        let mut g2 = g.clone();
        for (a, w) in g2.weight.iter_mut().enumerate() {
            *w = a as f32 * 0.5;
        }
        let wide2 = ArcSetBooster::new(&g2, wide.arcs().to_vec(), -1.5).unwrap();
        let view2 = wide2.view();
        for s in 0..1000u32 {
            let arcs = g2.emitting(s);
            let row = view2.row_weights(s, arcs.len());
            assert_eq!(row.is_some(), [0, 10, 21, 833].contains(&s), "state {s}");
            assert_eq!(view.row_weights(s, arcs.len()).is_some(), row.is_some());
            if let Some(row) = row {
                for (k, a) in arcs.enumerate() {
                    let want = a as f32 * 0.5
                        + if wide2.contains_sorted(a as u32) {
                            -1.5
                        } else {
                            0.0
                        };
                    assert_eq!(row[k], want, "state {s} arc {a}");
                }
            }
            assert_eq!(view2.touches_eps(s), s == 999, "state {s}");
            assert!(!view2.touches(s));
        }
        // Every state marked both ways (ranks 1..=64 in each block beside the ε bit): each row
        // is its own, the boost on its second arc only.
        let all: Vec<u32> = (0..1000).flat_map(|s| [6 * s + 1, 6000 + s]).collect();
        let full = ArcSetBooster::new(&g2, all, -1.5).unwrap();
        let fv = full.view();
        for s in 0..1000u32 {
            let row = fv.row_weights(s, 6).unwrap();
            let want: Vec<f32> = (0..6)
                .map(|k| (6 * s + k) as f32 * 0.5 + if k == 1 { -1.5 } else { 0.0 })
                .collect();
            assert_eq!(row, &want[..], "state {s}");
            assert!(fv.touches_eps(s), "state {s}");
        }
        assert_eq!(b.delta(7), -2.0);
        let s = Booster::Stack(vec![Booster::ArcSet(b.clone()), Booster::ArcSet(b.clone())]);
        assert_eq!(s.delta(9), -4.0);
        assert_eq!(s.delta(8), 0.0);
        assert!(s.touches(1) && !s.touches(3));
        assert!(ArcSetBooster::new(&g, vec![7000], -1.0).is_err());
        assert!(Booster::ArcSet(b.clone()).validate(7000, 1000).is_ok());
        assert!(Booster::ArcSet(b.clone()).validate(12, 1000).is_err());
        assert!(Booster::ArcSet(b).validate(7000, 999).is_err());
        assert!(ArcSetBooster::new(&g, vec![1], f32::NAN).is_err());
    }
}

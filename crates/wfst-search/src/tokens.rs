//! A stream's lattice data — tokens, links, frames, best predecessors — and its partial
//! hypothesis: what the search writes, the lattice prunes and the CUDA backend fills, kept in a
//! leaf module so that none of those imports another for its types.

use ctx_graph::csr::DecodingGraph;

/// "No index".
pub(crate) const NONE: u32 = u32::MAX;

/// The main graph's final cost of search state `s` (+∞ for a context state: a phrase returns
/// to the main graph before the utterance may end).
#[inline]
pub(crate) fn main_final(g: &DecodingGraph, s: u32) -> f32 {
    g.final_cost
        .get(s as usize)
        .copied()
        .unwrap_or(f32::INFINITY)
}

/// A lattice token: the graph state, the word automaton's state (0 without one), its best
/// (forward) cost and its lattice extra cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LTok {
    pub state: u32,
    pub lm: u32,
    pub cost: f32,
    pub extra: f32,
}

/// A lattice link into a token of the frame that stores it. `src` is a token of the previous
/// frame when `arc` is emitting, of the same frame otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Link {
    pub src: u32,
    pub dst: u32,
    pub arc: u32,
    pub graph: f32,
    pub ac: f32,
}

/// One lattice frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct LatFrame {
    pub toks: Vec<LTok>,
    /// Emitting links first (`..num_emitting`, src in the previous frame), then ε links.
    pub links: Vec<Link>,
    pub num_emitting: usize,
    /// Whether lattice pruning has visited this frame.
    pub visited: bool,
}

/// Best predecessor of a frontier token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bp {
    pub src: u32,
    pub arc: u32,
}

/// The best hypothesis so far (after any chunk).
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    /// Word ids.
    pub words: Vec<u32>,
    /// Segment row at which each word starts.
    pub start_rows: Vec<u32>,
    /// Cost of the best frontier token (no final cost).
    pub cost: f32,
}

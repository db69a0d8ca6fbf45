//! One stream's frame-synchronous Viterbi beam search (the CPU reference of docs/design.md §4).
//!
//! Lattice frame k holds the tokens after k score rows of the current segment. One step (one
//! score row) does, in this order — the CUDA backend follows the same rules:
//! 1. **Emitting expansion** of every token of frame k whose cost passes the expand cut (see 4):
//!    `cost' = cost + (weight + boost + word) + (−acoustic_scale × loglik[ilabel − 1])`,
//!    evaluated left to right in f32 (`word` is a word automaton's cost for an arc with an
//!    output label, 0 otherwise). A candidate above `bound` (the best token's cheapest
//!    expansion + beam, an upper bound of the exact cut) is skipped early.
//! 2. **Recombination** per destination state — per (graph state, automaton state) with a word
//!    automaton — the token keeps the minimum cost; ties go to the smaller arc index, so the
//!    result does not depend on the order arcs are visited.
//! 3. **Beam**: with `best` the minimum emitting cost of frame k+1, tokens above
//!    `cutoff = best + beam` are dropped, then the **ε-closure** relaxes non-emitting arcs
//!    (same recombination rule) creating no token above `cutoff`. The closure runs in rounds
//!    (Bellman-Ford, Jacobi style): round 0 relaxes every token with ε arcs, each later round
//!    the tokens created or improved in the previous one, in ascending token order and from
//!    their costs at the start of the round; a new token is numbered by its first relaxation
//!    in that order. A GPU, which relaxes a round in parallel, numbers tokens the same way.
//! 4. **Max-active**: when frame k+1 has more than `max_active` tokens, a histogram of
//!    [`HISTOGRAM_BINS`] bins over `[best_all, cutoff]` picks the first bin at which the running
//!    count exceeds `max_active`; only tokens in lower bins are expanded at the next step
//!    (at least bin 0).
//!
//! Every relaxation that survives the cut is recorded as a lattice link (graph and acoustic
//! costs apart); [`crate::lattice`] prunes the links with the lattice beam and builds the word
//! lattice. Each frontier token also carries its best predecessor, from which a compact word
//! trace (for partial hypotheses) and the trailing-silence count (for endpointing) follow.

use crate::booster::{ArcDelta, Booster, NoDelta};
use crate::config::{DecoderConfig, HISTOGRAM_BINS};
use crate::context::{Active, ArcLabels, LabelRuns, SlotInfo};
use crate::decoder::Decoder;
use crate::error::{DecodeError, Result};
use crate::lattice;
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use std::sync::Arc;

/// "No index".
pub(crate) const NONE: u32 = u32::MAX;

/// Runs `$body` with `$b` bound to the booster as its concrete [`ArcDelta`] type, so the hot
/// loops are compiled once per kind: without a booster no per-arc lookup remains at all.
macro_rules! with_delta {
    ($booster:expr, $g:expr, |$b:ident| $body:expr) => {
        match &$booster {
            Booster::Words(w) => {
                let view = w.view(&$g.olabel);
                let $b = &view;
                $body
            }
            Booster::None => {
                let $b = &NoDelta;
                $body
            }
            Booster::ArcSet(set) => {
                let view = set.view();
                let $b = &view;
                $body
            }
            Booster::Lm(lm) => {
                let $b = lm;
                $body
            }
            Booster::Phrases(p) => {
                let $b = p;
                $body
            }
            other => {
                let $b = other;
                $body
            }
        }
    };
}

/// Graph cost (weight + the booster's `delta`) and acoustic cost of an emitting arc with
/// weight `weight` and input label `ilabel` on score row `row` — the one formula the early
/// bound and the expansion use, and the CUDA kernel must.
#[inline(always)]
fn arc_costs(weight: f32, ilabel: u32, delta: f32, row: &[f32], scale: f32) -> (f32, f32) {
    (weight + delta, -scale * row[ilabel as usize - 1])
}

/// The booster's delta for arc `a` of a token whose state the booster `touched` (−0.0, which
/// adds nothing, for the others: no lookup).
#[inline(always)]
fn delta_of<B: ArcDelta>(booster: &B, touched: bool, a: usize) -> f32 {
    if touched {
        booster.delta(a as u32)
    } else {
        -0.0
    }
}

/// A word automaton's move on arc `a` from automaton state `lm`: the next state and the cost
/// to add to the arc's graph cost (a stateless booster: `(lm, −0.0)`, folded away).
#[inline(always)]
fn word_step<B: ArcDelta>(g: &DecodingGraph, booster: &B, a: usize, lm: u32) -> (u32, f32) {
    if B::STATEFUL {
        let w = g.olabel[a];
        if w != 0 {
            return booster.word(lm, w);
        }
    }
    (lm, -0.0)
}

/// The candidate links `cand` whose destination survived the beam (renumbered by `remap`) and
/// whose cost from their source token in `prev` is within `cutoff`. Not generic over the
/// booster and not inlined: one compiled loop for every booster kind, so that the biased
/// decode's copy cannot come out slower than the unbiased one's (seen: 3 instructions more
/// per link when it was part of each kind's `step_row_with`).
#[inline(never)]
fn surviving_links(cand: &[Link], remap: &[u32], prev: &[LTok], cutoff: f32) -> Vec<Link> {
    let mut links = Vec::with_capacity(cand.len());
    for l in cand {
        let dst = remap[l.dst as usize];
        if dst != NONE && prev[l.src as usize].cost + l.graph + l.ac <= cutoff {
            links.push(Link { dst, ..*l });
        }
    }
    links
}

/// The token of graph state `d` with automaton state `lm` among `toks`, or [`NONE`]: the state
/// map points at one token per graph state, `chain` links the others of the same state.
#[inline(always)]
fn find<B: ArcDelta>(map: &[u32], chain: &[u32], toks: &[LTok], d: usize, lm: u32) -> u32 {
    let mut j = map[d];
    if B::STATEFUL {
        while j != NONE && toks[j as usize].lm != lm {
            j = chain[j as usize];
        }
    }
    j
}

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

/// Per frontier token: its word trace and trailing silence rows.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Aux {
    trace: u32,
    sil: u32,
}

/// A word on a token's best path: the word id, the segment row where it starts, the previous.
#[derive(Debug, Clone, Copy)]
struct Trace {
    word: u32,
    row: u32,
    prev: u32,
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

/// The max-active expand rule of the next step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExpandCut {
    pub best: f32,
    pub width: f32,
    pub bins: u32,
    pub cutoff: f32,
}

impl ExpandCut {
    fn all(cutoff: f32) -> Self {
        Self {
            best: 0.0,
            width: 0.0,
            bins: u32::MAX,
            cutoff,
        }
    }

    #[inline]
    fn keeps(&self, cost: f32) -> bool {
        if self.bins == u32::MAX {
            return cost <= self.cutoff;
        }
        histogram_bin(cost, self.best, self.width) < self.bins
    }
}

/// The histogram bin of `cost` (shared with the CUDA backend).
#[inline]
pub(crate) fn histogram_bin(cost: f32, best: f32, width: f32) -> u32 {
    if width <= 0.0 {
        return 0;
    }
    let b = ((cost - best) / width) as u32;
    b.min(HISTOGRAM_BINS as u32 - 1)
}

/// One decoding stream: its booster, the current segment's lattice and search state.
///
/// Streams are independent, so many can advance in parallel ([`Decoder::advance`]) and the
/// result never depends on how many run together or on the chunk sizes.
#[derive(Debug, Clone)]
pub struct Stream {
    /// Utterance (or channel) id, used in error messages.
    pub id: String,
    booster: Booster,
    pub(crate) frames: Vec<LatFrame>,
    pub(crate) bp: Vec<Bp>,
    aux: Vec<Aux>,
    map: Vec<u32>,
    /// Per token of the frame being built: the next token of the same graph state (stateful
    /// boosters only).
    chain: Vec<u32>,
    pub(crate) expand: ExpandCut,
    traces: Vec<Trace>,
    gc_at: usize,
    /// Rows consumed since the stream began (all segments).
    rows_total: u64,
    /// Row (stream-absolute) where the current segment began.
    seg_start: u64,
    /// Tokens kept over the current segment's frames.
    seg_tokens: u64,
    started: bool,
    /// The ε-closure's current round: (token, its cost when the round began), ascending.
    frontier: Vec<(u32, f32)>,
    /// Tokens created or improved in the current round (the next round's frontier).
    next_frontier: Vec<u32>,
    /// Per token of the frame being built: already in `next_frontier`.
    inq: Vec<bool>,
    cand: Vec<Link>,
    remap: Vec<u32>,
    since_prune: usize,
    /// A step is under way (or failed midway): the state map may hold stale entries.
    dirty: bool,
    /// Which device lane holds this stream's frontier (its `commit` number; 0: none does).
    pub(crate) gpu_epoch: u64,
    /// The open-vocabulary context asked for ([`Self::set_context`]), the largest input label
    /// it reads (checked against each chunk's width) and its label runs.
    context: Option<(Arc<ContextGraph>, u32, Arc<LabelRuns>)>,
    /// The context the current segment decodes with (its states after the main graph's).
    pub(crate) active: Option<Active>,
}

impl Stream {
    /// A fresh stream.
    pub fn new(id: impl Into<String>, booster: Booster) -> Self {
        Self {
            id: id.into(),
            booster,
            frames: Vec::new(),
            bp: Vec::new(),
            aux: Vec::new(),
            map: Vec::new(),
            chain: Vec::new(),
            expand: ExpandCut::all(f32::INFINITY),
            traces: Vec::new(),
            gc_at: 4096,
            rows_total: 0,
            seg_start: 0,
            seg_tokens: 0,
            started: false,
            frontier: Vec::new(),
            next_frontier: Vec::new(),
            inq: Vec::new(),
            cand: Vec::new(),
            remap: Vec::new(),
            since_prune: 0,
            dirty: false,
            gpu_epoch: 0,
            context: None,
            active: None,
        }
    }

    /// Reuses this stream's buffers for a new utterance.
    pub fn reset(&mut self, id: impl Into<String>, booster: Booster) {
        self.id = id.into();
        self.booster = booster;
        self.frames.clear();
        self.bp.clear();
        self.aux.clear();
        self.traces.clear();
        self.gc_at = 4096;
        self.rows_total = 0;
        self.seg_start = 0;
        self.started = false;
        self.gpu_epoch = 0;
        if self.dirty {
            // A failed step left entries behind; start from a clean map.
            self.map.fill(NONE);
            self.dirty = false;
        }
    }

    /// Switches the booster; takes effect from the next row (a context switch at any chunk).
    pub fn set_booster(&mut self, booster: Booster) {
        self.booster = booster;
    }

    /// The current booster.
    pub fn booster(&self) -> &Booster {
        &self.booster
    }

    /// Sets (or, with `None`, removes) the stream's open-vocabulary context: the phrases of
    /// `context` become decodable through the graph's class slot, whether the graph knows their
    /// words or not (docs/design.md §3). Takes effect at the next segment — at once between
    /// segments or utterances — so a segment's tokens never straddle two contexts; the graph
    /// is not touched. Needs a decoder opened with [`Decoder::with_context_slot`]. Setting the
    /// context already held costs nothing (its scans are kept).
    pub fn set_context(&mut self, context: Option<Arc<ContextGraph>>) {
        if let (Some(new), Some((old, ..))) = (&context, &self.context) {
            if Arc::ptr_eq(new, old) {
                return;
            }
        }
        self.context = context.map(|c| {
            let m = c.graph.max_ilabel();
            let runs = Arc::new(LabelRuns::new(&c.graph));
            (c, m, runs)
        });
    }

    /// The context asked for.
    pub fn context(&self) -> Option<&Arc<ContextGraph>> {
        self.context.as_ref().map(|c| &c.0)
    }

    /// The largest input label the context asked for reads (0 without one).
    pub(crate) fn context_max_ilabel(&self) -> u32 {
        self.context.as_ref().map_or(0, |c| c.1)
    }

    /// Rows consumed since the stream began.
    pub fn rows_total(&self) -> u64 {
        self.rows_total
    }

    /// Rows of the current segment.
    pub fn segment_rows(&self) -> u64 {
        self.rows_total - self.seg_start
    }

    /// Tokens kept over the current segment's frames (after the beam, ε-closure included).
    pub fn segment_tokens(&self) -> u64 {
        self.seg_tokens
    }

    /// Stream row where the current segment began.
    pub fn segment_start(&self) -> u64 {
        self.seg_start
    }

    /// Grows the state map to hold every state of `toks` (a frame the CUDA backend computed
    /// may hold context states the host's closure never reached).
    pub(crate) fn fit_map(&mut self, toks: &[LTok]) {
        if let Some(top) = toks.iter().map(|t| t.state as usize).max() {
            if self.map.len() <= top {
                self.map.resize(top + 1, NONE);
            }
        }
    }

    /// Starts a segment at the current row: the start state and its ε-closure.
    pub(crate) fn begin_segment(&mut self, dec: &Decoder<'_>) -> Result<()> {
        let (g, cfg) = (dec.graph(), dec.config());
        // Every entry is NONE between steps; a context's states may have grown the map.
        self.map.truncate(g.num_states());
        self.map.resize(g.num_states(), NONE);
        self.active = match (&self.context, dec.slot()) {
            (None, _) => None,
            (Some((c, _, runs)), Some(slot)) => Some(Active::new(c.clone(), runs.clone(), g, slot)),
            (Some(_), None) => {
                return Err(DecodeError::Config(format!(
                    "utterance {}: the stream has an open-vocabulary context but the decoder \
                     has no class slot (a graph built with the slot, opened with \
                     with_context_slot)",
                    self.id
                )))
            }
        };
        self.dirty = true;
        self.frames.clear();
        self.traces.clear();
        self.gc_at = 4096;
        self.seg_start = self.rows_total;
        self.seg_tokens = 0;
        self.started = true;
        self.since_prune = 0;
        self.gpu_epoch = 0;
        let mut toks = vec![LTok {
            state: g.start,
            lm: self.booster.start(),
            cost: 0.0,
            extra: 0.0,
        }];
        self.map[g.start as usize] = 0;
        self.chain.clear();
        self.chain.push(NONE);
        self.bp.clear();
        self.bp.push(Bp {
            src: NONE,
            arc: NONE,
        });
        let cutoff = cfg.beam;
        let mut links = Vec::new();
        let booster = std::mem::take(&mut self.booster);
        let r = with_delta!(booster, g, |b| self.closure(
            g,
            dec.slot(),
            cfg,
            b,
            &mut toks,
            cutoff,
            &mut links
        ));
        self.booster = booster;
        r?;
        let prev_aux = Vec::new();
        self.finish_frame(dec, toks, links, 0, cutoff, &prev_aux, 0)?;
        self.dirty = false;
        Ok(())
    }

    /// One score row (the loops are compiled per booster kind, see [`ArcDelta`]).
    pub(crate) fn step_row(&mut self, dec: &Decoder<'_>, row: &[f32]) -> Result<()> {
        let booster = std::mem::take(&mut self.booster);
        let r = with_delta!(booster, dec.graph(), |b| self.step_row_with(dec, row, b));
        self.booster = booster;
        r
    }

    // Not inlined into `step_row`: each booster kind's loop compiles as its own function, so
    // that a change to one kind's loop cannot move the others' register allocation (seen:
    // the unbiased decode +1.2% instructions from an edit of the arc-set branch alone).
    #[inline(never)]
    fn step_row_with<B: ArcDelta>(
        &mut self,
        dec: &Decoder<'_>,
        row: &[f32],
        booster: &B,
    ) -> Result<()> {
        let g = dec.graph();
        let cfg = dec.config();
        let k = self.frames.len() - 1;
        let scale = cfg.acoustic_scale;
        let record = cfg.lattice;
        self.dirty = true;
        let mut nt: Vec<LTok> = Vec::new();
        self.bp.clear();
        self.cand.clear();
        self.chain.clear();
        {
            let Stream {
                frames,
                map,
                chain,
                bp,
                cand,
                expand,
                active,
                ..
            } = self;
            let prev = &frames[k].toks;
            // Tokens of states from `n_ctx` on are in the stream's context (none without one).
            let n_ctx = if active.is_some() {
                g.num_states() as u32
            } else {
                u32::MAX
            };
            // Early bound from the best expandable token.
            let mut ub = f32::INFINITY;
            let best = prev
                .iter()
                .enumerate()
                .filter(|(_, t)| expand.keeps(t.cost))
                .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost).then(a.0.cmp(&b.0)));
            if let Some((_, t)) = best {
                if t.state >= n_ctx {
                    let cx = active.as_ref().expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    for a in cg.emitting(cx.split(t.state).1) {
                        let (gc, ac) = arc_costs(cg.weight[a], cg.ilabel[a], -0.0, row, scale);
                        ub = ub.min(t.cost + gc + ac);
                    }
                } else {
                    let touched = booster.touches(t.state);
                    for a in g.emitting(t.state) {
                        let delta = delta_of(booster, touched, a);
                        let (gc, ac) = arc_costs(g.weight[a], g.ilabel[a], delta, row, scale);
                        let (_, wc) = word_step(g, booster, a, t.lm);
                        ub = ub.min(t.cost + (gc + wc) + ac);
                    }
                }
            }
            let bound = ub + cfg.beam;
            // Lower bounds of the booster's costs: an arc that fails the bound even with them
            // is skipped before any lookup or automaton move (exact, `ArcDelta::min_delta`).
            let (min_delta, min_word) = (booster.min_delta(), booster.min_word());
            // The arc arrays as slices of one length, taken once per frame: a row's sub-slices
            // then cost one bound check per row, not three, and stay out of the token loop.
            let weight = g.weight.as_slice();
            let n = weight.len();
            let (ilabel, next) = (&g.ilabel[..n], &g.next[..n]);
            // Relaxes emitting arc `$a` of token `$i` (`$t`), whose graph cost with the
            // booster's delta is `$gc` and acoustic cost `$ac` (both from `arc_costs`), to its
            // destination `$nx` (a macro, not a closure: called from three loops, a closure was
            // not inlined, and the call per arc cost more than the lookup it saves).
            macro_rules! relax {
                ($i:expr, $t:expr, $a:expr, $gc:expr, $ac:expr, $nx:expr) => {{
                    let (i, t, a, gc, ac) = ($i, $t, $a, $gc, $ac);
                    if B::STATEFUL && t.cost + (gc + min_word) + ac > bound {
                        continue;
                    }
                    let (lm, wc) = word_step(g, booster, a, t.lm);
                    relax_to!(i, t, a as u32, gc + wc, ac, $nx as usize, lm)
                }};
            }
            // The relaxation itself, by arc id `$a` (a main arc's index, or a context arc's
            // id), total graph cost `$gc`, destination search state `$d` and automaton state
            // `$lm`.
            macro_rules! relax_to {
                ($i:expr, $t:expr, $a:expr, $gc:expr, $ac:expr, $d:expr, $lm:expr) => {{
                    let (i, t, a, gc, ac, d, lm): (usize, &LTok, u32, f32, f32, usize, u32) =
                        ($i, $t, $a, $gc, $ac, $d, $lm);
                    let c = t.cost + gc + ac;
                    if c > bound {
                        continue;
                    }
                    let j = find::<B>(map, chain, &nt, d, lm);
                    let j = if j == NONE {
                        let j = nt.len() as u32;
                        if B::STATEFUL {
                            chain.push(map[d]);
                        }
                        map[d] = j;
                        nt.push(LTok {
                            state: d as u32,
                            lm,
                            cost: c,
                            extra: 0.0,
                        });
                        bp.push(Bp {
                            src: i as u32,
                            arc: a,
                        });
                        j
                    } else {
                        let tok = &mut nt[j as usize];
                        let b = &mut bp[j as usize];
                        if c < tok.cost || (c == tok.cost && a < b.arc) {
                            tok.cost = c;
                            *b = Bp {
                                src: i as u32,
                                arc: a,
                            };
                        }
                        j
                    };
                    if record {
                        cand.push(Link {
                            src: i as u32,
                            dst: j,
                            arc: a,
                            graph: gc,
                            ac,
                        });
                    }
                }};
            }
            let mut in_ctx = false;
            for (i, t) in prev.iter().enumerate() {
                if !expand.keeps(t.cost) {
                    continue;
                }
                if t.state >= n_ctx {
                    in_ctx = true;
                    continue;
                }
                let arcs = g.emitting(t.state);
                let (lo, hi) = (arcs.start, arcs.end);
                // Two loops, so that a token the booster does not touch (most of them) runs
                // the loop without any lookup.
                if booster.touches(t.state) {
                    if B::ROW_BITS && hi - lo <= 64 {
                        // The row's bits read once; each arc takes its delta from a two-entry
                        // table indexed by its bit (one shift and one load per arc, no branch:
                        // a walk from one boosted arc to the next cost fewer instructions but
                        // more branch misses, and more time). Bits past the row go unread.
                        let mut bits = booster.row_bits(lo as u32);
                        let deltas = [-0.0, booster.discount()];
                        let row_arcs = weight[lo..hi]
                            .iter()
                            .zip(&ilabel[lo..hi])
                            .zip(&next[lo..hi]);
                        for (k, ((&w, &il), &nx)) in row_arcs.enumerate() {
                            let delta = deltas[(bits & 1) as usize];
                            bits >>= 1;
                            let (gc, ac) = arc_costs(w, il, delta, row, scale);
                            relax!(i, t, lo + k, gc, ac, nx);
                        }
                    } else {
                        for a in arcs {
                            let (low, ac) = arc_costs(weight[a], ilabel[a], min_delta, row, scale);
                            if t.cost + (low + min_word) + ac > bound {
                                continue;
                            }
                            let delta = booster.delta(a as u32);
                            let (gc, ac) = arc_costs(weight[a], ilabel[a], delta, row, scale);
                            relax!(i, t, a, gc, ac, next[a]);
                        }
                    }
                } else {
                    // Weight, input label and destination from sub-slices zipped together:
                    // no bound check per arc.
                    let row_arcs = weight[lo..hi]
                        .iter()
                        .zip(&ilabel[lo..hi])
                        .zip(&next[lo..hi]);
                    for (k, ((&w, &il), &nx)) in row_arcs.enumerate() {
                        let (gc, ac) = arc_costs(w, il, -0.0, row, scale);
                        relax!(i, t, lo + k, gc, ac, nx);
                    }
                }
            }
            // The context's tokens after the main graph's, in ascending order: their arcs lead
            // to context states only, so the two never recombine with each other. A context
            // arc has no booster delta and moves no word automaton (its words are the list's).
            if in_ctx {
                let cx = active.as_ref().expect("a context token has a context");
                let cg = &cx.graph.graph;
                for (i, t) in prev.iter().enumerate() {
                    if t.state < n_ctx || !expand.keeps(t.cost) {
                        continue;
                    }
                    let (ri, c) = cx.split(t.state);
                    // By label runs: a run whose cheapest arc fails the bound is skipped whole
                    // (exact: every arc of it would fail), then each arc as the main graph's.
                    let mut a = cg.e_offsets[c as usize] as usize;
                    for r in cx.runs.of(c) {
                        let end = cx.runs.end[r] as usize;
                        let ac = -scale * row[cg.ilabel[a] as usize - 1];
                        if t.cost + cx.runs.min_w[r] + ac > bound {
                            a = end;
                            continue;
                        }
                        for a in a..end {
                            let (gc, ac) = arc_costs(cg.weight[a], cg.ilabel[a], -0.0, row, scale);
                            let d = cx.state(ri, cg.next[a]) as usize;
                            relax_to!(i, t, cx.a_main + a as u32, gc, ac, d, t.lm);
                        }
                        a = end;
                    }
                }
            }
        }
        if nt.is_empty() {
            return Err(DecodeError::NoSurvivors {
                utt: self.id.clone(),
                frame: (self.rows_total + 1) as usize,
            });
        }
        let cutoff = self.beam_prune(&mut nt, cfg.beam, B::STATEFUL);
        let mut links = if cfg.lattice {
            surviving_links(&self.cand, &self.remap, &self.frames[k].toks, cutoff)
        } else {
            Vec::new()
        };
        let num_emitting = links.len();
        let mut toks = nt;
        self.closure(g, dec.slot(), cfg, booster, &mut toks, cutoff, &mut links)?;
        self.gpu_epoch = 0;
        self.commit_frame(dec, toks, links, num_emitting, cutoff)
    }

    /// Appends the frame one score row made (its tokens, whose back-pointers are in `self.bp`,
    /// its links and beam cutoff): word traces, silence counts, the next expand cut, lattice
    /// pruning. Shared by the CPU step and the CUDA backend, which computes the same frame on
    /// the device. Fails when the frame's back-pointers go round a cycle (a zero-cost ε cycle).
    pub(crate) fn commit_frame(
        &mut self,
        dec: &Decoder<'_>,
        toks: Vec<LTok>,
        links: Vec<Link>,
        num_emitting: usize,
        cutoff: f32,
    ) -> Result<()> {
        let cfg = dec.config();
        let k = self.frames.len() - 1;
        self.seg_tokens += toks.len() as u64;
        let prev_aux = std::mem::take(&mut self.aux);
        self.rows_total += 1;
        self.finish_frame(
            dec,
            toks,
            links,
            num_emitting,
            cutoff,
            &prev_aux,
            (k + 1) as u32,
        )?;
        // Without a lattice only the frontier frame is kept.
        if !cfg.lattice && self.frames.len() > 1 {
            self.frames.drain(..self.frames.len() - 1);
        }
        self.since_prune += 1;
        if cfg.lattice && self.since_prune == cfg.prune_interval {
            self.since_prune = 0;
            lattice::prune(&mut self.frames, cfg.lattice_beam, None);
        }
        if self.traces.len() > self.gc_at {
            self.gc_traces();
        }
        self.dirty = false;
        Ok(())
    }

    /// The beam after an emitting expansion: drops the tokens of `nt` above `best + beam`,
    /// renumbers the rest in place (their back-pointers too, and `remap` from old to new
    /// numbers) and points the state map at them (`stateful`: with a word automaton, chains
    /// per graph state); returns the cut. Not generic and not inlined, like
    /// [`surviving_links`]: one compiled loop for every booster kind.
    #[inline(never)]
    fn beam_prune(&mut self, nt: &mut Vec<LTok>, beam: f32, stateful: bool) -> f32 {
        let best = nt.iter().map(|t| t.cost).fold(f32::INFINITY, f32::min);
        let cutoff = best + beam;
        // Beam: drop tokens above the cut, renumber in place.
        self.remap.clear();
        let mut w = 0;
        for j in 0..nt.len() {
            let t = nt[j];
            if t.cost <= cutoff {
                self.remap.push(w as u32);
                if !stateful {
                    self.map[t.state as usize] = w as u32;
                }
                nt[w] = t;
                self.bp[w] = self.bp[j];
                w += 1;
            } else {
                self.remap.push(NONE);
                self.map[t.state as usize] = NONE;
            }
        }
        nt.truncate(w);
        self.bp.truncate(w);
        if stateful {
            // Rebuild the map and its chains over the survivors.
            for t in nt.iter() {
                self.map[t.state as usize] = NONE;
            }
            self.chain.clear();
            for (j, t) in nt.iter().enumerate() {
                self.chain.push(self.map[t.state as usize]);
                self.map[t.state as usize] = j as u32;
            }
        }
        cutoff
    }

    /// ε-closure of the frontier tokens `toks` under `cutoff`; appends the ε links. With a
    /// context, a slot arc enters it and a final context state leaves it (module
    /// [`crate::context`]); with a slot but no context, slot arcs are not followed.
    #[allow(clippy::too_many_arguments)]
    fn closure<B: ArcDelta>(
        &mut self,
        g: &DecodingGraph,
        slot: Option<&SlotInfo>,
        cfg: &DecoderConfig,
        booster: &B,
        toks: &mut Vec<LTok>,
        cutoff: f32,
        links: &mut Vec<Link>,
    ) -> Result<()> {
        let Stream {
            map,
            chain,
            bp,
            frontier,
            next_frontier: flagged,
            inq,
            active,
            ..
        } = self;
        let cx = active.as_ref();
        let n_main = g.num_states() as u32;
        // Only tokens of states with ε arcs enter a frontier (most states have none: no
        // relaxation or booster question for them). A context state has them when it has ε
        // arcs or completes a phrase (the exit step).
        let has_eps = |s: u32| {
            if s < n_main {
                !g.non_emitting(s).is_empty()
            } else {
                let cx = cx.expect("a context token has a context");
                let c = cx.split(s).1;
                let cg = &cx.graph.graph;
                !cg.non_emitting(c).is_empty() || cg.final_cost[c as usize].is_finite()
            }
        };
        let has_slot = |s: u32| slot.is_some_and(|sl| s < n_main && sl.has_slot(s));
        // As in the expansion: an ε arc that fails the cut even at the booster's least costs
        // is skipped before its delta is looked up or the automaton moves.
        let (min_delta, min_word) = (booster.min_delta(), booster.min_word());
        // Round 0: every token with ε arcs, ascending, with its cost.
        frontier.clear();
        frontier.extend(
            toks.iter()
                .enumerate()
                .filter(|(_, t)| has_eps(t.state))
                .map(|(j, t)| (j as u32, t.cost)),
        );
        inq.clear();
        inq.resize(toks.len(), false);
        let mut pops = 0usize;
        while !frontier.is_empty() {
            pops += frontier.len();
            if pops > 64 * toks.len() + 100_000 {
                return Err(DecodeError::EpsilonCycle {
                    utt: self.id.clone(),
                    frame: self.frames.len(),
                });
            }
            flagged.clear();
            for &(u, cost) in frontier.iter() {
                let LTok { state, lm, .. } = toks[u as usize];
                // Relaxes the ε step `$a` (an arc id) of graph cost `$gc` to search state `$d`
                // with automaton state `$lm`. `cost` is the source's cost at the start of the
                // round, not its current one.
                macro_rules! relax_eps_to {
                    ($a:expr, $gc:expr, $d:expr, $lm:expr) => {{
                        let (a, gc, d, lm): (u32, f32, usize, u32) = ($a, $gc, $d, $lm);
                        let c = cost + gc;
                        if c > cutoff {
                            continue;
                        }
                        let j = find::<B>(map, chain, toks, d, lm);
                        if j == NONE {
                            let j = toks.len() as u32;
                            if B::STATEFUL {
                                chain.push(map[d]);
                            }
                            map[d] = j;
                            toks.push(LTok {
                                state: d as u32,
                                lm,
                                cost: c,
                                extra: 0.0,
                            });
                            bp.push(Bp { src: u, arc: a });
                            let eps = has_eps(d as u32);
                            inq.push(eps);
                            if eps {
                                flagged.push(j);
                            }
                        } else {
                            let tok = &mut toks[j as usize];
                            let b = &mut bp[j as usize];
                            if c < tok.cost {
                                tok.cost = c;
                                *b = Bp { src: u, arc: a };
                                if !inq[j as usize] && has_eps(d as u32) {
                                    inq[j as usize] = true;
                                    flagged.push(j);
                                }
                            } else if c == tok.cost && a < b.arc {
                                *b = Bp { src: u, arc: a };
                            }
                        }
                    }};
                }
                // Relaxes main ε arc `$a` with the booster's `$delta` (two loops, as in the
                // expansion: a token of an unmarked state asks nothing per arc).
                macro_rules! relax_eps {
                    ($a:expr, $delta:expr) => {{
                        let a = $a;
                        if cost + ((g.weight[a] + min_delta) + min_word) > cutoff {
                            continue;
                        }
                        let (lm, wc) = word_step(g, booster, a, lm);
                        let gc = g.weight[a] + $delta + wc;
                        relax_eps_to!(a as u32, gc, g.next[a] as usize, lm)
                    }};
                }
                if state >= n_main {
                    // Inside the context: its ε arcs, then the exit of a completed phrase.
                    let cx = cx.expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    let (ri, c) = cx.split(state);
                    for a in cg.non_emitting(c) {
                        let d = cx.state(ri, cg.next[a]) as usize;
                        relax_eps_to!(cx.a_main + a as u32, cg.weight[a], d, lm);
                    }
                    let fc = cg.final_cost[c as usize];
                    if fc.is_finite() {
                        let r = slot.expect("a context has a slot").returns[ri as usize];
                        // (Last step of this token: a cut `continue`s to the next.)
                        relax_eps_to!(cx.exit_arc(c), fc, r as usize, lm);
                    }
                    continue;
                }
                let arcs = g.non_emitting(state);
                if has_slot(state) {
                    // Slot arcs enter the context at the arc's (entry) cost, returning to the
                    // arc's destination; without a context they are not followed.
                    let sl = slot.expect("checked");
                    let touched = booster.touches_eps(state);
                    for a in arcs {
                        if g.olabel[a] != sl.word {
                            relax_eps!(a, delta_of(booster, touched, a));
                        } else if let Some(cx) = cx.filter(|_| sl.is_entry(a)) {
                            let ri = sl.return_index(g.next[a]);
                            if map.len() < cx.map_len(ri) {
                                map.resize(cx.map_len(ri), NONE);
                            }
                            let d = cx.state(ri, cx.graph.graph.start) as usize;
                            relax_eps_to!(a as u32, g.weight[a], d, lm);
                        }
                    }
                } else if booster.touches_eps(state) {
                    for a in arcs {
                        relax_eps!(a, booster.delta(a as u32));
                    }
                } else {
                    for a in arcs {
                        relax_eps!(a, -0.0);
                    }
                }
            }
            // The next round: the tokens created or improved in this one, ascending, with
            // their costs at the end of this round.
            flagged.sort_unstable();
            frontier.clear();
            for &j in flagged.iter() {
                inq[j as usize] = false;
                frontier.push((j, toks[j as usize].cost));
            }
        }
        if cfg.lattice {
            for (u, t) in toks.iter().enumerate() {
                // Records the ε step `$a` of graph cost `$gc` to search state `$d` (its token
                // exists: the rounds relaxed every step within the cut).
                macro_rules! link_to {
                    ($a:expr, $gc:expr, $d:expr, $lm:expr) => {{
                        let (a, gc, d, lm): (u32, f32, usize, u32) = ($a, $gc, $d, $lm);
                        if t.cost + gc > cutoff {
                            continue;
                        }
                        let dst = find::<B>(map, chain, toks, d, lm);
                        debug_assert_ne!(dst, NONE);
                        links.push(Link {
                            src: u as u32,
                            dst,
                            arc: a,
                            graph: gc,
                            ac: 0.0,
                        });
                    }};
                }
                macro_rules! link_eps {
                    ($a:expr, $delta:expr) => {{
                        let a = $a;
                        if t.cost + ((g.weight[a] + min_delta) + min_word) > cutoff {
                            continue;
                        }
                        let (lm, wc) = word_step(g, booster, a, t.lm);
                        let gc = g.weight[a] + $delta + wc;
                        link_to!(a as u32, gc, g.next[a] as usize, lm)
                    }};
                }
                if t.state >= n_main {
                    let cx = cx.expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    let (ri, c) = cx.split(t.state);
                    for a in cg.non_emitting(c) {
                        let d = cx.state(ri, cg.next[a]) as usize;
                        link_to!(cx.a_main + a as u32, cg.weight[a], d, t.lm);
                    }
                    let fc = cg.final_cost[c as usize];
                    if fc.is_finite() {
                        let r = slot.expect("a context has a slot").returns[ri as usize];
                        // (Last step of this token: a cut `continue`s to the next.)
                        link_to!(cx.exit_arc(c), fc, r as usize, t.lm);
                    }
                    continue;
                }
                let arcs = g.non_emitting(t.state);
                if arcs.is_empty() {
                    continue;
                }
                if has_slot(t.state) {
                    let sl = slot.expect("checked");
                    let touched = booster.touches_eps(t.state);
                    for a in arcs {
                        if g.olabel[a] != sl.word {
                            link_eps!(a, delta_of(booster, touched, a));
                        } else if let Some(cx) = cx.filter(|_| sl.is_entry(a)) {
                            let ri = sl.return_index(g.next[a]);
                            let d = cx.state(ri, cx.graph.graph.start) as usize;
                            link_to!(a as u32, g.weight[a], d, t.lm);
                        }
                    }
                } else if booster.touches_eps(t.state) {
                    for a in arcs {
                        link_eps!(a, booster.delta(a as u32));
                    }
                } else {
                    for a in arcs {
                        link_eps!(a, -0.0);
                    }
                }
            }
        }
        Ok(())
    }

    /// Stores frame `frame` (its tokens and links), computes the frontier's word traces and
    /// silence counts from the best predecessors, sets the next expand cut, clears the state map.
    /// A zero-cost ε cycle can leave back-pointers going round it (a tie moves a token's
    /// back-pointer to a token that leads back to it): that is an error, not an endless walk.
    #[allow(clippy::too_many_arguments)]
    fn finish_frame(
        &mut self,
        dec: &Decoder<'_>,
        toks: Vec<LTok>,
        links: Vec<Link>,
        num_emitting: usize,
        cutoff: f32,
        prev_aux: &[Aux],
        frame: u32,
    ) -> Result<()> {
        let (g, cfg) = (dec.graph(), dec.config());
        let n = toks.len();
        let labels = ArcLabels {
            g,
            ctx: self.active.as_ref(),
            slot: dec.slot().map_or(u32::MAX, |s| s.word),
        };
        let mut aux = vec![
            Aux {
                trace: NONE,
                sil: u32::MAX
            };
            n
        ];
        let mut stack: Vec<u32> = Vec::new();
        // A token's `sil` is u32::MAX until computed, ON_STACK while the walk's stack holds it:
        // meeting such a token again is a back-pointer cycle.
        const ON_STACK: u32 = u32::MAX - 1;
        for j in 0..n {
            if aux[j].sil != u32::MAX {
                continue;
            }
            stack.push(j as u32);
            aux[j].sil = ON_STACK;
            while let Some(&u) = stack.last() {
                let b = self.bp[u as usize];
                let src = if b.arc == NONE {
                    Some(Aux {
                        trace: NONE,
                        sil: 0,
                    })
                } else if labels.is_emitting(b.arc) {
                    Some(prev_aux[b.src as usize])
                } else if aux[b.src as usize].sil < ON_STACK {
                    Some(aux[b.src as usize])
                } else {
                    None
                };
                match src {
                    None if aux[b.src as usize].sil == ON_STACK => {
                        for t in &toks {
                            self.map[t.state as usize] = NONE;
                        }
                        return Err(DecodeError::EpsilonCycle {
                            utt: self.id.clone(),
                            frame: frame as usize,
                        });
                    }
                    None => {
                        aux[b.src as usize].sil = ON_STACK;
                        stack.push(b.src);
                    }
                    Some(s) => {
                        stack.pop();
                        aux[u as usize] = if b.arc == NONE {
                            s
                        } else {
                            let emitting = labels.is_emitting(b.arc);
                            let word = labels.olabel(b.arc);
                            let trace = if word != 0 {
                                let row = if emitting { frame - 1 } else { frame };
                                self.traces.push(Trace {
                                    word,
                                    row,
                                    prev: s.trace,
                                });
                                (self.traces.len() - 1) as u32
                            } else {
                                s.trace
                            };
                            let sil = if emitting {
                                if dec.is_silence(labels.ilabel(b.arc)) {
                                    s.sil + 1
                                } else {
                                    0
                                }
                            } else {
                                s.sil
                            };
                            Aux { trace, sil }
                        };
                    }
                }
            }
        }
        self.aux = aux;
        // Max-active cut for the next step.
        self.expand = if n > cfg.max_active {
            let best = toks.iter().map(|t| t.cost).fold(f32::INFINITY, f32::min);
            let width = (cutoff - best) / HISTOGRAM_BINS as f32;
            let mut hist = [0usize; HISTOGRAM_BINS];
            for t in &toks {
                hist[histogram_bin(t.cost, best, width) as usize] += 1;
            }
            let mut cum = 0;
            let mut bins = HISTOGRAM_BINS as u32;
            for (b, &c) in hist.iter().enumerate() {
                cum += c;
                if cum > cfg.max_active {
                    bins = (b as u32).max(1);
                    break;
                }
            }
            ExpandCut {
                best,
                width,
                bins,
                cutoff,
            }
        } else {
            ExpandCut::all(cutoff)
        };
        for t in &toks {
            self.map[t.state as usize] = NONE;
        }
        self.frames.push(LatFrame {
            toks,
            links,
            num_emitting,
            visited: false,
        });
        Ok(())
    }

    /// Drops word traces no frontier token reaches.
    fn gc_traces(&mut self) {
        let mut keep = vec![false; self.traces.len()];
        for a in &self.aux {
            let mut t = a.trace;
            while t != NONE && !keep[t as usize] {
                keep[t as usize] = true;
                t = self.traces[t as usize].prev;
            }
        }
        let mut new_index = vec![NONE; self.traces.len()];
        let mut out = Vec::new();
        for (i, tr) in self.traces.iter().enumerate() {
            if keep[i] {
                new_index[i] = out.len() as u32;
                let prev = if tr.prev == NONE {
                    NONE
                } else {
                    new_index[tr.prev as usize]
                };
                out.push(Trace { prev, ..*tr });
            }
        }
        for a in &mut self.aux {
            if a.trace != NONE {
                a.trace = new_index[a.trace as usize];
            }
        }
        self.traces = out;
        self.gc_at = (2 * self.traces.len()).max(4096);
    }

    /// Index of the cheapest frontier token (ties: the smaller index).
    fn best_token(&self) -> Option<usize> {
        let toks = &self.frames.last()?.toks;
        toks.iter()
            .enumerate()
            .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost).then(a.0.cmp(&b.0)))
            .map(|(i, _)| i)
    }

    fn trace_words(&self, mut t: u32) -> (Vec<u32>, Vec<u32>) {
        let mut words = Vec::new();
        let mut rows = Vec::new();
        while t != NONE {
            let tr = self.traces[t as usize];
            words.push(tr.word);
            rows.push(tr.row);
            t = tr.prev;
        }
        words.reverse();
        rows.reverse();
        (words, rows)
    }

    /// The best hypothesis of the current segment so far (no final costs).
    pub fn partial(&self) -> Partial {
        match self.best_token() {
            None => Partial {
                words: Vec::new(),
                start_rows: Vec::new(),
                cost: f32::INFINITY,
            },
            Some(i) => {
                let (words, start_rows) = self.trace_words(self.aux[i].trace);
                Partial {
                    words,
                    start_rows,
                    cost: self.frames.last().unwrap().toks[i].cost,
                }
            }
        }
    }

    /// The best complete hypothesis of the segment: the frontier token minimising cost + final
    /// cost (all tokens count as final at cost 0 when none reaches a final state), and whether
    /// a final state was reached.
    pub fn best_final(&self, g: &DecodingGraph) -> Option<(Partial, bool)> {
        let toks = &self.frames.last()?.toks;
        let fin = |t: &LTok| main_final(g, t.state) + self.booster.final_cost(t.lm);
        let any_final = toks.iter().any(|t| fin(t).is_finite());
        let total = |t: &LTok| {
            if any_final {
                t.cost + fin(t)
            } else {
                t.cost
            }
        };
        let (i, t) = toks
            .iter()
            .enumerate()
            .min_by(|a, b| total(a.1).total_cmp(&total(b.1)).then(a.0.cmp(&b.0)))?;
        let (words, start_rows) = self.trace_words(self.aux[i].trace);
        Some((
            Partial {
                words,
                start_rows,
                cost: total(t),
            },
            any_final,
        ))
    }

    /// The graph state of the best frontier token.
    pub(crate) fn best_state(&self) -> Option<u32> {
        let i = self.best_token()?;
        self.frames.last().map(|f| f.toks[i].state)
    }

    /// The fewest trailing silence rows among the frontier tokens within `margin` of the best
    /// cost: on CTC output a path that read a word's first spike as blank can be best for a few
    /// frames while a close competitor carries the word; its silence is not yet certain.
    pub(crate) fn trailing_within(&self, margin: f32) -> u32 {
        let Some(f) = self.frames.last() else {
            return 0;
        };
        let best = f.toks.iter().map(|t| t.cost).fold(f32::INFINITY, f32::min);
        f.toks
            .iter()
            .zip(&self.aux)
            .filter(|(t, _)| t.cost <= best + margin)
            .map(|(_, a)| a.sil)
            .min()
            .unwrap_or(0)
    }

    /// Trailing silence rows of the best frontier token's path and whether it has a word.
    pub fn trailing_facts(&self) -> (u32, bool) {
        match self.best_token() {
            None => (0, false),
            Some(i) => (self.aux[i].sil, self.aux[i].trace != NONE),
        }
    }

    /// Best cost with final costs minus best cost without (+∞ when no final state is active).
    pub fn relative_final_cost(&self, g: &DecodingGraph) -> f32 {
        let Some(f) = self.frames.last() else {
            return f32::INFINITY;
        };
        let best = f.toks.iter().map(|t| t.cost).fold(f32::INFINITY, f32::min);
        let best_final = f
            .toks
            .iter()
            .map(|t| t.cost + main_final(g, t.state) + self.booster.final_cost(t.lm))
            .fold(f32::INFINITY, f32::min);
        best_final - best
    }

    /// The arc labels of the current segment (main graph and context).
    pub(crate) fn labels<'a>(&'a self, dec: &Decoder<'a>) -> ArcLabels<'a> {
        ArcLabels {
            g: dec.graph(),
            ctx: self.active.as_ref(),
            slot: dec.slot().map_or(u32::MAX, |s| s.word),
        }
    }

    /// Marks the segment finished: the next row starts a new segment at the start state.
    pub(crate) fn end_segment(&mut self) {
        self.started = false;
        self.frames.clear();
        self.aux.clear();
        self.bp.clear();
        self.traces.clear();
    }

    /// Whether the stream has begun a segment that has not been finished.
    pub fn in_segment(&self) -> bool {
        self.started
    }

    /// Number of tokens and links held in the current lattice (memory diagnostics).
    pub fn lattice_size(&self) -> (usize, usize) {
        self.frames
            .iter()
            .fold((0, 0), |(t, l), f| (t + f.toks.len(), l + f.links.len()))
    }
}

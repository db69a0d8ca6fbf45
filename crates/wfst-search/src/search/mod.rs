//! One stream's frame-synchronous Viterbi beam search (the CPU reference of docs/design.md §4).
//!
//! Lattice frame k holds the tokens after k score rows of the current segment. One step (one
//! score row) does, in this order — the CUDA backend follows the same rules:
//! 1. **Emitting expansion** of every token of frame k whose cost passes the expand cut (see 4):
//!    `cost' = cost + (weight + boost + word) + (−acoustic_scale × loglik[ilabel − 1])`,
//!    evaluated left to right in f32 (`word` is a word automaton's cost for an arc with an
//!    output label, 0 otherwise). A candidate above `bound` (the best token's cheapest
//!    expansion + beam, an upper bound of the exact cut) is skipped early. With a word
//!    automaton, the tokens of one graph state of many arcs (several automaton states) are expanded
//!    together where the first of them comes, arc by arc, sharing that early test.
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
use crate::error::{DecodeError, Result};
use crate::lattice;
use crate::space::SearchSpace;
use crate::tokens::{main_final, Bp, LTok, LatFrame, Link, Partial, NONE};
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use std::sync::Arc;

mod closure;
mod expand;

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
/// Streams are independent, so many can advance in parallel ([`crate::Decoder::advance`]) and the
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
    /// is not touched. Needs a decoder opened with [`crate::Decoder::with_context_slot`]. Setting the
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
    pub(crate) fn begin_segment(&mut self, dec: &SearchSpace<'_>) -> Result<()> {
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
    pub(crate) fn step_row(&mut self, dec: &SearchSpace<'_>, row: &[f32]) -> Result<()> {
        let booster = std::mem::take(&mut self.booster);
        let r = with_delta!(booster, dec.graph(), |b| self.step_row_with(dec, row, b));
        self.booster = booster;
        r
    }

    // Not inlined into `step_row`: each booster kind's loop compiles as its own function, so
    // that a change to one kind's loop cannot move the others' register allocation (seen:
    // the unbiased decode +1.2% instructions from an edit of the arc-set branch alone).
    /// Appends the frame one score row made (its tokens, whose back-pointers are in `self.bp`,
    /// its links and beam cutoff): word traces, silence counts, the next expand cut, lattice
    /// pruning. Shared by the CPU step and the CUDA backend, which computes the same frame on
    /// the device. Fails when the frame's back-pointers go round a cycle (a zero-cost ε cycle).
    pub(crate) fn commit_frame(
        &mut self,
        dec: &SearchSpace<'_>,
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

    /// Stores frame `frame` (its tokens and links), computes the frontier's word traces and
    /// silence counts from the best predecessors, sets the next expand cut, clears the state map.
    /// A zero-cost ε cycle can leave back-pointers going round it (a tie moves a token's
    /// back-pointer to a token that leads back to it): that is an error, not an endless walk.
    #[allow(clippy::too_many_arguments)]
    fn finish_frame(
        &mut self,
        dec: &SearchSpace<'_>,
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
    pub(crate) fn labels<'a>(&'a self, dec: &SearchSpace<'a>) -> ArcLabels<'a> {
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

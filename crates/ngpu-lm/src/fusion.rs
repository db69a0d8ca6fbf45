//! Greedy decoding with NGPU-LM shallow fusion for every end-to-end model type (004 §2.3).
//!
//! Columns: 0 is blank (CTC, transducer) or end of sequence (AED); column `c ≥ 1` is output
//! label `c`, scored by LM label `c − 1` (the LM is built over the model's pieces in id order).
//!
//! - **CTC**: per frame the acoustic argmax decides between three groups: blank, the repeated
//!   (previous) label — both kept, neither scored by the LM, since CTC collapses them — and
//!   "other" labels, among which the label is then chosen by `log p + α·LM` (the previous label
//!   and blank excluded).
//! - **Transducer (RNN-T, TDT)**, two-stage: the blank decision first, on the joint alone; when
//!   it is not blank, the label is the argmax of `log p + α·LM` over the labels. A TDT's duration
//!   comes from its duration head either way.
//! - **AED**: every step `log p(c) + α·LM(c) + β` over the labels and `log p(eos) + α·final` for
//!   end of sequence (the final weight precomputed along back-offs).
//!
//! The insertion bonus β enters where a label competes with something the LM does not score as a
//! label (AED's end of sequence, and beam search); in the two-stage greedy rules every
//! candidate is a label, so a bonus would add the same to all and is not applied.
//!
//! Hypotheses advance in lockstep batches (the GPU shape of 004): each step computes the model
//! output of every active row, then one batched LM query for the rows whose label the LM decides
//! ([`LmQuery::Full`]: the full-vocabulary [`NgramLm::advance`], as 004 does), or per row only the
//! labels that can still win ([`LmQuery::Pruned`]: a label whose acoustic score plus α times the
//! LM's [`NgramLm::score_upper_bound`] falls below the acoustic best's fused score cannot win;
//! the same choice, fewer lookups). Batches run in parallel (rayon). Ties go to the smaller
//! column. With α = 0 the fused choice is the acoustic one, so the output equals plain greedy.
//!
//! With [`Fusion::device`] the full query of each step runs on a device ([`DeviceLm`]), with
//! [`Fusion::device_contexts`] the context trees' too (one rooted query over a [`Forest`] of the
//! decode's trees); scores come back and the choice is made on the host, so the hypotheses are
//! the CPU's bit for bit.

use crate::arrays::NgramLm;
use crate::cuda::DeviceLm;
use crate::error::{NgpuError, Result};
use crate::forest::Forest;
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// How the LM scores the candidate labels of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LmQuery {
    /// One full-vocabulary query per row (004's batched query).
    #[default]
    Full,
    /// Only the labels that can still win (exact; see the module doc).
    Pruned,
}

impl LmQuery {
    /// `full` or `pruned`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Self::Full),
            "pruned" => Some(Self::Pruned),
            _ => None,
        }
    }
}

/// Context boosting trees ([`crate::boost`]) of a decode: none, one for every utterance, one
/// per utterance (each utterance its own list, in one batch), or a shared tree plus one per
/// utterance, their scores summed (003's unified trie: the word-level LM's n-grams shared, each
/// utterance's keywords its own; with end bonuses only and strict matching the sum equals one
/// trie holding both). A tree's scores are bonuses and take-backs added as they are (their
/// weight is in the tree's scores).
#[derive(Debug, Clone, Copy, Default)]
pub enum Contexts<'a> {
    /// No context boosting.
    #[default]
    None,
    /// One tree for every utterance.
    Shared(&'a NgramLm),
    /// Tree `i` for utterance `i` (utterances with the same list may share one tree).
    PerUtterance(&'a [&'a NgramLm]),
    /// A tree for every utterance plus tree `i` for utterance `i`.
    SharedAndPerUtterance(&'a NgramLm, &'a [&'a NgramLm]),
}

impl<'a> Contexts<'a> {
    /// The contexts of utterances `range` only, renumbered from 0: what a decode of that slice
    /// of the utterances takes (a per-utterance list shorter than the range is cut where it
    /// ends, and then refused by the decode's check).
    ///
    /// ```
    /// use ngpu_lm::fusion::Contexts;
    /// assert!(matches!(Contexts::None.slice(3..5), Contexts::None));
    /// ```
    pub fn slice(&self, range: std::ops::Range<usize>) -> Contexts<'a> {
        let cut = |ts: &'a [&'a NgramLm]| {
            let end = range.end.min(ts.len());
            &ts[range.start.min(end)..end]
        };
        match *self {
            Contexts::None => Contexts::None,
            Contexts::Shared(t) => Contexts::Shared(t),
            Contexts::PerUtterance(ts) => Contexts::PerUtterance(cut(ts)),
            Contexts::SharedAndPerUtterance(t, ts) => Contexts::SharedAndPerUtterance(t, cut(ts)),
        }
    }

    /// The trees of utterance `i`.
    pub fn get(&self, i: usize) -> UttContext<'a> {
        match *self {
            Contexts::None => UttContext::default(),
            Contexts::Shared(t) => UttContext {
                shared: Some(t),
                own: None,
            },
            Contexts::PerUtterance(ts) => UttContext {
                shared: None,
                own: ts.get(i).copied(),
            },
            Contexts::SharedAndPerUtterance(t, ts) => UttContext {
                shared: Some(t),
                own: ts.get(i).copied(),
            },
        }
    }

    /// Checks the trees against `utts` utterances of a model with `width` columns.
    pub(crate) fn check(&self, utts: usize, width: usize) -> Result<()> {
        let (shared, own): (Option<&NgramLm>, &[&NgramLm]) = match *self {
            Contexts::None => return Ok(()),
            Contexts::Shared(t) => (Some(t), &[]),
            Contexts::PerUtterance(ts) => (None, ts),
            Contexts::SharedAndPerUtterance(t, ts) => (Some(t), ts),
        };
        if matches!(
            self,
            Contexts::PerUtterance(_) | Contexts::SharedAndPerUtterance(..)
        ) && own.len() != utts
        {
            return Err(NgpuError::Invalid(format!(
                "{} context trees for {utts} utterances",
                own.len()
            )));
        }
        if let Some(t) = shared
            .into_iter()
            .chain(own.iter().copied())
            .find(|t| t.vocab_size() + 1 != width)
        {
            return Err(NgpuError::VocabMismatch {
                count: t.vocab_size().abs_diff(width.saturating_sub(1)),
                examples: format!(
                    "a context tree has {} labels, the model {}",
                    t.vocab_size(),
                    width.saturating_sub(1)
                ),
            });
        }
        Ok(())
    }
}

/// A context state: the state in the shared tree and in the utterance's own tree (0 where the
/// tree is absent).
pub type CtxState = [u32; 2];

/// The context trees of one utterance (the shared one and its own), scored as their sum in
/// that order.
#[derive(Debug, Clone, Copy, Default)]
pub struct UttContext<'a> {
    /// The tree every utterance has.
    pub shared: Option<&'a NgramLm>,
    /// The utterance's own tree.
    pub own: Option<&'a NgramLm>,
}

impl UttContext<'_> {
    /// Whether any tree scores this utterance.
    pub fn is_some(&self) -> bool {
        self.shared.is_some() || self.own.is_some()
    }

    fn trees(&self) -> [Option<&NgramLm>; 2] {
        [self.shared, self.own]
    }

    /// The start state.
    pub fn start(&self) -> CtxState {
        self.trees().map(|t| t.map_or(0, NgramLm::bos_state))
    }

    /// The bonus of `label` (0-based) from `s` and the next state.
    pub fn score(&self, s: CtxState, label: u32) -> (f32, CtxState) {
        let (mut w, mut next) = (0.0, [0; 2]);
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                let (x, n) = t.score(s[k], label);
                w += x;
                next[k] = n;
            }
        }
        (w, next)
    }

    /// The final weight (the take-back of broken-off phrases).
    pub fn final_weight(&self, s: CtxState) -> f32 {
        let mut w = 0.0;
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                w += t.final_weight(s[k]);
            }
        }
        w
    }

    /// The largest bonus any label can earn from any state.
    pub fn upper_bound(&self) -> f32 {
        self.trees()
            .into_iter()
            .flatten()
            .map(NgramLm::score_upper_bound)
            .sum()
    }

    /// Bonuses and next states of every label from `s` (the sum in [`Self::score`]'s order).
    fn advance_row(
        &self,
        s: CtxState,
        scores: &mut [f32],
        next: &mut [CtxState],
        tmp: &mut CtxRow,
    ) {
        let v = scores.len();
        tmp.scores.resize(v, 0.0);
        tmp.next.resize(v, 0);
        scores.fill(0.0);
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                t.advance_row(s[k], &mut tmp.scores, &mut tmp.next);
                for l in 0..v {
                    scores[l] += tmp.scores[l];
                    next[l][k] = tmp.next[l];
                }
            } else {
                for n in next.iter_mut() {
                    n[k] = 0;
                }
            }
        }
    }
}

/// Buffers of one tree's row in [`UttContext::advance_row`].
#[derive(Default)]
struct CtxRow {
    scores: Vec<f32>,
    next: Vec<u32>,
}

/// Shallow-fusion settings: the LM (none: plain greedy), its weight α and the insertion bonus β,
/// and context boosting trees.
#[derive(Debug, Clone, Copy)]
pub struct Fusion<'a> {
    /// The LM over the model's labels (LM label = column − 1).
    pub lm: Option<&'a NgramLm>,
    /// LM weight α ≥ 0.
    pub alpha: f32,
    /// Insertion bonus β per label (AED and beam search).
    pub bonus: f32,
    /// How the LM is queried.
    pub query: LmQuery,
    /// Utterances advanced together.
    pub batch: usize,
    /// Context boosting (keyword trees), added to the LM's fused score.
    pub contexts: Contexts<'a>,
    /// The LM on a device ([`DeviceLm`], built from [`Self::lm`]): the batched full-vocabulary
    /// queries run there (a GPU, or the CUDA kernels on the CPU shim), bit-identical to the CPU
    /// queries. Greedy decoding with [`LmQuery::Full`] only; batches take turns on the device.
    pub device: Option<&'a Mutex<DeviceLm>>,
    /// The context trees on a device ([`DeviceContexts`], built from [`Self::contexts`]): each
    /// step's bonuses of all rows are one rooted query there, summed on the host in the CPU's
    /// order. Greedy decoding with [`LmQuery::Full`] only.
    pub device_contexts: Option<&'a Mutex<DeviceContexts>>,
}

impl Default for Fusion<'_> {
    fn default() -> Self {
        Self::none()
    }
}

/// Slack on the pruning bound, so that float rounding never drops a label that could win.
const PRUNE_SLACK: f32 = 1e-3;

impl<'a> Fusion<'a> {
    /// Plain greedy decoding (no LM).
    pub fn none() -> Self {
        Self {
            lm: None,
            alpha: 0.0,
            bonus: 0.0,
            query: LmQuery::Full,
            batch: 32,
            contexts: Contexts::None,
            device: None,
            device_contexts: None,
        }
    }

    /// Fusion with `lm` at weight `alpha`.
    pub fn with_lm(lm: &'a NgramLm, alpha: f32) -> Self {
        Self {
            lm: Some(lm),
            alpha,
            ..Self::none()
        }
    }

    /// Checks the settings: α finite and ≥ 0, β finite, a batch of at least 1.
    pub fn check_settings(&self) -> Result<()> {
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(NgpuError::Invalid(format!(
                "the LM weight α must be a finite number ≥ 0, got {}",
                self.alpha
            )));
        }
        if !self.bonus.is_finite() {
            return Err(NgpuError::Invalid(format!(
                "the insertion bonus must be finite, got {}",
                self.bonus
            )));
        }
        if self.batch == 0 {
            return Err(NgpuError::Invalid(
                "the batch size must be at least 1".into(),
            ));
        }
        if self.device_contexts.is_some() && self.query != LmQuery::Full {
            return Err(NgpuError::Invalid(
                "the device runs the full-vocabulary query (lm_query full), not the pruned one"
                    .into(),
            ));
        }
        if let Some(d) = self.device {
            let Some(lm) = self.lm else {
                return Err(NgpuError::Invalid(
                    "an LM on a device but no LM to fuse (set the LM too)".into(),
                ));
            };
            if self.query != LmQuery::Full {
                return Err(NgpuError::Invalid(
                    "the device runs the full-vocabulary query (lm_query full), not the pruned one"
                        .into(),
                ));
            }
            let d = d.lock().unwrap_or_else(|e| e.into_inner());
            if d.vocab_size() != lm.vocab_size() || d.num_states() != lm.num_states() {
                return Err(NgpuError::Invalid(format!(
                    "the LM on the device ({} labels, {} states) is not the fused LM ({} labels, {} states)",
                    d.vocab_size(),
                    d.num_states(),
                    lm.vocab_size(),
                    lm.num_states()
                )));
            }
        }
        Ok(())
    }

    /// Checks the settings and the LM against a model with `width` columns.
    pub fn check(&self, width: usize) -> Result<()> {
        self.check_settings()?;
        if let Some(lm) = self.lm {
            if lm.vocab_size() + 1 != width {
                return Err(NgpuError::VocabMismatch {
                    count: lm.vocab_size().abs_diff(width.saturating_sub(1)),
                    examples: format!(
                        "the LM has {} labels, the model {} (plus its blank or end-of-sequence column)",
                        lm.vocab_size(),
                        width.saturating_sub(1)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// First index of the largest value (values finite: checked on input). Two passes that the
/// compiler vectorises, the maximum then its first position, rather than one branchy pass.
pub fn argmax(row: &[f32]) -> usize {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    row.iter().position(|&x| x == max).unwrap_or(0)
}

/// A row whose label the LM (and/or its context tree) decides: its model output, LM state, its
/// context tree and state, a column it may not take (CTC's previous label; 0 when none) and the
/// acoustic best column.
struct Pending<'r> {
    row: &'r [f32],
    state: u32,
    ctx: UttContext<'r>,
    cstate: CtxState,
    exclude: u32,
    best: usize,
}

/// Scratch of the LM stage.
#[derive(Default)]
struct LmScratch {
    states: Vec<u32>,
    scores: Vec<f32>,
    next: Vec<u32>,
    ctx: CtxScratch,
}

/// A decode's context trees on a device: every distinct tree of a [`Contexts`] in one
/// [`Forest`], uploaded once, so that each step's context bonuses of a whole batch are one
/// rooted query (003 ch. 4's context graph on the GPU). Context states stay tree-local on the
/// host; a query shifts them by the tree's root.
pub struct DeviceContexts {
    dev: DeviceLm,
    /// Tree (by address) -> its root in the forest.
    roots: HashMap<usize, u32>,
}

impl std::fmt::Debug for DeviceContexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceContexts({:?}, {} trees)",
            self.dev,
            self.roots.len()
        )
    }
}

impl DeviceContexts {
    /// The trees of `contexts` on `dev` (`None` for [`Contexts::None`]).
    pub fn new(contexts: &Contexts, dev: Box<dyn ctx_cuda::Device>) -> Result<Option<Self>> {
        let (shared, own): (Option<&NgramLm>, &[&NgramLm]) = match *contexts {
            Contexts::None => return Ok(None),
            Contexts::Shared(t) => (Some(t), &[]),
            Contexts::PerUtterance(ts) => (None, ts),
            Contexts::SharedAndPerUtterance(t, ts) => (Some(t), ts),
        };
        let mut trees: Vec<&NgramLm> = Vec::new();
        let mut index: HashMap<usize, usize> = HashMap::new();
        for t in shared.into_iter().chain(own.iter().copied()) {
            index
                .entry(t as *const NgramLm as usize)
                .or_insert_with(|| {
                    trees.push(t);
                    trees.len() - 1
                });
        }
        let forest = Forest::new(&trees)?;
        let roots = index
            .into_iter()
            .map(|(addr, k)| (addr, forest.roots()[k]))
            .collect();
        Ok(Some(Self {
            dev: DeviceLm::new_forest(&forest, dev)?,
            roots,
        }))
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.dev.device_name()
    }

    fn root_of(&self, t: &NgramLm) -> Result<u32> {
        self.roots
            .get(&(t as *const NgramLm as usize))
            .copied()
            .ok_or_else(|| {
                NgpuError::Invalid(
                    "a context tree that is not on the device (build DeviceContexts from the same contexts)"
                        .into(),
                )
            })
    }
}

/// Buffers of the context stage: per row its bonuses and next states (row `i` at
/// `[i·V, (i+1)·V)`), and the device query's.
#[derive(Default)]
struct CtxScratch {
    scores: Vec<f32>,
    next: Vec<CtxState>,
    tmp: CtxRow,
    q_states: Vec<u32>,
    q_roots: Vec<u32>,
    q_scores: Vec<f32>,
    q_next: Vec<u32>,
    q_of: Vec<(usize, usize, u32)>,
}

/// Context bonuses and next states of every row that has trees (rows without are left as they
/// are): [`UttContext::advance_row`] per row on the CPU, or one rooted query of all the rows'
/// trees on the device, summed per row in the same order (0, then the shared tree, then the
/// utterance's own), so both give the same bits.
fn ctx_rows(
    f: &Fusion,
    rows: &[(UttContext, CtxState)],
    v: usize,
    s: &mut CtxScratch,
) -> Result<()> {
    if rows.iter().all(|(c, _)| !c.is_some()) {
        return Ok(());
    }
    s.scores.resize(rows.len() * v, 0.0);
    s.next.resize(rows.len() * v, [0; 2]);
    let Some(dc) = f.device_contexts else {
        for (i, (c, cs)) in rows.iter().enumerate() {
            if c.is_some() {
                c.advance_row(
                    *cs,
                    &mut s.scores[i * v..(i + 1) * v],
                    &mut s.next[i * v..(i + 1) * v],
                    &mut s.tmp,
                );
            }
        }
        return Ok(());
    };
    let mut dc = dc.lock().unwrap_or_else(|e| e.into_inner());
    s.q_states.clear();
    s.q_roots.clear();
    s.q_of.clear();
    for (i, (c, cs)) in rows.iter().enumerate() {
        for (k, t) in c.trees().into_iter().enumerate() {
            if let Some(t) = t {
                let r = dc.root_of(t)?;
                s.q_states.push(cs[k] + r);
                s.q_roots.push(r);
                s.q_of.push((i, k, r));
            }
        }
    }
    let q = s.q_states.len();
    s.q_scores.resize(q * v, 0.0);
    s.q_next.resize(q * v, 0);
    dc.dev
        .advance_rooted(&s.q_states, &s.q_roots, &mut s.q_scores, &mut s.q_next)?;
    // Rows' sums in UttContext::advance_row's order: 0, + shared, + own.
    let mut last = usize::MAX;
    for (j, &(i, k, r)) in s.q_of.iter().enumerate() {
        let (sc, nx) = (
            &mut s.scores[i * v..(i + 1) * v],
            &mut s.next[i * v..(i + 1) * v],
        );
        if i != last {
            sc.fill(0.0);
            nx.fill([0; 2]);
            last = i;
        }
        let (qs, qn) = (
            &s.q_scores[j * v..(j + 1) * v],
            &s.q_next[j * v..(j + 1) * v],
        );
        for l in 0..v {
            sc[l] += qs[l];
            nx[l][k] = qn[l] - r;
        }
    }
    Ok(())
}

/// A chosen label: (column, next LM state, next context state).
type Choice = (u32, u32, CtxState);

/// The LM's full-vocabulary scores and next states of every state in `states` (row `i` at
/// `[i·V, (i+1)·V)`): one batched query on the device when there is one, else per row on the
/// CPU (the same values bit for bit).
fn lm_rows(
    f: &Fusion,
    lm: &NgramLm,
    states: &[u32],
    scores: &mut Vec<f32>,
    next: &mut Vec<u32>,
) -> Result<()> {
    let v = lm.vocab_size();
    scores.resize(states.len() * v, 0.0);
    next.resize(states.len() * v, 0);
    match f.device {
        Some(d) => d
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .advance(states, scores, next),
        None => {
            for (i, &st) in states.iter().enumerate() {
                lm.advance_row(
                    st,
                    &mut scores[i * v..(i + 1) * v],
                    &mut next[i * v..(i + 1) * v],
                );
            }
            Ok(())
        }
    }
}

/// The fused choice among labels (columns ≥ 1, not `exclude`) for every pending row:
/// `log p + α·LM + context bonus`, summed in that order by both queries.
fn label_stage(f: &Fusion, pend: &[Pending], s: &mut LmScratch) -> Result<Vec<Choice>> {
    let a = f.alpha;
    Ok(match f.query {
        LmQuery::Full => {
            let v = pend.first().map_or(0, |p| p.row.len() - 1);
            if let Some(lm) = f.lm {
                s.states.clear();
                s.states.extend(pend.iter().map(|p| p.state));
                lm_rows(f, lm, &s.states, &mut s.scores, &mut s.next)?;
            }
            // The context stage only when a row has trees (no per-step list otherwise).
            if pend.iter().any(|p| p.ctx.is_some()) {
                let rows: Vec<(UttContext, CtxState)> =
                    pend.iter().map(|p| (p.ctx, p.cstate)).collect();
                ctx_rows(f, &rows, v, &mut s.ctx)?;
            }
            let mut fused = vec![0f32; v];
            pend.iter()
                .enumerate()
                .map(|(i, p)| {
                    // fused[l] = score of column l + 1; the excluded column cannot win.
                    fused.copy_from_slice(&p.row[1..]);
                    if f.lm.is_some() {
                        let sc = &s.scores[i * v..(i + 1) * v];
                        for (f, &w) in fused.iter_mut().zip(sc) {
                            *f += a * w;
                        }
                    }
                    if p.ctx.is_some() {
                        for (f, &w) in fused.iter_mut().zip(&s.ctx.scores[i * v..(i + 1) * v]) {
                            *f += w;
                        }
                    }
                    if p.exclude != 0 {
                        fused[p.exclude as usize - 1] = f32::NEG_INFINITY;
                    }
                    let l = argmax(&fused);
                    let lm_next = if f.lm.is_some() { s.next[i * v + l] } else { 0 };
                    let ctx_next = if p.ctx.is_some() {
                        s.ctx.next[i * v + l]
                    } else {
                        [0; 2]
                    };
                    (l as u32 + 1, lm_next, ctx_next)
                })
                .collect()
        }
        LmQuery::Pruned => pend
            .iter()
            .map(|p| {
                let bound = f.lm.map_or(0.0, |lm| a * lm.score_upper_bound()) + p.ctx.upper_bound();
                let eval = |c: usize| -> (f32, u32, CtxState) {
                    let mut x = p.row[c];
                    let mut t = 0;
                    if let Some(lm) = f.lm {
                        let (w, n) = lm.score(p.state, c as u32 - 1);
                        x += a * w;
                        t = n;
                    }
                    let mut ct = [0; 2];
                    if p.ctx.is_some() {
                        let (w, n) = p.ctx.score(p.cstate, c as u32 - 1);
                        x += w;
                        ct = n;
                    }
                    (x, t, ct)
                };
                let (x, t, ct) = eval(p.best);
                let mut best = (x, p.best, t, ct);
                let floor = best.0 - bound - PRUNE_SLACK;
                for c in 1..p.row.len() {
                    if c == p.best || c as u32 == p.exclude || p.row[c] < floor {
                        continue;
                    }
                    let (x, t, ct) = eval(c);
                    if x > best.0 || (x == best.0 && c < best.1) {
                        best = (x, c, t, ct);
                    }
                }
                (best.1 as u32, best.2, best.3)
            })
            .collect(),
    })
}

/// Greedy CTC decoding of each score matrix (log-probabilities, column 0 blank): the label
/// sequence after collapsing repeats and removing blanks.
pub fn greedy_ctc(mats: &[&ScoreMatrix], f: &Fusion) -> Result<Vec<Vec<u32>>> {
    check_matrices(mats, f)?;
    let out: Vec<Vec<Vec<u32>>> = mats
        .par_chunks(f.batch)
        .enumerate()
        .map(|(k, batch)| ctc_batch(batch, k * f.batch, f))
        .collect::<Result<_>>()?;
    Ok(out.into_iter().flatten().collect())
}

/// Checks the settings (also with no utterances), each utterance's model width, and the
/// contexts; errors name the utterance.
pub(crate) fn check_inputs(f: &Fusion, widths: impl ExactSizeIterator<Item = usize>) -> Result<()> {
    f.check_settings()?;
    let n = widths.len();
    let mut first = None;
    for (i, w) in widths.enumerate() {
        f.check(w).map_err(|e| utt_error(i, e))?;
        first.get_or_insert(w);
    }
    match first {
        Some(w) => f.contexts.check(n, w)?,
        None => return Ok(()),
    }
    if let Some(dc) = f.device_contexts {
        let dc = dc.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..n {
            for t in f.contexts.get(i).trees().into_iter().flatten() {
                dc.root_of(t).map_err(|e| utt_error(i, e))?;
            }
        }
    }
    Ok(())
}

/// Checks CTC score matrices: settings against their width, and every value finite (a NaN
/// would make every comparison false and the argmax meaningless).
pub(crate) fn check_matrices(mats: &[&ScoreMatrix], f: &Fusion) -> Result<()> {
    check_inputs(f, mats.iter().map(|m| m.cols()))?;
    for (i, m) in mats.iter().enumerate() {
        if !ctx_core::scores::all_finite(m.data()) {
            let t = (0..m.rows())
                .find(|&t| m.row(t).iter().any(|x| !x.is_finite()))
                .unwrap_or(0);
            return Err(NgpuError::Model(format!(
                "utterance {i}: frame {t} has a log-probability that is NaN or infinite"
            )));
        }
    }
    Ok(())
}

/// Checks one model output row (transducer joint, AED step).
pub(crate) fn check_row(row: &[f32], utt: usize, what: &str) -> Result<()> {
    if ctx_core::scores::all_finite(row) {
        Ok(())
    } else {
        Err(NgpuError::Model(format!(
            "utterance {utt}: the model's {what} has a log-probability that is NaN or infinite"
        )))
    }
}

fn utt_error(i: usize, e: NgpuError) -> NgpuError {
    match e {
        NgpuError::Invalid(m) => NgpuError::Invalid(format!("utterance {i}: {m}")),
        other => other,
    }
}

fn ctc_batch(mats: &[&ScoreMatrix], offset: usize, f: &Fusion) -> Result<Vec<Vec<u32>>> {
    let n = mats.len();
    let mut out = vec![Vec::new(); n];
    let mut prev = vec![0u32; n];
    let mut lm_state: Vec<u32> = vec![f.lm.map_or(0, |l| l.bos_state()); n];
    let ctx: Vec<UttContext> = (0..n).map(|i| f.contexts.get(offset + i)).collect();
    let mut ctx_state: Vec<CtxState> = ctx.iter().map(UttContext::start).collect();
    let frames = mats.iter().map(|m| m.rows()).max().unwrap_or(0);
    let mut scratch = LmScratch::default();
    let mut pend_rows: Vec<usize> = Vec::new();
    for t in 0..frames {
        pend_rows.clear();
        let mut pend = Vec::new();
        for (i, m) in mats.iter().enumerate() {
            if t >= m.rows() {
                continue;
            }
            let row = m.row(t);
            let a = argmax(row) as u32;
            if a == 0 || a == prev[i] {
                prev[i] = a;
                continue;
            }
            if f.lm.is_none() && !ctx[i].is_some() {
                out[i].push(a);
                prev[i] = a;
            } else {
                pend_rows.push(i);
                pend.push(Pending {
                    row,
                    state: lm_state[i],
                    ctx: ctx[i],
                    cstate: ctx_state[i],
                    exclude: prev[i],
                    best: a as usize,
                });
            }
        }
        if !pend.is_empty() {
            for (&i, (c, next, cnext)) in pend_rows.iter().zip(label_stage(f, &pend, &mut scratch)?)
            {
                out[i].push(c);
                prev[i] = c;
                lm_state[i] = next;
                ctx_state[i] = cnext;
            }
        }
    }
    Ok(out)
}

/// Greedy transducer decoding (RNN-T, or TDT when the model has durations), at most
/// `max_symbols` labels per frame (then the frame is left).
pub fn greedy_transducer<M: Transducer + Sync>(
    models: &[M],
    f: &Fusion,
    max_symbols: usize,
) -> Result<Vec<Vec<u32>>> {
    check_inputs(f, models.iter().map(|m| m.width()))?;
    let out: Vec<Vec<Vec<u32>>> = models
        .par_chunks(f.batch)
        .enumerate()
        .map(|(k, batch)| transducer_batch(batch, k * f.batch, f, max_symbols.max(1)))
        .collect::<Result<_>>()?;
    Ok(out.into_iter().flatten().collect())
}

struct TRow<'c> {
    t: usize,
    pred: u32,
    lm: u32,
    ctx: UttContext<'c>,
    cs: CtxState,
    syms: usize,
    out: Vec<u32>,
}

fn transducer_batch<M: Transducer>(
    models: &[M],
    offset: usize,
    f: &Fusion,
    max_symbols: usize,
) -> Result<Vec<Vec<u32>>> {
    let n = models.len();
    let width = models.first().map_or(0, |m| m.width());
    let nd = models.first().map_or(0, |m| m.durations().len());
    let mut rows: Vec<TRow> = models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let ctx = f.contexts.get(offset + i);
            TRow {
                t: 0,
                pred: m.start(),
                lm: f.lm.map_or(0, |l| l.bos_state()),
                ctx,
                cs: ctx.start(),
                syms: 0,
                out: Vec::new(),
            }
        })
        .collect();
    let mut lab = vec![0f32; n * width];
    let mut dur = vec![0f32; n * nd.max(1)];
    let mut scratch = LmScratch::default();
    loop {
        let mut active = false;
        let mut pend_rows = Vec::new();
        let mut best_of = vec![0usize; n];
        for (i, (m, r)) in models.iter().zip(rows.iter_mut()).enumerate() {
            if r.t >= m.frames() {
                continue;
            }
            active = true;
            let (l, d) = (
                &mut lab[i * width..(i + 1) * width],
                &mut dur[i * nd.max(1)..i * nd.max(1) + nd],
            );
            m.joint(r.t, r.pred, l, d);
            check_row(l, offset + i, "joint")?;
            check_row(d, offset + i, "duration head")?;
            let a = argmax(l);
            best_of[i] = a;
            if a == 0 {
                r.t += match m.durations() {
                    [] => 1,
                    ds => ds[argmax(d)].max(1) as usize,
                };
                r.syms = 0;
            } else {
                pend_rows.push(i);
            }
        }
        if !active {
            break;
        }
        // Rows without an LM or context take the acoustic label; the others the fused one.
        let fused_rows: Vec<usize> = pend_rows
            .iter()
            .copied()
            .filter(|&i| f.lm.is_some() || rows[i].ctx.is_some())
            .collect();
        let pend: Vec<Pending> = fused_rows
            .iter()
            .map(|&i| Pending {
                row: &lab[i * width..(i + 1) * width],
                state: rows[i].lm,
                ctx: rows[i].ctx,
                cstate: rows[i].cs,
                exclude: 0,
                best: best_of[i],
            })
            .collect();
        let mut fused = fused_rows
            .iter()
            .copied()
            .zip(label_stage(f, &pend, &mut scratch)?)
            .peekable();
        for &i in &pend_rows {
            let (c, next, cnext) = match fused.peek() {
                Some(&(j, choice)) if j == i => {
                    fused.next();
                    choice
                }
                _ => (best_of[i] as u32, 0, [0; 2]),
            };
            let (m, r) = (&models[i], &mut rows[i]);
            r.out.push(c);
            r.lm = next;
            r.cs = cnext;
            r.pred = m.next(r.t, r.pred, c);
            r.syms += 1;
            let d = match m.durations() {
                [] => 0,
                ds => ds[argmax(&dur[i * nd..(i + 1) * nd])] as usize,
            };
            if d > 0 {
                r.t += d;
                r.syms = 0;
            } else if r.syms >= max_symbols {
                r.t += 1;
                r.syms = 0;
            }
        }
    }
    Ok(rows.into_iter().map(|r| r.out).collect())
}

/// Greedy AED decoding: labels until end of sequence (column 0) or the model's length limit.
pub fn greedy_aed<M: Aed + Sync>(models: &[M], f: &Fusion) -> Result<Vec<Vec<u32>>> {
    check_inputs(f, models.iter().map(|m| m.width()))?;
    let out: Vec<Vec<Vec<u32>>> = models
        .par_chunks(f.batch)
        .enumerate()
        .map(|(k, batch)| aed_batch(batch, k * f.batch, f))
        .collect::<Result<_>>()?;
    Ok(out.into_iter().flatten().collect())
}

fn aed_batch<M: Aed>(models: &[M], offset: usize, f: &Fusion) -> Result<Vec<Vec<u32>>> {
    let n = models.len();
    let width = models.first().map_or(0, |m| m.width());
    let mut state: Vec<u32> = models.iter().map(|m| m.start()).collect();
    let mut lm_state = vec![f.lm.map_or(0, |l| l.bos_state()); n];
    let ctx: Vec<UttContext> = (0..n).map(|i| f.contexts.get(offset + i)).collect();
    let mut ctx_state: Vec<CtxState> = ctx.iter().map(UttContext::start).collect();
    let mut done = vec![false; n];
    let mut out = vec![Vec::new(); n];
    let mut dists = vec![0f32; n * width];
    let v = width.saturating_sub(1);
    let mut cx = CtxScratch::default();
    let (mut states, mut scores, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut active = Vec::with_capacity(n);
    // Rows advance in lockstep: every active row's step, then one batched full-vocabulary LM
    // query for them (on the device when there is one), then each row's choice, which covers
    // end of sequence too.
    while done.iter().any(|d| !d) {
        active.clear();
        active.extend((0..n).filter(|&i| !done[i]));
        for (k, &i) in active.iter().enumerate() {
            let dist = &mut dists[k * width..(k + 1) * width];
            models[i].step(state[i], dist);
            check_row(dist, offset + i, "step output")?;
        }
        let batched = match f.lm {
            Some(lm) if f.query == LmQuery::Full => {
                states.clear();
                states.extend(active.iter().map(|&i| lm_state[i]));
                lm_rows(f, lm, &states, &mut scores, &mut next)?;
                true
            }
            _ => false,
        };
        // The context bonuses of the active rows, batched the same way (full query).
        let ctx_batched = f.query == LmQuery::Full && active.iter().any(|&i| ctx[i].is_some());
        if ctx_batched {
            let rows: Vec<(UttContext, CtxState)> =
                active.iter().map(|&i| (ctx[i], ctx_state[i])).collect();
            ctx_rows(f, &rows, v, &mut cx)?;
        }
        for (k, &i) in active.iter().enumerate() {
            let dist = &dists[k * width..(k + 1) * width];
            let (c, nx, cnx) = if f.lm.is_none() && !ctx[i].is_some() {
                (argmax(dist), 0, [0; 2])
            } else {
                let lm_row =
                    batched.then(|| (&scores[k * v..(k + 1) * v], &next[k * v..(k + 1) * v]));
                let ctx_row = (ctx_batched && ctx[i].is_some())
                    .then(|| (&cx.scores[k * v..(k + 1) * v], &cx.next[k * v..(k + 1) * v]));
                aed_choice(
                    f,
                    dist,
                    lm_state[i],
                    lm_row,
                    (ctx[i], ctx_state[i]),
                    ctx_row,
                )
            };
            if c == 0 {
                done[i] = true;
                continue;
            }
            out[i].push(c as u32);
            state[i] = models[i].next(state[i], c as u32);
            lm_state[i] = nx;
            ctx_state[i] = cnx;
            if out[i].len() >= models[i].max_len() {
                done[i] = true;
            }
        }
    }
    Ok(out)
}

/// AED's fused choice: (column, next LM state, next context state). End of sequence scores
/// `log p(eos) + α·LM final + context final` (the take-back of a broken-off phrase), a label
/// `log p + α·LM + β + context bonus`. `lm_row` and `ctx_row`: the LM's and the context
/// trees' full-vocabulary scores and next states from the row's states (the batched queries of
/// [`LmQuery::Full`]).
fn aed_choice(
    f: &Fusion,
    dist: &[f32],
    state: u32,
    lm_row: Option<(&[f32], &[u32])>,
    (ctx, cs): (UttContext, CtxState),
    ctx_row: Option<(&[f32], &[CtxState])>,
) -> (usize, u32, CtxState) {
    let a = f.alpha;
    let mut eos = dist[0];
    if let Some(lm) = f.lm {
        eos += a * lm.final_weight(state);
    }
    if ctx.is_some() {
        eos += ctx.final_weight(cs);
    }
    let mut best = (eos, 0usize, 0u32, [0u32; 2]);
    match f.query {
        LmQuery::Full => {
            for (c, &d) in dist.iter().enumerate().skip(1) {
                let mut x = d;
                if let Some((scores, _)) = lm_row {
                    x += a * scores[c - 1];
                }
                x += f.bonus;
                if let Some((cscores, _)) = ctx_row {
                    x += cscores[c - 1];
                }
                if x > best.0 {
                    let nx = lm_row.map_or(0, |(_, next)| next[c - 1]);
                    let cnx = ctx_row.map_or([0; 2], |(_, cnext)| cnext[c - 1]);
                    best = (x, c, nx, cnx);
                }
            }
        }
        LmQuery::Pruned => {
            let eval = |c: usize| -> (f32, u32, CtxState) {
                let mut x = dist[c];
                let mut t = 0;
                if let Some(lm) = f.lm {
                    let (w, n) = lm.score(state, c as u32 - 1);
                    x += a * w;
                    t = n;
                }
                x += f.bonus;
                let mut ct = [0; 2];
                if ctx.is_some() {
                    let (w, n) = ctx.score(cs, c as u32 - 1);
                    x += w;
                    ct = n;
                }
                (x, t, ct)
            };
            let bound = f.lm.map_or(0.0, |lm| a * lm.score_upper_bound()) + ctx.upper_bound();
            let acoustic = argmax(&dist[1..]) + 1;
            let xa = eval(acoustic);
            let floor = best.0.max(xa.0) - bound - f.bonus - PRUNE_SLACK;
            for (c, &d) in dist.iter().enumerate().skip(1) {
                if d < floor && c != acoustic {
                    continue;
                }
                let (x, t, ct) = if c == acoustic { xa } else { eval(c) };
                if x > best.0 {
                    best = (x, c, t, ct);
                }
            }
        }
    }
    (best.1, best.2, best.3)
}

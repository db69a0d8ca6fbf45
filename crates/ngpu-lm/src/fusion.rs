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

use crate::arrays::NgramLm;
use crate::error::{NgpuError, Result};
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use rayon::prelude::*;

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

/// Shallow-fusion settings: the LM (none: plain greedy), its weight α and the insertion bonus β.
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

    /// Checks the settings against a model with `width` columns.
    pub fn check(&self, width: usize) -> Result<()> {
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

/// A row whose label the LM decides: its model output, LM state, a column it may not take
/// (CTC's previous label; 0 when none) and the acoustic best column.
struct Pending<'r> {
    row: &'r [f32],
    state: u32,
    exclude: u32,
    best: usize,
}

/// Scratch of the LM stage.
#[derive(Default)]
struct LmScratch {
    states: Vec<u32>,
    scores: Vec<f32>,
    next: Vec<u32>,
}

/// The fused choice among labels (columns ≥ 1, not `exclude`) for every pending row: (column,
/// next LM state).
fn label_stage(f: &Fusion, lm: &NgramLm, pend: &[Pending], s: &mut LmScratch) -> Vec<(u32, u32)> {
    let a = f.alpha;
    match f.query {
        LmQuery::Full => {
            let v = lm.vocab_size();
            s.states.clear();
            s.states.extend(pend.iter().map(|p| p.state));
            s.scores.resize(pend.len() * v, 0.0);
            s.next.resize(pend.len() * v, 0);
            for (i, &st) in s.states.iter().enumerate() {
                lm.advance_row(
                    st,
                    &mut s.scores[i * v..(i + 1) * v],
                    &mut s.next[i * v..(i + 1) * v],
                );
            }
            let mut fused = vec![0f32; v];
            pend.iter()
                .enumerate()
                .map(|(i, p)| {
                    // fused[l] = score of column l + 1; the excluded column cannot win.
                    let sc = &s.scores[i * v..(i + 1) * v];
                    for ((f, &x), &w) in fused.iter_mut().zip(&p.row[1..]).zip(sc) {
                        *f = x + a * w;
                    }
                    if p.exclude != 0 {
                        fused[p.exclude as usize - 1] = f32::NEG_INFINITY;
                    }
                    let l = argmax(&fused);
                    (l as u32 + 1, s.next[i * v + l])
                })
                .collect()
        }
        LmQuery::Pruned => {
            let bound = a * lm.score_upper_bound();
            pend.iter()
                .map(|p| {
                    let (w, t) = lm.score(p.state, p.best as u32 - 1);
                    let mut best = (p.row[p.best] + a * w, p.best, t);
                    let floor = best.0 - bound - PRUNE_SLACK;
                    for c in 1..p.row.len() {
                        if c == p.best || c as u32 == p.exclude || p.row[c] < floor {
                            continue;
                        }
                        let (w, t) = lm.score(p.state, c as u32 - 1);
                        let x = p.row[c] + a * w;
                        if x > best.0 || (x == best.0 && c < best.1) {
                            best = (x, c, t);
                        }
                    }
                    (best.1 as u32, best.2)
                })
                .collect()
        }
    }
}

/// Greedy CTC decoding of each score matrix (log-probabilities, column 0 blank): the label
/// sequence after collapsing repeats and removing blanks.
pub fn greedy_ctc(mats: &[&ScoreMatrix], f: &Fusion) -> Result<Vec<Vec<u32>>> {
    check_matrices(mats, f)?;
    let out: Vec<Vec<Vec<u32>>> = mats
        .par_chunks(f.batch)
        .map(|batch| ctc_batch(batch, f))
        .collect();
    Ok(out.into_iter().flatten().collect())
}

/// Checks CTC score matrices: settings against their width, and every value finite (a NaN
/// would make every comparison false and the argmax meaningless).
pub(crate) fn check_matrices(mats: &[&ScoreMatrix], f: &Fusion) -> Result<()> {
    for (i, m) in mats.iter().enumerate() {
        f.check(m.cols()).map_err(|e| utt_error(i, e))?;
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

fn ctc_batch(mats: &[&ScoreMatrix], f: &Fusion) -> Vec<Vec<u32>> {
    let n = mats.len();
    let mut out = vec![Vec::new(); n];
    let mut prev = vec![0u32; n];
    let mut lm_state: Vec<u32> = vec![f.lm.map_or(0, |l| l.bos_state()); n];
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
            match f.lm {
                None => {
                    out[i].push(a);
                    prev[i] = a;
                }
                Some(_) => {
                    pend_rows.push(i);
                    pend.push(Pending {
                        row,
                        state: lm_state[i],
                        exclude: prev[i],
                        best: a as usize,
                    });
                }
            }
        }
        if let (Some(lm), false) = (f.lm, pend.is_empty()) {
            for (&i, (c, next)) in pend_rows
                .iter()
                .zip(label_stage(f, lm, &pend, &mut scratch))
            {
                out[i].push(c);
                prev[i] = c;
                lm_state[i] = next;
            }
        }
    }
    out
}

/// Greedy transducer decoding (RNN-T, or TDT when the model has durations), at most
/// `max_symbols` labels per frame (then the frame is left).
pub fn greedy_transducer<M: Transducer + Sync>(
    models: &[M],
    f: &Fusion,
    max_symbols: usize,
) -> Result<Vec<Vec<u32>>> {
    for (i, m) in models.iter().enumerate() {
        f.check(m.width()).map_err(|e| utt_error(i, e))?;
    }
    let out: Vec<Vec<Vec<u32>>> = models
        .par_chunks(f.batch)
        .enumerate()
        .map(|(k, batch)| transducer_batch(batch, k * f.batch, f, max_symbols.max(1)))
        .collect::<Result<_>>()?;
    Ok(out.into_iter().flatten().collect())
}

struct TRow {
    t: usize,
    pred: u32,
    lm: u32,
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
        .map(|m| TRow {
            t: 0,
            pred: m.start(),
            lm: f.lm.map_or(0, |l| l.bos_state()),
            syms: 0,
            out: Vec::new(),
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
        let chosen: Vec<(u32, u32)> = match f.lm {
            None => pend_rows.iter().map(|&i| (best_of[i] as u32, 0)).collect(),
            Some(lm) => {
                let pend: Vec<Pending> = pend_rows
                    .iter()
                    .map(|&i| Pending {
                        row: &lab[i * width..(i + 1) * width],
                        state: rows[i].lm,
                        exclude: 0,
                        best: best_of[i],
                    })
                    .collect();
                label_stage(f, lm, &pend, &mut scratch)
            }
        };
        for (&i, (c, next)) in pend_rows.iter().zip(chosen) {
            let (m, r) = (&models[i], &mut rows[i]);
            r.out.push(c);
            r.lm = next;
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
    for (i, m) in models.iter().enumerate() {
        f.check(m.width()).map_err(|e| utt_error(i, e))?;
    }
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
    let mut done = vec![false; n];
    let mut out = vec![Vec::new(); n];
    let mut dist = vec![0f32; width];
    let (mut scores, mut next) = (Vec::new(), Vec::new());
    if let Some(lm) = f.lm {
        scores.resize(lm.vocab_size(), 0.0);
        next.resize(lm.vocab_size(), 0);
    }
    // Rows advance in lockstep; the AED's LM stage covers end of sequence too, so it runs per
    // row on the row's own buffers.
    while done.iter().any(|d| !d) {
        for i in 0..n {
            if done[i] {
                continue;
            }
            let m = &models[i];
            m.step(state[i], &mut dist);
            check_row(&dist, offset + i, "step output")?;
            let (c, nx) = match f.lm {
                None => (argmax(&dist), 0),
                Some(lm) => aed_choice(f, lm, &dist, lm_state[i], &mut scores, &mut next),
            };
            if c == 0 {
                done[i] = true;
                continue;
            }
            out[i].push(c as u32);
            state[i] = m.next(state[i], c as u32);
            lm_state[i] = nx;
            if out[i].len() >= m.max_len() {
                done[i] = true;
            }
        }
    }
    Ok(out)
}

/// AED's fused choice: (column, next LM state).
fn aed_choice(
    f: &Fusion,
    lm: &NgramLm,
    dist: &[f32],
    state: u32,
    scores: &mut [f32],
    next: &mut [u32],
) -> (usize, u32) {
    let a = f.alpha;
    let eos = dist[0] + a * lm.final_weight(state);
    let mut best = (eos, 0usize, 0u32);
    match f.query {
        LmQuery::Full => {
            lm.advance_row(state, scores, next);
            for c in 1..dist.len() {
                let x = dist[c] + a * scores[c - 1] + f.bonus;
                if x > best.0 {
                    best = (x, c, next[c - 1]);
                }
            }
        }
        LmQuery::Pruned => {
            let acoustic = argmax(&dist[1..]) + 1;
            let (w, t) = lm.score(state, acoustic as u32 - 1);
            let xa = dist[acoustic] + a * w + f.bonus;
            let floor = best.0.max(xa) - a * lm.score_upper_bound() - f.bonus - PRUNE_SLACK;
            for (c, &d) in dist.iter().enumerate().skip(1) {
                if d < floor && c != acoustic {
                    continue;
                }
                let (x, t) = if c == acoustic {
                    (xa, t)
                } else {
                    let (w, t) = lm.score(state, c as u32 - 1);
                    (d + a * w + f.bonus, t)
                };
                if x > best.0 {
                    best = (x, c, t);
                }
            }
        }
    }
    (best.1, best.2)
}

//! Beam-search baselines with optional shallow fusion (the beam rows of 004's tables):
//!
//! - [`beam_ctc`]: CTC prefix beam search (blank / non-blank prefix probabilities, repeats
//!   collapsed), the LM scoring each new label;
//! - [`beam_transducer`]: for an RNN-T, modified beam search (icefall's: at most one label per
//!   frame, hypotheses with the same labels and prediction state merged by log-add); for a TDT,
//!   the same search over (label, duration) expansions with each hypothesis at its own frame;
//! - [`beam_aed`]: label-synchronous beam search, end of sequence scored with the LM's final
//!   weight.
//!
//! A hypothesis' score is its model log-probability plus, with an LM, `α·ln p_LM + β` per label
//! and `α·ln p_LM(</s>)` at the end. Per step each hypothesis expands its `beam` best labels (by
//! the model), and the `beam` best hypotheses are kept; ties are broken by the label sequence, so
//! results are deterministic. Utterances are decoded in parallel (rayon).

use crate::arrays::NgramLm;
use crate::error::Result;
use crate::fusion::Fusion;
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use rayon::prelude::*;
use std::collections::HashMap;

fn log_add(a: f32, b: f32) -> f32 {
    if a == f32::NEG_INFINITY {
        return b;
    }
    if b == f32::NEG_INFINITY {
        return a;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

/// The `k` best columns ≥ 1 of a row (ties: the smaller column).
fn top_labels(row: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (1..row.len()).collect();
    let k = k.min(idx.len());
    if k == 0 {
        return idx;
    }
    let cmp = |a: &usize, b: &usize| row[*b].total_cmp(&row[*a]).then(a.cmp(b));
    idx.select_nth_unstable_by(k - 1, cmp);
    idx.truncate(k);
    idx.sort_by(cmp);
    idx
}

/// The LM side of one label: (α·ln p + β, next state); zero without an LM.
fn lm_step(f: &Fusion, state: u32, label: usize) -> (f32, u32) {
    match f.lm {
        Some(lm) => {
            let (w, t) = lm.score(state, label as u32 - 1);
            (f.alpha * w + f.bonus, t)
        }
        None => (0.0, 0),
    }
}

fn lm_final(f: &Fusion, state: u32) -> f32 {
    f.lm.map_or(0.0, |lm| f.alpha * lm.final_weight(state))
}

fn lm_start(f: &Fusion) -> u32 {
    f.lm.map_or(0, NgramLm::bos_state)
}

/// Best-first order with a deterministic tie-break.
fn by_score<T>(key: impl Fn(&T) -> (f32, &[u32])) -> impl Fn(&T, &T) -> std::cmp::Ordering {
    move |a, b| {
        let (sa, la) = key(a);
        let (sb, lb) = key(b);
        sb.total_cmp(&sa).then_with(|| la.cmp(lb))
    }
}

/// One prefix of CTC prefix beam search.
#[derive(Clone)]
struct Prefix {
    labels: Vec<u32>,
    /// ln P(prefix, ending in blank), ln P(prefix, ending in its last label).
    pb: f32,
    pnb: f32,
    lm: u32,
    lm_score: f32,
}

impl Prefix {
    fn score(&self) -> f32 {
        log_add(self.pb, self.pnb) + self.lm_score
    }
}

/// CTC prefix beam search of each score matrix (log-probabilities, column 0 blank).
pub fn beam_ctc(mats: &[&ScoreMatrix], f: &Fusion, beam: usize) -> Result<Vec<Vec<u32>>> {
    for m in mats {
        f.check(m.cols())?;
    }
    let beam = beam.max(1);
    Ok(mats.par_iter().map(|m| ctc_one(m, f, beam)).collect())
}

fn ctc_one(m: &ScoreMatrix, f: &Fusion, beam: usize) -> Vec<u32> {
    let ninf = f32::NEG_INFINITY;
    let mut hyps = vec![Prefix {
        labels: Vec::new(),
        pb: 0.0,
        pnb: ninf,
        lm: lm_start(f),
        lm_score: 0.0,
    }];
    for t in 0..m.rows() {
        let row = m.row(t);
        let cands = top_labels(row, beam);
        let mut next: HashMap<Vec<u32>, Prefix> = HashMap::new();
        for h in &hyps {
            let total = log_add(h.pb, h.pnb);
            // Blank: the same prefix, now ending in blank.
            let e = next.entry(h.labels.clone()).or_insert_with(|| Prefix {
                pb: ninf,
                pnb: ninf,
                ..h.clone()
            });
            e.pb = log_add(e.pb, total + row[0]);
            // The last label again without a blank between: collapsed into the same prefix.
            if let Some(&last) = h.labels.last() {
                e.pnb = log_add(e.pnb, h.pnb + row[last as usize]);
            }
            for &c in &cands {
                let last = h.labels.last().copied();
                // A repeat of the last label needs a blank between.
                let from = if last == Some(c as u32) { h.pb } else { total };
                if from == ninf {
                    continue;
                }
                let mut labels = h.labels.clone();
                labels.push(c as u32);
                let e = match next.get_mut(&labels) {
                    Some(e) => e,
                    None => {
                        let (add, lm) = lm_step(f, h.lm, c);
                        next.entry(labels.clone()).or_insert(Prefix {
                            labels,
                            pb: ninf,
                            pnb: ninf,
                            lm,
                            lm_score: h.lm_score + add,
                        })
                    }
                };
                e.pnb = log_add(e.pnb, from + row[c]);
            }
        }
        let mut all: Vec<Prefix> = next.into_values().collect();
        all.sort_by(by_score(|p: &Prefix| (p.score(), &p.labels[..])));
        all.truncate(beam);
        hyps = all;
    }
    hyps.sort_by(by_score(|p: &Prefix| {
        (p.score() + lm_final(f, p.lm), &p.labels[..])
    }));
    hyps.into_iter()
        .next()
        .map(|p| p.labels)
        .unwrap_or_default()
}

/// A transducer hypothesis.
#[derive(Clone)]
struct THyp {
    labels: Vec<u32>,
    pred: u32,
    lm: u32,
    /// Model log-probability (merged hypotheses log-add it).
    am: f32,
    lm_score: f32,
    /// TDT: the hypothesis' frame and labels emitted on it.
    t: usize,
    syms: usize,
}

impl THyp {
    fn score(&self) -> f32 {
        self.am + self.lm_score
    }
}

/// Transducer beam search (modified beam search for an RNN-T; for a TDT, see the module doc).
pub fn beam_transducer<M: Transducer + Sync>(
    models: &[M],
    f: &Fusion,
    beam: usize,
    max_symbols: usize,
) -> Result<Vec<Vec<u32>>> {
    for m in models {
        f.check(m.width())?;
    }
    let beam = beam.max(1);
    Ok(models
        .par_iter()
        .map(|m| {
            if m.durations().is_empty() {
                rnnt_one(m, f, beam)
            } else {
                tdt_one(m, f, beam, max_symbols.max(1))
            }
        })
        .collect())
}

fn merge(next: &mut HashMap<(Vec<u32>, u32, usize), THyp>, h: THyp) {
    match next.entry((h.labels.clone(), h.pred, h.t)) {
        std::collections::hash_map::Entry::Occupied(mut e) => {
            let e = e.get_mut();
            e.am = log_add(e.am, h.am);
            e.syms = e.syms.min(h.syms);
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(h);
        }
    }
}

fn rnnt_one<M: Transducer>(m: &M, f: &Fusion, beam: usize) -> Vec<u32> {
    let w = m.width();
    let mut lab = vec![0f32; w];
    let mut hyps = vec![THyp {
        labels: Vec::new(),
        pred: m.start(),
        lm: lm_start(f),
        am: 0.0,
        lm_score: 0.0,
        t: 0,
        syms: 0,
    }];
    for t in 0..m.frames() {
        let mut next = HashMap::new();
        for h in &hyps {
            m.joint(t, h.pred, &mut lab, &mut []);
            merge(
                &mut next,
                THyp {
                    am: h.am + lab[0],
                    ..h.clone()
                },
            );
            for c in top_labels(&lab, beam) {
                let (add, lm) = lm_step(f, h.lm, c);
                let mut labels = h.labels.clone();
                labels.push(c as u32);
                merge(
                    &mut next,
                    THyp {
                        labels,
                        pred: m.next(t, h.pred, c as u32),
                        lm,
                        am: h.am + lab[c],
                        lm_score: h.lm_score + add,
                        t: 0,
                        syms: 0,
                    },
                );
            }
        }
        let mut all: Vec<THyp> = next.into_values().collect();
        all.sort_by(by_score(|h: &THyp| (h.score(), &h.labels[..])));
        all.truncate(beam);
        hyps = all;
    }
    best_final(hyps, f)
}

fn best_final(mut hyps: Vec<THyp>, f: &Fusion) -> Vec<u32> {
    hyps.sort_by(by_score(|h: &THyp| {
        (h.score() + lm_final(f, h.lm), &h.labels[..])
    }));
    hyps.into_iter()
        .next()
        .map(|h| h.labels)
        .unwrap_or_default()
}

fn tdt_one<M: Transducer>(m: &M, f: &Fusion, beam: usize, max_symbols: usize) -> Vec<u32> {
    let (w, ds) = (m.width(), m.durations().to_vec());
    let (mut lab, mut dur) = (vec![0f32; w], vec![0f32; ds.len()]);
    let frames = m.frames();
    let mut active = vec![THyp {
        labels: Vec::new(),
        pred: m.start(),
        lm: lm_start(f),
        am: 0.0,
        lm_score: 0.0,
        t: 0,
        syms: 0,
    }];
    let mut finished: Vec<THyp> = Vec::new();
    while !active.is_empty() {
        let mut next = HashMap::new();
        for h in &active {
            m.joint(h.t, h.pred, &mut lab, &mut dur);
            // The two best durations (blank moves on at least one frame).
            let order = top_labels_all(&dur);
            let blank_d: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&k| ds[k] > 0)
                .take(2)
                .collect();
            for k in blank_d {
                merge(
                    &mut next,
                    THyp {
                        am: h.am + lab[0] + dur[k],
                        t: h.t + ds[k] as usize,
                        syms: 0,
                        ..h.clone()
                    },
                );
            }
            let label_d: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&k| ds[k] > 0 || h.syms + 1 < max_symbols)
                .take(2)
                .collect();
            for c in top_labels(&lab, beam) {
                let (add, lm) = lm_step(f, h.lm, c);
                let pred = m.next(h.t, h.pred, c as u32);
                for &k in &label_d {
                    let mut labels = h.labels.clone();
                    labels.push(c as u32);
                    let d = ds[k] as usize;
                    merge(
                        &mut next,
                        THyp {
                            labels,
                            pred,
                            lm,
                            am: h.am + lab[c] + dur[k],
                            lm_score: h.lm_score + add,
                            t: h.t + d,
                            syms: if d == 0 { h.syms + 1 } else { 0 },
                        },
                    );
                }
            }
        }
        let mut all: Vec<THyp> = next.into_values().collect();
        all.sort_by(by_score(|h: &THyp| (h.score(), &h.labels[..])));
        active.clear();
        for h in all {
            if h.t >= frames {
                finished.push(h);
            } else if active.len() < beam {
                active.push(h);
            }
        }
        // Scores only fall as a hypothesis grows when no bonus can raise them: stop once the
        // best finished hypothesis beats every active one.
        if f.bonus <= 0.0 {
            let best_done = finished
                .iter()
                .map(|h| h.score() + lm_final(f, h.lm))
                .fold(f32::NEG_INFINITY, f32::max);
            active.retain(|h| h.score() > best_done);
        }
    }
    best_final(finished, f)
}

/// Every index of a row, best first (ties: the smaller index).
fn top_labels_all(row: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|a, b| row[*b].total_cmp(&row[*a]).then(a.cmp(b)));
    idx
}

/// An AED hypothesis.
#[derive(Clone)]
struct AHyp {
    labels: Vec<u32>,
    state: u32,
    lm: u32,
    score: f32,
}

/// AED beam search: hypotheses end with end of sequence (column 0) or at the length limit.
pub fn beam_aed<M: Aed + Sync>(models: &[M], f: &Fusion, beam: usize) -> Result<Vec<Vec<u32>>> {
    for m in models {
        f.check(m.width())?;
    }
    let beam = beam.max(1);
    Ok(models.par_iter().map(|m| aed_one(m, f, beam)).collect())
}

fn aed_one<M: Aed>(m: &M, f: &Fusion, beam: usize) -> Vec<u32> {
    let mut dist = vec![0f32; m.width()];
    let mut active = vec![AHyp {
        labels: Vec::new(),
        state: m.start(),
        lm: lm_start(f),
        score: 0.0,
    }];
    let mut finished: Vec<AHyp> = Vec::new();
    for _ in 0..m.max_len() {
        let mut cand = Vec::new();
        for h in &active {
            m.step(h.state, &mut dist);
            finished.push(AHyp {
                score: h.score + dist[0] + lm_final(f, h.lm),
                ..h.clone()
            });
            for c in top_labels(&dist, beam) {
                let (add, lm) = lm_step(f, h.lm, c);
                let mut labels = h.labels.clone();
                labels.push(c as u32);
                cand.push(AHyp {
                    labels,
                    state: m.next(h.state, c as u32),
                    lm,
                    score: h.score + dist[c] + add,
                });
            }
        }
        cand.sort_by(by_score(|h: &AHyp| (h.score, &h.labels[..])));
        cand.truncate(beam);
        active = cand;
        finished.sort_by(by_score(|h: &AHyp| (h.score, &h.labels[..])));
        finished.truncate(beam);
        // Without a bonus scores only fall: stop once the best finished beats every active one.
        let best_done = finished.first().map_or(f32::NEG_INFINITY, |h| h.score);
        let best_active = active.first().map_or(f32::NEG_INFINITY, |h| h.score);
        if active.is_empty() || (f.bonus <= 0.0 && best_done >= best_active) {
            break;
        }
    }
    finished.extend(active);
    finished.sort_by(by_score(|h: &AHyp| (h.score, &h.labels[..])));
    finished
        .into_iter()
        .next()
        .map(|h| h.labels)
        .unwrap_or_default()
}

//! Beam-search baselines with optional shallow fusion (the beam rows of 004's tables):
//!
//! - [`beam_ctc`]: CTC prefix beam search (blank / non-blank prefix probabilities, repeats
//!   collapsed), the LM scoring each new label;
//! - [`beam_transducer`]: for an RNN-T, modified beam search (icefall's: at most one label per
//!   frame, hypotheses with the same labels and prediction state merged by log-add); for a TDT,
//!   the same search over (label, duration) expansions with each hypothesis at its own frame;
//! - [`beam_aed`]: label-synchronous beam search, end of sequence competing with the labels for
//!   the beam and scored with the LM's final weight; ended hypotheses ranked by score per label
//!   (length-normalised), the search stopping when `beam` have ended.
//!
//! A hypothesis' score is its model log-probability plus, with an LM, `α·ln p_LM + β` per label
//! and `α·ln p_LM(</s>)` at the end. Per step each hypothesis expands its `beam` best labels (by
//! the model), and the `beam` best hypotheses are kept; ties go to the sequence created first,
//! so results are deterministic. Label sequences live in a prefix tree (no copies). Utterances are decoded in parallel (rayon).

use crate::arrays::NgramLm;
use crate::error::Result;
use crate::fusion::{check_inputs, check_row, CtxState, Fusion, UttContext};
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use rayon::prelude::*;
use std::collections::HashMap;

/// One utterance's final hypotheses (label sequences), best first.
pub type NBest = Vec<Vec<u32>>;

/// The best of each n-best list (empty where a search ended with no hypothesis).
fn firsts(lists: Vec<NBest>) -> Vec<Vec<u32>> {
    lists
        .into_iter()
        .map(|l| l.into_iter().next().unwrap_or_default())
        .collect()
}

/// The label sequences of one search as a prefix tree: a hypothesis holds a node, so extending
/// and merging hypotheses never copies label sequences. Node 0 is the empty sequence.
struct Trie {
    parent: Vec<u32>,
    label: Vec<u32>,
    child: HashMap<(u32, u32), u32>,
}

impl Trie {
    fn new() -> Self {
        Self {
            parent: vec![0],
            label: vec![0],
            child: HashMap::new(),
        }
    }

    /// The node of `node`'s sequence followed by `label`.
    fn extend(&mut self, node: u32, label: u32) -> u32 {
        let n = self.parent.len() as u32;
        *self.child.entry((node, label)).or_insert_with(|| {
            self.parent.push(node);
            self.label.push(label);
            n
        })
    }

    fn last(&self, node: u32) -> Option<u32> {
        (node != 0).then(|| self.label[node as usize])
    }

    fn labels(&self, mut node: u32) -> Vec<u32> {
        let mut out = Vec::new();
        while node != 0 {
            out.push(self.label[node as usize]);
            node = self.parent[node as usize];
        }
        out.reverse();
        out
    }
}

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

/// What scores a hypothesis besides the model, for one utterance: the LM (α·ln p + β per
/// label, α·ln p(</s>) at the end) and the utterance's context tree (bonus per label, the
/// take-back of a broken-off phrase at the end). States are (LM state, context state).
#[derive(Clone, Copy)]
struct Scorer<'a> {
    f: &'a Fusion<'a>,
    ctx: UttContext<'a>,
}

impl<'a> Scorer<'a> {
    fn new(f: &'a Fusion<'a>, utt: usize) -> Self {
        Self {
            f,
            ctx: f.contexts.get(utt),
        }
    }

    fn start(&self) -> (u32, CtxState) {
        (self.f.lm.map_or(0, NgramLm::bos_state), self.ctx.start())
    }

    fn step(&self, st: (u32, CtxState), label: usize) -> (f32, (u32, CtxState)) {
        let (mut add, mut next) = (0.0, (0, [0; 2]));
        if let Some(lm) = self.f.lm {
            let (w, t) = lm.score(st.0, label as u32 - 1);
            add = self.f.alpha * w + self.f.bonus;
            next.0 = t;
        }
        if self.ctx.is_some() {
            let (w, t) = self.ctx.score(st.1, label as u32 - 1);
            add += w;
            next.1 = t;
        }
        (add, next)
    }

    fn fin(&self, st: (u32, CtxState)) -> f32 {
        self.f
            .lm
            .map_or(0.0, |lm| self.f.alpha * lm.final_weight(st.0))
            + if self.ctx.is_some() {
                self.ctx.final_weight(st.1)
            } else {
                0.0
            }
    }
}

/// Best-first order with a deterministic tie-break (the node: first created first).
fn by_score<T>(key: impl Fn(&T) -> (f32, u32)) -> impl Fn(&T, &T) -> std::cmp::Ordering {
    move |a, b| {
        let (sa, la) = key(a);
        let (sb, lb) = key(b);
        sb.total_cmp(&sa).then_with(|| la.cmp(&lb))
    }
}

/// One prefix of CTC prefix beam search.
#[derive(Clone)]
struct Prefix {
    node: u32,
    /// ln P(prefix, ending in blank), ln P(prefix, ending in its last label).
    pb: f32,
    pnb: f32,
    lm: (u32, CtxState),
    lm_score: f32,
}

impl Prefix {
    fn score(&self) -> f32 {
        log_add(self.pb, self.pnb) + self.lm_score
    }
}

/// CTC prefix beam search of each score matrix (log-probabilities, column 0 blank): the best
/// label sequence of each.
pub fn beam_ctc(mats: &[&ScoreMatrix], f: &Fusion, beam: usize) -> Result<Vec<Vec<u32>>> {
    Ok(firsts(beam_ctc_nbest(mats, f, beam)?))
}

/// [`beam_ctc`]'s final beam per utterance, best first (at most `beam` label sequences): what
/// an n-best oracle error rate is measured on.
pub fn beam_ctc_nbest(mats: &[&ScoreMatrix], f: &Fusion, beam: usize) -> Result<Vec<NBest>> {
    crate::fusion::check_matrices(mats, f)?;
    let beam = beam.max(1);
    Ok(mats
        .par_iter()
        .enumerate()
        .map(|(i, m)| ctc_one(m, Scorer::new(f, i), beam))
        .collect())
}

fn ctc_one(m: &ScoreMatrix, sc: Scorer, beam: usize) -> NBest {
    let ninf = f32::NEG_INFINITY;
    let mut trie = Trie::new();
    let mut hyps = vec![Prefix {
        node: 0,
        pb: 0.0,
        pnb: ninf,
        lm: sc.start(),
        lm_score: 0.0,
    }];
    let mut next: HashMap<u32, Prefix> = HashMap::new();
    for t in 0..m.rows() {
        let row = m.row(t);
        let cands = top_labels(row, beam);
        next.clear();
        for h in &hyps {
            let total = log_add(h.pb, h.pnb);
            let last = trie.last(h.node);
            // Blank: the same prefix, now ending in blank.
            let e = next.entry(h.node).or_insert_with(|| Prefix {
                pb: ninf,
                pnb: ninf,
                ..h.clone()
            });
            e.pb = log_add(e.pb, total + row[0]);
            // The last label again without a blank between: collapsed into the same prefix.
            if let Some(l) = last {
                e.pnb = log_add(e.pnb, h.pnb + row[l as usize]);
            }
            for &c in &cands {
                // A repeat of the last label needs a blank between.
                let from = if last == Some(c as u32) { h.pb } else { total };
                if from == ninf {
                    continue;
                }
                let node = trie.extend(h.node, c as u32);
                let e = next.entry(node).or_insert_with(|| {
                    let (add, lm) = sc.step(h.lm, c);
                    Prefix {
                        node,
                        pb: ninf,
                        pnb: ninf,
                        lm,
                        lm_score: h.lm_score + add,
                    }
                });
                e.pnb = log_add(e.pnb, from + row[c]);
            }
        }
        hyps.clear();
        hyps.extend(next.values().cloned());
        hyps.sort_by(by_score(|p: &Prefix| (p.score(), p.node)));
        hyps.truncate(beam);
    }
    hyps.sort_by(by_score(|p: &Prefix| (p.score() + sc.fin(p.lm), p.node)));
    hyps.iter().map(|p| trie.labels(p.node)).collect()
}

/// A transducer hypothesis.
#[derive(Clone)]
struct THyp {
    node: u32,
    pred: u32,
    lm: (u32, CtxState),
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

/// Transducer beam search (modified beam search for an RNN-T; for a TDT, see the module doc):
/// the best label sequence of each utterance.
pub fn beam_transducer<M: Transducer + Sync>(
    models: &[M],
    f: &Fusion,
    beam: usize,
    max_symbols: usize,
) -> Result<Vec<Vec<u32>>> {
    Ok(firsts(beam_transducer_nbest(models, f, beam, max_symbols)?))
}

/// [`beam_transducer`]'s final hypotheses per utterance, best first (at most `beam`).
pub fn beam_transducer_nbest<M: Transducer + Sync>(
    models: &[M],
    f: &Fusion,
    beam: usize,
    max_symbols: usize,
) -> Result<Vec<NBest>> {
    check_inputs(f, models.iter().map(|m| m.width()))?;
    let beam = beam.max(1);
    models
        .par_iter()
        .enumerate()
        .map(|(i, m)| {
            if m.durations().is_empty() {
                rnnt_one(m, i, Scorer::new(f, i), beam)
            } else {
                tdt_one(m, i, Scorer::new(f, i), beam, max_symbols.max(1))
            }
        })
        .collect()
}

type MergeKey = (u32, u32, usize);

fn merge(next: &mut HashMap<MergeKey, THyp>, h: THyp) {
    match next.entry((h.node, h.pred, h.t)) {
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

fn start_hyp<M: Transducer>(m: &M, sc: Scorer) -> THyp {
    THyp {
        node: 0,
        pred: m.start(),
        lm: sc.start(),
        am: 0.0,
        lm_score: 0.0,
        t: 0,
        syms: 0,
    }
}

fn rnnt_one<M: Transducer>(m: &M, utt: usize, sc: Scorer, beam: usize) -> Result<NBest> {
    let mut lab = vec![0f32; m.width()];
    let mut trie = Trie::new();
    let mut hyps = vec![start_hyp(m, sc)];
    let mut next = HashMap::new();
    for t in 0..m.frames() {
        next.clear();
        for h in &hyps {
            m.joint(t, h.pred, &mut lab, &mut []);
            check_row(&lab, utt, "joint")?;
            merge(
                &mut next,
                THyp {
                    am: h.am + lab[0],
                    ..h.clone()
                },
            );
            for c in top_labels(&lab, beam) {
                let (add, lm) = sc.step(h.lm, c);
                merge(
                    &mut next,
                    THyp {
                        node: trie.extend(h.node, c as u32),
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
        hyps.clear();
        hyps.extend(next.values().cloned());
        hyps.sort_by(by_score(|h: &THyp| (h.score(), h.node)));
        hyps.truncate(beam);
    }
    Ok(best_final(hyps, sc, &trie))
}

fn best_final(mut hyps: Vec<THyp>, sc: Scorer, trie: &Trie) -> NBest {
    hyps.sort_by(by_score(|h: &THyp| (h.score() + sc.fin(h.lm), h.node)));
    hyps.iter().map(|h| trie.labels(h.node)).collect()
}

fn tdt_one<M: Transducer>(
    m: &M,
    utt: usize,
    sc: Scorer,
    beam: usize,
    max_symbols: usize,
) -> Result<NBest> {
    let (w, ds) = (m.width(), m.durations().to_vec());
    let (mut lab, mut dur) = (vec![0f32; w], vec![0f32; ds.len()]);
    let frames = m.frames();
    let mut trie = Trie::new();
    let mut active = vec![start_hyp(m, sc)];
    let mut finished: Vec<THyp> = Vec::new();
    let mut next = HashMap::new();
    while !active.is_empty() {
        next.clear();
        for h in &active {
            m.joint(h.t, h.pred, &mut lab, &mut dur);
            check_row(&lab, utt, "joint")?;
            check_row(&dur, utt, "duration head")?;
            // The two best durations (blank moves on at least one frame).
            let order = top_labels_all(&dur);
            let blank_d = order.iter().copied().filter(|&k| ds[k] > 0).take(2);
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
                let (add, lm) = sc.step(h.lm, c);
                let pred = m.next(h.t, h.pred, c as u32);
                let node = trie.extend(h.node, c as u32);
                for &k in &label_d {
                    let d = ds[k] as usize;
                    merge(
                        &mut next,
                        THyp {
                            node,
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
        let mut all: Vec<THyp> = next.values().cloned().collect();
        all.sort_by(by_score(|h: &THyp| (h.score(), h.node)));
        active.clear();
        for h in all {
            if h.t >= frames {
                finished.push(h);
            } else if active.len() < beam {
                active.push(h);
            }
        }
        // Without a bonus (insertion bonus or context bonuses) scores only fall as a hypothesis
        // grows: drop active hypotheses the best finished one already beats.
        if sc.f.bonus <= 0.0 && !sc.ctx.is_some() {
            let best_done = finished
                .iter()
                .map(|h| h.score() + sc.fin(h.lm))
                .fold(f32::NEG_INFINITY, f32::max);
            active.retain(|h| h.score() > best_done);
        }
    }
    Ok(best_final(finished, sc, &trie))
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
    node: u32,
    state: u32,
    lm: (u32, CtxState),
    score: f32,
    ended: bool,
    len: usize,
}

/// AED beam search: hypotheses end with end of sequence (column 0) or at the length limit; the
/// best label sequence of each utterance.
pub fn beam_aed<M: Aed + Sync>(models: &[M], f: &Fusion, beam: usize) -> Result<Vec<Vec<u32>>> {
    Ok(firsts(beam_aed_nbest(models, f, beam)?))
}

/// [`beam_aed`]'s ended hypotheses per utterance, best first by length-normalised score.
pub fn beam_aed_nbest<M: Aed + Sync>(models: &[M], f: &Fusion, beam: usize) -> Result<Vec<NBest>> {
    check_inputs(f, models.iter().map(|m| m.width()))?;
    let beam = beam.max(1);
    models
        .par_iter()
        .enumerate()
        .map(|(i, m)| aed_one(m, i, Scorer::new(f, i), beam))
        .collect()
}

fn aed_one<M: Aed>(m: &M, utt: usize, sc: Scorer, beam: usize) -> Result<NBest> {
    let mut dist = vec![0f32; m.width()];
    let mut trie = Trie::new();
    let mut active = vec![AHyp {
        node: 0,
        state: m.start(),
        lm: sc.start(),
        score: 0.0,
        ended: false,
        len: 0,
    }];
    let mut finished: Vec<AHyp> = Vec::new();
    for _ in 0..m.max_len() {
        let mut cand = Vec::new();
        for h in &active {
            m.step(h.state, &mut dist);
            check_row(&dist, utt, "step output")?;
            // End of sequence competes with the labels for the beam.
            cand.push(AHyp {
                score: h.score + dist[0] + sc.fin(h.lm),
                ended: true,
                ..h.clone()
            });
            for c in top_labels(&dist, beam) {
                let (add, lm) = sc.step(h.lm, c);
                cand.push(AHyp {
                    node: trie.extend(h.node, c as u32),
                    state: m.next(h.state, c as u32),
                    lm,
                    score: h.score + dist[c] + add,
                    ended: false,
                    len: h.len + 1,
                });
            }
        }
        cand.sort_by(by_score(|h: &AHyp| (h.score, h.node * 2 + h.ended as u32)));
        cand.truncate(beam);
        active.clear();
        for h in cand {
            if h.ended {
                finished.push(h);
            } else {
                active.push(h);
            }
        }
        if active.is_empty() || finished.len() >= beam {
            break;
        }
    }
    // Hypotheses cut at the length limit count as they are when none ended.
    if finished.is_empty() {
        finished = active;
    }
    // Length-normalised, as AED beam searches rank ended hypotheses (a sum of log-probabilities
    // favours short ones).
    let norm = |h: &AHyp| (h.score / (h.len + 1) as f32, h.node);
    finished.sort_by(by_score(norm));
    Ok(finished.iter().map(|h| trie.labels(h.node)).collect())
}

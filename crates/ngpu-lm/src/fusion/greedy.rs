//! Greedy decoding with fusion for each model type: CTC, transducer (RNN-T, TDT) and AED,
//! in lockstep batches run in parallel.

use super::checks::*;
use super::contexts::*;
use super::settings::*;
use super::stage::*;
use crate::error::Result;
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use rayon::prelude::*;

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

pub(super) fn ctc_batch(mats: &[&ScoreMatrix], offset: usize, f: &Fusion) -> Result<Vec<Vec<u32>>> {
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

pub(super) struct TRow<'c> {
    pub(super) t: usize,
    pub(super) pred: u32,
    pub(super) lm: u32,
    pub(super) ctx: UttContext<'c>,
    pub(super) cs: CtxState,
    pub(super) syms: usize,
    pub(super) out: Vec<u32>,
}

pub(super) fn transducer_batch<M: Transducer>(
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

pub(super) fn aed_batch<M: Aed>(models: &[M], offset: usize, f: &Fusion) -> Result<Vec<Vec<u32>>> {
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
pub(super) fn aed_choice(
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

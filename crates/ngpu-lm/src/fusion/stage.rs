//! The label stage every model type shares: for the rows whose label the LM decides, one
//! batched LM query (full or pruned) and the context bonuses, then each row's fused choice.

use super::contexts::*;
use super::settings::*;
use crate::arrays::NgramLm;
use crate::error::Result;

/// First index of the largest value (values finite: checked on input). Two passes that the
/// compiler vectorises, the maximum then its first position, rather than one branchy pass.
pub fn argmax(row: &[f32]) -> usize {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    row.iter().position(|&x| x == max).unwrap_or(0)
}

/// A row whose label the LM (and/or its context tree) decides: its model output, LM state, its
/// context tree and state, a column it may not take (CTC's previous label; 0 when none) and the
/// acoustic best column.
pub(super) struct Pending<'r> {
    pub(super) row: &'r [f32],
    pub(super) state: u32,
    pub(super) ctx: UttContext<'r>,
    pub(super) cstate: CtxState,
    pub(super) exclude: u32,
    pub(super) best: usize,
}

/// Scratch of the LM stage.
#[derive(Default)]
pub(super) struct LmScratch {
    pub(super) states: Vec<u32>,
    pub(super) scores: Vec<f32>,
    pub(super) next: Vec<u32>,
    pub(super) ctx: CtxScratch,
}

/// A chosen label: (column, next LM state, next context state).
pub(super) type Choice = (u32, u32, CtxState);

/// The LM's full-vocabulary scores and next states of every state in `states` (row `i` at
/// `[i·V, (i+1)·V)`): one batched query on the device when there is one, else per row on the
/// CPU (the same values bit for bit).
pub(super) fn lm_rows(
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
pub(super) fn label_stage(f: &Fusion, pend: &[Pending], s: &mut LmScratch) -> Result<Vec<Choice>> {
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

/// Context bonuses and next states of every row that has trees (rows without are left as they
/// are): [`UttContext::advance_row`] per row on the CPU, or one rooted query of all the rows'
/// trees on the device, summed per row in the same order (0, then the shared tree, then the
/// utterance's own), so both give the same bits.
pub(super) fn ctx_rows(
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

//! pocketsphinx's quantised phonetically-tied scoring (ptm_mgau.c), reproduced exactly: per
//! codebook and stream the top 4 Gaussians (the previous frame's four re-scored first, then
//! every other Gaussian inserted if it beats the worst, with the same early exits and ties),
//! Gaussian log-densities in integer log base 1.0001, normalised per stream to the best
//! codebook (`>> 10`, clamped at 96), plus the 8-bit mixture weights, log-added with the 8-bit
//! table, summed over streams, minus the frame's best senone. Scores are negated: 0 is the best
//! senone, larger is worse, one unit ≈ 0.1024 nats.
//!
//! Laid out for speed without changing a bit: Gaussians are evaluated [`LANES`] at a time, each
//! lane summing its dimensions in pocketsphinx's order (a group is dropped early only when every
//! lane is already below the threshold, which pocketsphinx's own early exit would drop too,
//! since a density only falls as dimensions are added), and each codebook's mixture weights are
//! stored senone-contiguous for the mixing.

use crate::features::FEAT_DIM;
use crate::Model;

/// Gaussians kept per codebook and stream (pocketsphinx's `-topn`).
pub const TOPN: usize = 4;
/// pocketsphinx's default `-varfloor`.
pub const VAR_FLOOR: f32 = 1e-4;
/// Bits dropped from Gaussian scores before mixing (`SENSCR_SHIFT`).
const SHIFT: i32 = 10;
/// Largest negated normalised Gaussian score (`MAX_NEG_ASCR`).
const MAX_NEG_ASCR: i32 = 96;
/// Gaussians evaluated together, one per lane.
pub const LANES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
struct TopN {
    cw: usize,
    score: i32,
}

/// The scorer: precomputed Gaussians and tables (immutable), shareable across utterances.
#[derive(Debug, Clone)]
pub struct PtmScorer {
    n_cb: usize,
    n_stream: usize,
    n_density: usize,
    veclen: Vec<usize>,
    /// `[cb][stream][g][dim]` means, as read.
    means: Vec<f32>,
    /// 1/(2σ²) in log-base-1.0001 units, as pocketsphinx precomputes.
    inv_var: Vec<f32>,
    /// Σ log(1/√(2πσ²)) per Gaussian.
    det: Vec<f32>,
    /// Per (codebook, stream) block, groups of [`LANES`] Gaussians: `[group][dim][lane]` means
    /// and inverse variances (padding lanes: mean 0, variance 0, `det` −∞).
    lane_means: Vec<f32>,
    lane_inv_var: Vec<f32>,
    lane_det: Vec<f32>,
    /// Per (codebook, stream): where its lane groups start in `lane_means` (and `lane_det`).
    lane_at: Vec<(usize, usize)>,
    /// Per codebook, `[stream][gaussian][k]`: the weight of its k-th senone (`cb_senones`).
    cb_mixw: Vec<Vec<u8>>,
    n_senone: usize,
    /// The senones of each codebook (mixing runs codebook by codebook: the weight rows of its
    /// top Gaussians are read in order instead of at random).
    cb_senones: Vec<Vec<u32>>,
    /// Per (codebook, stream): where its Gaussians' vectors start in `means`/`inv_var`.
    block_at: Vec<usize>,
    /// log₁.₀₀₀₁(1 + 1.0001^−d) >> 10, by d.
    add_table: Vec<u8>,
}

impl PtmScorer {
    /// Precomputes what pocketsphinx does at load (`gauden_dist_precompute`, the 8-bit
    /// log-add table).
    pub fn new(m: &Model) -> Self {
        let inv_ln_base = 1.0 / 1.0001f64.ln();
        let logmath_log = |p: f64| -> i32 {
            if p <= 0.0 {
                i32::MIN >> 2
            } else {
                (p.ln() * inv_ln_base) as i32
            }
        };
        let g = &m.means;
        let block: usize = g.veclen.iter().sum();
        let mut inv_var = Vec::with_capacity(m.variances.data.len());
        let mut det = Vec::with_capacity(g.n_codebook * g.n_stream * g.n_density);
        for cb in 0..g.n_codebook {
            for s in 0..g.n_stream {
                for d in 0..g.n_density {
                    let var = m.variances.vector(cb, s, d);
                    let mut acc = 0f32;
                    for &v in var {
                        let v = if v < VAR_FLOOR { VAR_FLOOR } else { v };
                        acc += logmath_log(1.0 / (v as f64 * 2.0 * std::f64::consts::PI).sqrt())
                            as f32;
                        inv_var.push(((1.0 / (v as f64 * 2.0)) * inv_ln_base) as i32 as f32);
                    }
                    det.push(acc);
                }
            }
        }
        debug_assert_eq!(inv_var.len(), g.n_codebook * g.n_density * block);
        let mut cb_senones = vec![Vec::new(); g.n_codebook];
        for (sen, &cb) in m.senone_codebook.iter().enumerate() {
            cb_senones[cb].push(sen as u32);
        }
        let groups = g.n_density.div_ceil(LANES);
        let (mut lane_means, mut lane_inv_var, mut lane_det) = (Vec::new(), Vec::new(), Vec::new());
        let mut lane_at = Vec::with_capacity(g.n_codebook * g.n_stream);
        for cb in 0..g.n_codebook {
            for s in 0..g.n_stream {
                let len = g.veclen[s];
                let base =
                    cb * block * g.n_density + g.veclen[..s].iter().sum::<usize>() * g.n_density;
                lane_at.push((lane_means.len(), lane_det.len()));
                for grp in 0..groups {
                    for j in 0..len {
                        for l in 0..LANES {
                            let d = grp * LANES + l;
                            if d < g.n_density {
                                lane_means.push(g.data[base + d * len + j]);
                                lane_inv_var.push(inv_var[base + d * len + j]);
                            } else {
                                lane_means.push(0.0);
                                lane_inv_var.push(0.0);
                            }
                        }
                    }
                    for l in 0..LANES {
                        let d = grp * LANES + l;
                        lane_det.push(if d < g.n_density {
                            det[(cb * g.n_stream + s) * g.n_density + d]
                        } else {
                            f32::NEG_INFINITY
                        });
                    }
                }
            }
        }
        let n_senone = m.mdef.n_senone;
        let cb_mixw = cb_senones
            .iter()
            .map(|sens: &Vec<u32>| {
                let mut w = Vec::with_capacity(g.n_stream * g.n_density * sens.len());
                for f in 0..g.n_stream {
                    for d in 0..g.n_density {
                        let row = &m.mixw.data[(f * g.n_density + d) * n_senone..][..n_senone];
                        w.extend(sens.iter().map(|&sen| row[sen as usize]));
                    }
                }
                w
            })
            .collect();
        let block_at = (0..g.n_codebook)
            .flat_map(|cb| {
                let veclen = &g.veclen;
                (0..g.n_stream).map(move |s| {
                    cb * block * g.n_density + veclen[..s].iter().sum::<usize>() * g.n_density
                })
            })
            .collect();
        Self {
            n_cb: g.n_codebook,
            n_stream: g.n_stream,
            n_density: g.n_density,
            veclen: g.veclen.clone(),
            means: g.data.clone(),
            inv_var,
            det,
            lane_means,
            lane_inv_var,
            lane_det,
            lane_at,
            cb_mixw,
            n_senone: m.mdef.n_senone,
            cb_senones,
            block_at,
            add_table: add_table(1.0001, SHIFT),
        }
    }

    /// Senones scored per frame.
    pub fn n_senone(&self) -> usize {
        self.n_senone
    }

    /// Scores every senone on every frame of one utterance (fresh top-N state, as a fresh
    /// decoder): `out[t][s]`, 0 for the frame's best senone.
    pub fn score(&self, feats: &[[f32; FEAT_DIM]]) -> Vec<Vec<i16>> {
        let mut topn: Vec<TopN> = (0..self.n_cb * self.n_stream)
            .flat_map(|_| {
                (0..TOPN).map(|m| TopN {
                    cw: m,
                    score: i32::MIN,
                })
            })
            .collect();
        feats
            .iter()
            .map(|f| {
                self.codebooks(f, &mut topn);
                self.senones(&topn)
            })
            .collect()
    }

    /// The offset of Gaussian `g`'s vector of `stream` in `cb` (means and inverse variances).
    fn vec_at(&self, cb: usize, stream: usize, g: usize) -> usize {
        self.block_at[cb * self.n_stream + stream] + g * self.veclen[stream]
    }

    /// Top-N per codebook and stream for one frame (`ptm_mgau_codebook_eval`), then the
    /// per-stream normalisation (`ptm_mgau_codebook_norm`).
    fn codebooks(&self, f: &[f32; FEAT_DIM], topn: &mut [TopN]) {
        let mut off = 0;
        let mut streams = Vec::with_capacity(self.n_stream);
        for &l in &self.veclen {
            streams.push(&f[off..off + l]);
            off += l;
        }
        // First re-score the previous frame's top N, then the rest of each codebook.
        for cb in 0..self.n_cb {
            for (s, z) in streams.iter().enumerate() {
                let t = &mut topn[(cb * self.n_stream + s) * TOPN..][..TOPN];
                for i in 0..TOPN {
                    let d = self.density(cb, s, t[i].cw, z, None).unwrap_or(f32::MIN);
                    let score = if d < i32::MIN as f32 {
                        i32::MIN
                    } else {
                        d as i32
                    };
                    // insertion_sort_topn: ties keep their order.
                    t[i].score = score;
                    let v = t[i];
                    let mut j = i;
                    while j > 0 && score > t[j - 1].score {
                        t[j] = t[j - 1];
                        j -= 1;
                    }
                    t[j] = v;
                }
            }
        }
        for cb in 0..self.n_cb {
            for (s, z) in streams.iter().enumerate() {
                let t = &mut topn[(cb * self.n_stream + s) * TOPN..][..TOPN];
                self.insert_better(cb, s, z, t);
            }
        }
        for s in 0..self.n_stream {
            let norm = (0..self.n_cb)
                .map(|cb| topn[(cb * self.n_stream + s) * TOPN].score >> SHIFT)
                .fold(-0x2000_0000, i32::max); // WORST_SCORE
            for cb in 0..self.n_cb {
                for x in &mut topn[(cb * self.n_stream + s) * TOPN..][..TOPN] {
                    x.score = (-((x.score >> SHIFT) - norm)).min(MAX_NEG_ASCR);
                }
            }
        }
    }

    /// Every other Gaussian of (`cb`, `s`) inserted into `t` when it beats the worst, in
    /// pocketsphinx's order and with its ties (`insertion_sort_cb`), [`LANES`] at a time: each
    /// lane's density sums its dimensions in pocketsphinx's order, and a group is dropped
    /// early only when every lane is already below the threshold it started with (the
    /// threshold only rises, and a density only falls as dimensions are added, so each of those
    /// Gaussians would have been dropped one by one too).
    fn insert_better(&self, cb: usize, s: usize, z: &[f32], t: &mut [TopN]) {
        let len = self.veclen[s];
        let z = &z[..len];
        let (mean_at, det_at) = self.lane_at[cb * self.n_stream + s];
        for grp in 0..self.n_density.div_ceil(LANES) {
            let m = &self.lane_means[mean_at + grp * len * LANES..][..len * LANES];
            let v = &self.lane_inv_var[mean_at + grp * len * LANES..][..len * LANES];
            let mut d: [f32; LANES] = self.lane_det[det_at + grp * LANES..][..LANES]
                .try_into()
                .expect("LANES values");
            let t0 = t[TOPN - 1].score as f32;
            let mut dropped = false;
            for (j, &zj) in z.iter().enumerate() {
                if j % 4 == 0 && d.iter().all(|&x| x < t0) {
                    dropped = true;
                    break;
                }
                let (mj, vj) = (&m[j * LANES..][..LANES], &v[j * LANES..][..LANES]);
                for l in 0..LANES {
                    let diff = zj - mj[l];
                    d[l] -= diff * diff * vj[l];
                }
            }
            if dropped {
                continue;
            }
            for (l, &dl) in d.iter().enumerate() {
                let g = grp * LANES + l;
                if g >= self.n_density {
                    break;
                }
                let thresh = t[TOPN - 1].score as f32;
                if dl < thresh || t.iter().any(|x| x.cw == g) {
                    continue;
                }
                let score = if dl < i32::MIN as f32 {
                    i32::MIN
                } else {
                    dl as i32
                };
                // insertion_sort_cb: above every entry it ties or beats; the worst drops.
                let mut pos = TOPN - 1;
                while pos > 0 && score >= t[pos - 1].score {
                    t[pos] = t[pos - 1];
                    pos -= 1;
                }
                t[pos] = TopN { cw: g, score };
            }
        }
    }

    /// The log density of Gaussian `g` (pocketsphinx's `f32` arithmetic); with a threshold,
    /// `None` when it falls below at a check after dimension 1, 5, 9, … (its early exit).
    fn density(
        &self,
        cb: usize,
        s: usize,
        g: usize,
        z: &[f32],
        thresh: Option<f32>,
    ) -> Option<f32> {
        let at = self.vec_at(cb, s, g);
        let len = self.veclen[s];
        let (mean, var) = (&self.means[at..at + len], &self.inv_var[at..at + len]);
        let mut d = self.det[(cb * self.n_stream + s) * self.n_density + g];
        let t = thresh.unwrap_or(f32::NEG_INFINITY);
        let head = len % 4;
        let z = &z[..len];
        for j in 0..head {
            if d < t {
                return None;
            }
            let diff = z[j] - mean[j];
            d -= diff * diff * var[j];
        }
        for ((z4, m4), v4) in z[head..]
            .chunks_exact(4)
            .zip(mean[head..].chunks_exact(4))
            .zip(var[head..].chunks_exact(4))
        {
            if d < t {
                return None;
            }
            for k in 0..4 {
                let diff = z4[k] - m4[k];
                d -= diff * diff * v4[k];
            }
        }
        Some(d)
    }

    /// Every senone's score from the normalised top N (`ptm_mgau_senone_eval`), codebook by
    /// codebook; each senone still log-adds its Gaussians in pocketsphinx's order.
    fn senones(&self, topn: &[TopN]) -> Vec<i16> {
        let mut raw = vec![0i32; self.n_senone];
        let mut fden: Vec<i32> = Vec::new();
        for (cb, sens) in self.cb_senones.iter().enumerate() {
            let (w, n) = (&self.cb_mixw[cb], sens.len());
            for f in 0..self.n_stream {
                let t = &topn[(cb * self.n_stream + f) * TOPN..][..TOPN];
                let row = |x: &TopN| &w[(f * self.n_density + x.cw) * n..][..n];
                fden.clear();
                fden.extend(row(&t[0]).iter().map(|&m| m as i32 + t[0].score));
                for x in &t[1..] {
                    for (d, &m) in fden.iter_mut().zip(row(x)) {
                        *d = self.fast_add(*d, m as i32 + x.score);
                    }
                }
                for (&sen, &d) in sens.iter().zip(&fden) {
                    raw[sen as usize] += d;
                }
            }
        }
        let best = raw.iter().copied().min().unwrap_or(0);
        // pocketsphinx stores each score in an int16, then subtracts the best there.
        raw.iter()
            .map(|&r| (r as i16).wrapping_sub(best as i16))
            .collect()
    }

    /// `fast_logmath_add` on negated log probabilities.
    fn fast_add(&self, x: i32, y: i32) -> i32 {
        let (d, r) = if x > y { (x - y, y) } else { (y - x, x) };
        r - self.add_table[d as usize] as i32
    }
}

/// pocketsphinx's log-add table for `base` with `shift` bits dropped (`logmath_init` with a
/// table), at least 256 entries.
fn add_table(base: f64, shift: i32) -> Vec<u8> {
    let inv = 1.0 / base.ln();
    let k_of = |byx: f64| -> i32 {
        let lobyx = (1.0 + byx).ln() * inv;
        (lobyx + 0.5 * (1 << shift) as f64) as i32 >> shift
    };
    let mut byx = 1.0f64;
    let mut i: usize = 0;
    loop {
        if k_of(byx) <= 0 {
            break;
        }
        byx /= base;
        i += 1;
    }
    let size = (i >> shift).max(255) + 1;
    let mut table = vec![0u8; size];
    let mut byx = 1.0f64;
    let mut i = 0usize;
    loop {
        let k = k_of(byx);
        let slot = &mut table[i >> shift];
        if *slot == 0 {
            *slot = k as u8;
        }
        if k <= 0 {
            break;
        }
        byx /= base;
        i += 1;
    }
    table
}

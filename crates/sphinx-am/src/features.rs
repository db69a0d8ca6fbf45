//! From cepstra to the model's features, as pocketsphinx does for a whole utterance
//! (`feat_s2mfc2feat_block_utt`, cmn.c, feat.c's `1s_c_d_dd`): batch cepstral mean
//! normalisation over the frames whose c0 is not negative, then each frame's 13 cepstra, their
//! deltas `c[t+2] − c[t−2]` and double deltas `(c[t+3] − c[t−1]) − (c[t+1] − c[t−3])`, the
//! utterance's first and last frames repeated three times at its edges.

use crate::frontend::NCEP;

/// Feature dimensions: cepstra, deltas, double deltas.
pub const FEAT_DIM: usize = 3 * NCEP;

/// Batch CMN in place (pocketsphinx's `cmn` without variance normalisation): `f32` sums over
/// the frames with c0 ≥ 0, their mean subtracted from every frame. Returns the mean (zeros
/// when no frame qualifies: nothing is subtracted then… as pocketsphinx would divide by 0).
pub fn batch_cmn(cep: &mut [[f32; NCEP]]) -> [f32; NCEP] {
    let mut sum = [0f32; NCEP];
    let mut n = 0u32;
    for c in cep.iter().filter(|c| c[0] >= 0.0) {
        for (s, x) in sum.iter_mut().zip(c) {
            *s += x;
        }
        n += 1;
    }
    if n == 0 {
        return [0.0; NCEP];
    }
    let mean = sum.map(|s| s / n as f32);
    for c in cep.iter_mut() {
        for (x, m) in c.iter_mut().zip(&mean) {
            *x -= m;
        }
    }
    mean
}

/// The `1s_c_d_dd` features of (already normalised) cepstra.
///
/// ```
/// use sphinx_am::features::{deltas, FEAT_DIM};
/// let cep: Vec<[f32; 13]> = (0..5).map(|t| [t as f32; 13]).collect();
/// let f = deltas(&cep);
/// assert_eq!(f.len(), 5);
/// assert_eq!(f[2][13], 4.0); // c[4] − c[0]
/// assert_eq!(f[0][13], 2.0); // c[2] − c[0], the left edge repeating c[0]
/// assert_eq!(f[2][26], 0.0); // (c[5→4] − c[1]) − (c[3] − c[−1→0])
/// # assert_eq!(f[0].len(), FEAT_DIM);
/// ```
pub fn deltas(cep: &[[f32; NCEP]]) -> Vec<[f32; FEAT_DIM]> {
    let n = cep.len() as isize;
    let at = |t: isize| &cep[t.clamp(0, n - 1) as usize];
    (0..n)
        .map(|t| {
            let mut f = [0f32; FEAT_DIM];
            let (c, w, w_) = (at(t), at(t + 2), at(t - 2));
            let (w1, _w1, w_1, _w_1) = (at(t + 3), at(t - 1), at(t + 1), at(t - 3));
            for i in 0..NCEP {
                f[i] = c[i];
                f[NCEP + i] = w[i] - w_[i];
                let d1 = w1[i] - _w1[i];
                let d2 = w_1[i] - _w_1[i];
                f[2 * NCEP + i] = d1 - d2;
            }
            f
        })
        .collect()
}

/// Batch CMN then deltas: the features pocketsphinx scores for a whole utterance.
pub fn utterance_features(mut cep: Vec<[f32; NCEP]>) -> Vec<[f32; FEAT_DIM]> {
    batch_cmn(&mut cep);
    deltas(&cep)
}

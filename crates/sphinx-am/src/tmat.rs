//! HMM transition matrices (`transition_matrices`): per matrix, `n_state` source states ×
//! `n_state + 1` targets (the last is the exit), probabilities (SphinxBase's `tmat_init`).

use crate::bytes::{read_model_file, Cursor};
use crate::error::Result;
use crate::s3;
use std::path::Path;

/// Transition matrices: the file holds unnormalised counts; [`TransitionMatrices::prob`] gives
/// them as pocketsphinx uses them (each row normalised, non-zero values floored at
/// [`TMAT_FLOOR`], normalised again).
#[derive(Debug, Clone, PartialEq)]
pub struct TransitionMatrices {
    /// Number of matrices (one per base phone in en-us).
    pub n_tmat: usize,
    /// Emitting states per matrix.
    pub n_state: usize,
    /// `[tmat][from][to]` flattened, `to` in `0..=n_state` (`n_state` = exit): normalised.
    pub probs: Vec<f32>,
}

/// pocketsphinx's default `-tmatfloor`.
pub const TMAT_FLOOR: f64 = 1e-4;

impl TransitionMatrices {
    /// Reads a transition-matrix file (or its `.gz`).
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// let t = sphinx_am::TransitionMatrices::read(&dir.join("transition_matrices")).unwrap();
    /// assert_eq!((t.n_tmat, t.n_state), (42, 3));
    /// let stay = t.prob(0, 0, 0);
    /// assert!(stay > 0.0 && stay < 1.0);
    /// ```
    pub fn read(path: &Path) -> Result<Self> {
        let (path, data) = read_model_file(path)?;
        let mut c = Cursor::new(&path, &data);
        let header = s3::read_header(&mut c)?;
        let n_tmat = c.count("number of matrices", 1 << 15)?;
        let n_src = c.count("number of source states", 64)?;
        let n_dst = c.count("number of target states", 65)?;
        let n = c.count("number of values", 1 << 28)?;
        if n_dst != n_src + 1 {
            return Err(c.error(format!(
                "{n_src} source states need {} targets (with the exit), the file says {n_dst}",
                n_src + 1
            )));
        }
        if n != n_tmat * n_src * n_dst {
            return Err(c.error(format!(
                "holds {n} values, but {n_tmat} matrices × {n_src} × {n_dst} make {}",
                n_tmat * n_src * n_dst
            )));
        }
        let mut sum = s3::sum_i32(0, &[n_tmat as i32, n_src as i32, n_dst as i32, n as i32]);
        let probs = c.f32s(n, "transition probabilities", &mut sum)?;
        s3::finish(&mut c, &header, sum)?;
        if let Some(i) = probs.iter().position(|p| !p.is_finite() || *p < 0.0) {
            return Err(c.error(format!(
                "transition count {} (value {i}) is negative or not finite",
                probs[i]
            )));
        }
        let mut probs = probs;
        for (r, row) in probs.chunks_exact_mut(n_dst).enumerate() {
            let norm = |row: &mut [f32]| {
                let sum: f64 = row.iter().map(|&x| x as f64).sum();
                for x in row.iter_mut() {
                    *x = (*x as f64 / sum) as f32;
                }
                sum
            };
            if norm(row) <= 0.0 {
                return Err(c.error(format!(
                    "matrix {} row {}: every transition is 0",
                    r / n_src,
                    r % n_src
                )));
            }
            for x in row.iter_mut() {
                if *x != 0.0 && (*x as f64) < TMAT_FLOOR {
                    *x = TMAT_FLOOR as f32;
                }
            }
            norm(row);
        }
        Ok(Self {
            n_tmat,
            n_state: n_src,
            probs,
        })
    }

    /// P(`to` | `from`) in matrix `t` (`to` = `n_state` is the exit).
    pub fn prob(&self, t: usize, from: usize, to: usize) -> f32 {
        self.probs[(t * self.n_state + from) * (self.n_state + 1) + to]
    }
}

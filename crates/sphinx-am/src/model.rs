//! A whole model folder, read and cross-checked: every file agrees with the others on the
//! senones, streams, Gaussians and transition matrices.

use crate::error::{Result, SphinxError};
use crate::{FeatParams, Gaussians, Mdef, MixtureWeights, TransitionMatrices};
use std::path::{Path, PathBuf};

/// A semi-continuous (PTM) Sphinx acoustic model as shipped.
#[derive(Debug, Clone)]
pub struct Model {
    /// The folder it was read from.
    pub dir: PathBuf,
    /// Phones, triphones, senone sequences.
    pub mdef: Mdef,
    /// Gaussian means.
    pub means: Gaussians,
    /// Gaussian (diagonal) variances.
    pub variances: Gaussians,
    /// Quantised mixture weights.
    pub mixw: MixtureWeights,
    /// HMM transitions.
    pub tmat: TransitionMatrices,
    /// Front-end settings the model was trained with.
    pub feat: FeatParams,
    /// Filler words and their phones (`noisedict`: `<sil> SIL`, `[NOISE] +NSN+`, …).
    pub fillers: Vec<(String, String)>,
    /// Each senone's codebook (its base phone).
    pub senone_codebook: Vec<usize>,
}

impl Model {
    /// Reads `mdef`, `means`, `variances`, `sendump`, `transition_matrices`, `feat.params` and
    /// `noisedict` from `dir` (each file or its `.gz`).
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// let m = sphinx_am::Model::load(&dir).unwrap();
    /// assert_eq!(m.mdef.n_senone, 5126);
    /// assert_eq!(m.senone_codebook.len(), 5126);
    /// ```
    pub fn load(dir: &Path) -> Result<Self> {
        let mdef = Mdef::read(&dir.join("mdef"))?;
        let means = Gaussians::read(&dir.join("means"))?;
        let variances = Gaussians::read(&dir.join("variances"))?;
        let mixw = MixtureWeights::read(&dir.join("sendump"))?;
        let tmat = TransitionMatrices::read(&dir.join("transition_matrices"))?;
        let feat = FeatParams::read(&dir.join("feat.params"))?;
        let fillers = read_noisedict(&dir.join("noisedict"))?;
        let bad = |what: String| SphinxError::Mismatch {
            dir: dir.to_path_buf(),
            what,
        };
        if let Some(m) = feat.get("model").filter(|&m| m != "ptm") {
            return Err(bad(format!(
                "feat.params says -model {m}: only phonetically-tied (ptm) models are read"
            )));
        }
        if (
            means.n_codebook,
            means.n_stream,
            means.n_density,
            &means.veclen,
        ) != (
            variances.n_codebook,
            variances.n_stream,
            variances.n_density,
            &variances.veclen,
        ) {
            return Err(bad(format!(
                "means ({} codebooks × {} streams × {}) and variances ({} × {} × {}) differ",
                means.n_codebook,
                means.n_stream,
                means.n_density,
                variances.n_codebook,
                variances.n_stream,
                variances.n_density
            )));
        }
        if means.n_codebook != mdef.n_ci() {
            return Err(bad(format!(
                "{} codebooks for {} base phones: a PTM model has one per base phone",
                means.n_codebook,
                mdef.n_ci()
            )));
        }
        if (mixw.n_stream, mixw.n_density, mixw.n_senone)
            != (means.n_stream, means.n_density, mdef.n_senone)
        {
            return Err(bad(format!(
                "sendump holds {} streams × {} Gaussians × {} senones; the Gaussians and mdef \
                 say {} × {} × {}",
                mixw.n_stream,
                mixw.n_density,
                mixw.n_senone,
                means.n_stream,
                means.n_density,
                mdef.n_senone
            )));
        }
        if (tmat.n_tmat, tmat.n_state) != (mdef.n_tmat, mdef.n_emit_state) {
            return Err(bad(format!(
                "transition_matrices holds {} matrices of {} states; mdef says {} of {}",
                tmat.n_tmat, tmat.n_state, mdef.n_tmat, mdef.n_emit_state
            )));
        }
        let senone_codebook = mdef
            .senone_bases()
            .into_iter()
            .enumerate()
            .map(|(s, b)| b.ok_or_else(|| bad(format!("senone {s} belongs to no phone"))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            dir: dir.to_path_buf(),
            mdef,
            means,
            variances,
            mixw,
            tmat,
            feat,
            fillers,
            senone_codebook,
        })
    }
}

/// `noisedict`: one `word phone` per line.
fn read_noisedict(path: &Path) -> Result<Vec<(String, String)>> {
    let (path, data) = crate::bytes::read_model_file(path)?;
    let text = String::from_utf8_lossy(&data);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (None, ..) => {}
            (Some(w), Some(p), None) => out.push((w.to_string(), p.to_string())),
            _ => {
                return Err(SphinxError::Format {
                    path: path.clone(),
                    what: format!("line {}: '{line}' is not 'word phone'", i + 1),
                })
            }
        }
    }
    Ok(out)
}

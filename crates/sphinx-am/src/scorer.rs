//! Speech to senone log-likelihoods in one call: the model's front end (pocketsphinx's MFCC,
//! batch CMN, deltas) and its quantised PTM scoring, as a WFST decoder reads them. Built once
//! per model and shared by every utterance and thread.

use crate::error::Result;
use crate::features::utterance_features;
use crate::frontend::{Frontend, FrontendConfig};
use crate::hclg::log_likelihoods;
use crate::ptm::PtmScorer;
use crate::Model;
use ctx_core::scores::ScoreMatrix;
use std::path::Path;

/// Front end and senone scorer of one model.
#[derive(Debug, Clone)]
pub struct AudioScorer {
    frontend: Frontend,
    ptm: PtmScorer,
    rate: u32,
}

impl AudioScorer {
    /// The front end `feat.params` describes and the model's scorer.
    ///
    /// ```
    /// # let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    /// let model = sphinx_am::Model::load(&root.join("datasets/sphinx-en-us")).unwrap();
    /// let am = sphinx_am::scorer::AudioScorer::new(&model).unwrap();
    /// let m = am.score_wav(&root.join("datasets/pocketsphinx-test/cards/001.wav")).unwrap();
    /// // 100 frames a second, one column per senone.
    /// assert_eq!((m.rows(), m.cols()), (108, 5126));
    /// ```
    pub fn new(model: &Model) -> Result<Self> {
        let cfg = FrontendConfig::from_params(&model.feat)?;
        let rate = cfg.samprate.round() as u32;
        Ok(Self {
            frontend: Frontend::new(cfg)?,
            ptm: PtmScorer::new(model),
            rate,
        })
    }

    /// The sample rate the model was trained at (Hz).
    pub fn sample_rate(&self) -> u32 {
        self.rate
    }

    /// Log-likelihoods (nats, 0 = the frame's best senone) of one utterance's samples.
    pub fn score_samples(&self, samples: &[i16]) -> Result<ScoreMatrix> {
        let feats = utterance_features(self.frontend.cepstra(samples));
        log_likelihoods(&self.ptm.score(&feats))
    }

    /// [`Self::score_samples`] of a WAV at the model's rate (another rate, more channels or
    /// another sample format is refused naming the file: [`crate::audio::read_wav`]).
    pub fn score_wav(&self, path: &Path) -> Result<ScoreMatrix> {
        self.score_samples(&crate::audio::read_wav(path, self.rate)?)
    }
}

//! The fusion settings of a decode ([`Fusion`]): the LM, its weight and bonus, how it is
//! queried ([`LmQuery`]), the batch size, the contexts, the device.

use super::contexts::*;
use crate::arrays::NgramLm;
use crate::cuda::DeviceLm;
use crate::error::{NgpuError, Result};
use std::sync::Mutex;

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

/// Shallow-fusion settings: the LM (none: plain greedy), its weight α and the insertion bonus β,
/// and context boosting trees.
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
    /// Context boosting (keyword trees), added to the LM's fused score.
    pub contexts: Contexts<'a>,
    /// The LM on a device ([`DeviceLm`], built from [`Self::lm`]): the batched full-vocabulary
    /// queries run there (a GPU, or the CUDA kernels on the CPU shim), bit-identical to the CPU
    /// queries. Greedy decoding with [`LmQuery::Full`] only; batches take turns on the device.
    pub device: Option<&'a Mutex<DeviceLm>>,
    /// The context trees on a device ([`DeviceContexts`], built from [`Self::contexts`]): each
    /// step's bonuses of all rows are one rooted query there, summed on the host in the CPU's
    /// order. Greedy decoding with [`LmQuery::Full`] only.
    pub device_contexts: Option<&'a Mutex<DeviceContexts>>,
}

impl Default for Fusion<'_> {
    fn default() -> Self {
        Self::none()
    }
}

/// Slack on the pruning bound, so that float rounding never drops a label that could win.
pub(super) const PRUNE_SLACK: f32 = 1e-3;

impl<'a> Fusion<'a> {
    /// Plain greedy decoding (no LM).
    pub fn none() -> Self {
        Self {
            lm: None,
            alpha: 0.0,
            bonus: 0.0,
            query: LmQuery::Full,
            batch: 32,
            contexts: Contexts::None,
            device: None,
            device_contexts: None,
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

    /// Checks the settings: α finite and ≥ 0, β finite, a batch of at least 1.
    pub fn check_settings(&self) -> Result<()> {
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
        if self.device_contexts.is_some() && self.query != LmQuery::Full {
            return Err(NgpuError::Invalid(
                "the device runs the full-vocabulary query (lm_query full), not the pruned one"
                    .into(),
            ));
        }
        if let Some(d) = self.device {
            let Some(lm) = self.lm else {
                return Err(NgpuError::Invalid(
                    "an LM on a device but no LM to fuse (set the LM too)".into(),
                ));
            };
            if self.query != LmQuery::Full {
                return Err(NgpuError::Invalid(
                    "the device runs the full-vocabulary query (lm_query full), not the pruned one"
                        .into(),
                ));
            }
            let d = d.lock().unwrap_or_else(|e| e.into_inner());
            if d.vocab_size() != lm.vocab_size() || d.num_states() != lm.num_states() {
                return Err(NgpuError::Invalid(format!(
                    "the LM on the device ({} labels, {} states) is not the fused LM ({} labels, {} states)",
                    d.vocab_size(),
                    d.num_states(),
                    lm.vocab_size(),
                    lm.num_states()
                )));
            }
        }
        Ok(())
    }

    /// Checks the settings and the LM against a model with `width` columns.
    pub fn check(&self, width: usize) -> Result<()> {
        self.check_settings()?;
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

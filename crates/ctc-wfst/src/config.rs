//! CTC decoding settings.

use crate::error::{CtcError, Result};
use wfst_search::DecoderConfig;

/// The settings of a CTC WFST decoder (001 §3 and riva's CTC decoder options).
#[derive(Debug, Clone, PartialEq)]
pub struct CtcConfig {
    /// The search beams and the acoustic scale (applied to the log-probabilities).
    pub search: DecoderConfig,
    /// Score column of the blank token.
    pub blank: u32,
    /// Subtracted from the blank's log-probability on every frame (nats; positive = fewer
    /// blanks, more tokens: a cure for deletions).
    pub blank_penalty: f32,
    /// Added to the cost of every word the path emits (graph units, −log; negative = a word
    /// insertion bonus, a cure for deletions).
    pub word_insertion_penalty: f32,
    /// Tolerance of the normalisation check |log Σ exp(row)| (0 = no check).
    pub normalised_tol: f64,
    /// The TLG's class slot (the output label of `LangSymbols::context_slot`) when it was
    /// built with one: its streams may then carry open-vocabulary contexts.
    pub context_slot: Option<u32>,
}

impl Default for CtcConfig {
    fn default() -> Self {
        Self {
            search: DecoderConfig {
                acoustic_scale: 1.0,
                ..DecoderConfig::default()
            },
            blank: 0,
            blank_penalty: 0.0,
            word_insertion_penalty: 0.0,
            normalised_tol: 1e-2,
            context_slot: None,
        }
    }
}

impl CtcConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        self.search.validate()?;
        if !self.blank_penalty.is_finite() || !self.word_insertion_penalty.is_finite() {
            return Err(CtcError::Config(format!(
                "blank penalty {} and word insertion penalty {} must be finite",
                self.blank_penalty, self.word_insertion_penalty
            )));
        }
        if self.normalised_tol.is_nan() || self.normalised_tol < 0.0 {
            return Err(CtcError::Config(format!(
                "normalisation tolerance {} must be ≥ 0",
                self.normalised_tol
            )));
        }
        Ok(())
    }
}

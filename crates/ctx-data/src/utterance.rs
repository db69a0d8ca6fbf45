//! What a dataset is made of and how loading one fails: an [`Utterance`] (its reference words,
//! entities and callsign) and [`DataError`]. Below `dataset` and the corpus readers
//! (`earnings`), which both build utterances.

use crate::atc;
use crate::registry::RegistryError;

/// Errors of dataset loading and preparation.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Registry problem.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// File problem.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
    /// ATC generation problem.
    #[error(transparent)]
    Atc(#[from] atc::AtcError),
    /// Pronunciation problem.
    #[error(transparent)]
    Pronounce(#[from] crate::pronounce::PronounceError),
    /// Anything else, with context.
    #[error("{0}")]
    Invalid(String),
}

/// One utterance (an ATC transmission or an Earnings segment).
#[derive(Debug, Clone, PartialEq)]
pub struct Utterance {
    /// Utterance id.
    pub id: String,
    /// The document (Earnings call) it belongs to.
    pub doc: Option<String>,
    /// Reference words (as the scorer sees them after normalisation).
    pub words: Vec<String>,
    /// Duration in seconds.
    pub duration_s: f64,
    /// Entity spans `(class, start, end)` over `words`.
    pub entities: Vec<(String, usize, usize)>,
    /// ATC: the ICAO callsign spoken (`None` = NO_CALLSIGN); Earnings: `None`.
    pub callsign: Option<String>,
}

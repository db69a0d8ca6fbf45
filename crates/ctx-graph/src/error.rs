//! Errors of graph building.

use thiserror::Error;

/// Result alias for graph building.
pub type Result<T> = std::result::Result<T, GraphError>;

/// What can go wrong while building or loading a graph.
#[derive(Debug, Error)]
pub enum GraphError {
    /// Reading or parsing an input file failed.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
    /// A rustfst operation failed (compose, determinize, ...), with the step that ran it.
    #[error("{step}: {message}")]
    Fst {
        /// The build step (e.g. "determinize LG").
        step: String,
        /// rustfst's message.
        message: String,
    },
    /// Inputs that do not fit together (a word of the LM missing from the lexicon, ...).
    #[error("{0}")]
    Invalid(String),
    /// An I/O error on a named file.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error (in the message, not a source: `{:#}` would print it twice).
        err: std::io::Error,
    },
}

impl GraphError {
    /// Wraps a rustfst error with the step that raised it.
    pub fn fst(step: &str, err: impl std::fmt::Display) -> Self {
        GraphError::Fst {
            step: step.to_string(),
            message: format!("{err:#}"),
        }
    }
}

//! Errors of the model readers: every one names the file and what in it was wrong.

use std::path::PathBuf;

/// An error reading a Sphinx model file.
#[derive(Debug, thiserror::Error)]
pub enum SphinxError {
    /// The file could not be read.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        err: std::io::Error,
    },
    /// The file was read but does not hold what its format says.
    #[error("{path}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong, with the byte offset or line where known.
        what: String,
    },
    /// Two files of one model disagree (e.g. mixture weights for another number of senones).
    #[error("model {dir}: {what}")]
    Mismatch {
        /// The model folder.
        dir: PathBuf,
        /// Which files disagree and how.
        what: String,
    },
    /// Values handed to this crate that cannot be used (e.g. ragged score rows).
    #[error("{0}")]
    Invalid(String),
    /// Building the decoding graph failed (an LM or lexicon ctx-graph refuses).
    #[error(transparent)]
    Graph(#[from] ctx_graph::GraphError),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, SphinxError>;

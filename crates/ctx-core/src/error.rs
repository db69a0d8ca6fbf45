//! Typed errors for every reader and measure in `ctx-core`.
//!
//! Each variant carries enough context (file, line, utterance, frame) that the message alone tells a
//! user what to fix; binaries wrap them with `anyhow` and print the whole chain.

use std::path::{Path, PathBuf};

/// Every error `ctx-core` returns.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The operating system refused to open, read or write a file.
    /// (The I/O error's text is in the message, and it is not also given as the error's
    /// source: a chain printed with `{:#}` would repeat it.)
    #[error("{}: {err}", path.display())]
    Io {
        /// The file the operation was about.
        path: PathBuf,
        /// The underlying I/O error.
        err: std::io::Error,
    },
    /// A line of a text format could not be parsed.
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        /// The file being parsed.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        msg: String,
    },
    /// A file is malformed as a whole (bad header, truncated, inconsistent counts).
    #[error("{}: {msg}", path.display())]
    Format {
        /// The file being read.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// An utterance's data is unusable (non-finite score, missing entity, empty input).
    #[error("utterance {utt}: {msg}")]
    Utterance {
        /// The utterance id.
        utt: String,
        /// What is wrong with it.
        msg: String,
    },
    /// An argument or combination of inputs is invalid.
    #[error("{0}")]
    Invalid(String),
}

/// Result alias used throughout `ctx-core`.
pub type Result<T> = std::result::Result<T, CoreError>;

impl CoreError {
    /// An I/O error about `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        CoreError::Io {
            path: path.to_path_buf(),
            err: source,
        }
    }

    /// A parse error at `path:line`.
    pub fn parse(path: &Path, line: usize, msg: impl Into<String>) -> Self {
        CoreError::Parse {
            path: path.to_path_buf(),
            line,
            msg: msg.into(),
        }
    }

    /// A whole-file format error.
    pub fn format(path: &Path, msg: impl Into<String>) -> Self {
        CoreError::Format {
            path: path.to_path_buf(),
            msg: msg.into(),
        }
    }

    /// The message without the file it names (for a caller that names the file itself).
    pub fn without_path(&self) -> String {
        match self {
            CoreError::Io { err, .. } => err.to_string(),
            CoreError::Parse { line, msg, .. } => format!("line {line}: {msg}"),
            CoreError::Format { msg, .. } => msg.clone(),
            other => other.to_string(),
        }
    }

    /// An error about one utterance.
    pub fn utt(utt: impl Into<String>, msg: impl Into<String>) -> Self {
        CoreError::Utterance {
            utt: utt.into(),
            msg: msg.into(),
        }
    }
}

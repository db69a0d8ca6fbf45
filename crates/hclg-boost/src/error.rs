//! Errors of the context registry and the online pipeline; each names the context or stream.

use thiserror::Error;

/// What can go wrong.
#[derive(Debug, Error)]
pub enum HclgBoostError {
    /// A context name that is not loaded.
    #[error("context '{0}' does not exist (load it first)")]
    UnknownContext(String),
    /// A context name loaded twice.
    #[error("context '{0}' is already loaded (remove it first to replace it)")]
    DuplicateContext(String),
    /// Removing a context that open streams still use.
    #[error("context '{name}' is in use by stream(s) {streams}; switch them first")]
    ContextInUse {
        /// The context.
        name: String,
        /// Correlation ids of the streams using it.
        streams: String,
    },
    /// A correlation id opened while a stream with it is open.
    #[error("stream {0}: correlation id already in use by an open stream")]
    StreamOpen(u64),
    /// A correlation id with no open stream.
    #[error("stream {0}: no open stream with this correlation id")]
    UnknownStream(u64),
    /// A chunk fed after the stream's last chunk.
    #[error("stream {0}: chunk after the last chunk (the stream was closed by its last chunk)")]
    AfterLast(u64),
    /// The first-chunk flag on a later chunk, or missing on the first.
    #[error("stream {id}: {message}")]
    ChunkFlags {
        /// Correlation id.
        id: u64,
        /// What is wrong.
        message: String,
    },
    /// One correlation id twice in one batch.
    #[error("stream {0}: two chunks of one stream in one batch")]
    TwiceInBatch(u64),
    /// A setting out of range.
    #[error("{0}")]
    Config(String),
    /// The decoding engine failed (names the stream), or its device could not be opened.
    #[error(transparent)]
    Decode(#[from] wfst_search::DecodeError),
}

/// Result alias of the crate.
pub type Result<T> = std::result::Result<T, HclgBoostError>;

//! Errors of the decoding engine; each names the utterance (stream) it concerns.

use thiserror::Error;

/// What can go wrong while decoding.
#[derive(Debug, Error)]
pub enum DecodeError {
    /// The score matrix has fewer columns than the graph's largest input label needs.
    #[error("utterance {utt}: score matrix has {cols} columns but the graph reads column {needed} (input label {needed_label}); wrong acoustic model or graph?")]
    ScoreWidth {
        /// Utterance id.
        utt: String,
        /// Columns given.
        cols: usize,
        /// 0-based column the graph needs.
        needed: usize,
        /// The graph's largest input label.
        needed_label: u32,
    },
    /// An utterance (or a whole stream) without a single frame.
    #[error("utterance {utt}: no frames to decode (empty score matrix)")]
    EmptyUtterance {
        /// Utterance id.
        utt: String,
    },
    /// A NaN or infinite score.
    #[error("utterance {utt}: score at frame {frame}, column {col} is {value} (NaN or infinite)")]
    NonFinite {
        /// Utterance id.
        utt: String,
        /// Frame (row) in the stream.
        frame: usize,
        /// Column.
        col: usize,
        /// The value.
        value: f32,
    },
    /// Every token was pruned (can only happen when the graph has dead ends).
    #[error(
        "utterance {utt}: no token survived frame {frame}; the graph has no path for this input"
    )]
    NoSurvivors {
        /// Utterance id.
        utt: String,
        /// Frame index.
        frame: usize,
    },
    /// ε-input arcs of the graph (with the stream's boosts) form a cycle of zero or negative
    /// cost inside one frame: the ε-closure cannot end it, or its best paths go round it.
    #[error("utterance {utt}: epsilon cycle in the lattice at frame {frame}; the graph has an epsilon-input cycle of zero or negative cost (with its boosts)")]
    EpsilonCycle {
        /// Utterance id.
        utt: String,
        /// Frame index.
        frame: usize,
    },
    /// The word lattice could not be built (an ε cycle, or a broken invariant).
    #[error("utterance {utt}: {message}")]
    Lattice {
        /// Utterance id.
        utt: String,
        /// What went wrong.
        message: String,
    },
    /// A configuration value out of range.
    #[error("decoder configuration: {0}")]
    Config(String),
    /// A booster that does not fit the graph.
    #[error("booster: {0}")]
    Booster(String),
    /// The GPU (or the CPU shim of its kernels) failed, or was asked for what it cannot do.
    #[error("CUDA backend: {0}")]
    Gpu(String),
}

impl From<ctx_cuda::CudaError> for DecodeError {
    fn from(e: ctx_cuda::CudaError) -> Self {
        DecodeError::Gpu(e.to_string())
    }
}

/// Result alias of the engine.
pub type Result<T> = std::result::Result<T, DecodeError>;

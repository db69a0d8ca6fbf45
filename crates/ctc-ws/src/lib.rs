//! CTC-based word spotting (CTC-WS; Andrusenko et al., *Fast context-biasing for CTC and
//! Transducer ASR models with CTC-based Word Spotter*, Interspeech 2024), the method of NVIDIA
//! NeMo's `eval_greedy_decoding_with_context_biasing.py`:
//!
//! 1. [`ContextGraph`]: each phrase's spellings (model labels) in a prefix tree with CTC's
//!    topology — a self-loop on every label, a blank state between two labels.
//! 2. [`spot`]: token passing over the log-probabilities, a token started at the root on every
//!    frame, each non-blank step earning the context score; a token reaching a phrase's end
//!    above the keyword threshold is a spot (phrase, score, first and last frame); overlapping
//!    spots keep the better ([`SpotterConfig::spot_overlap`]), and a spot is kept only if its
//!    score beats the greedy words of its span, each label of which earns the alignment weight
//!    (fewer false accepts).
//! 3. [`merge`]: the greedy hypothesis's words replaced by the spots that overlap them by more
//!    than [`SpotterConfig::merge_overlap`] percent.
//!
//! Where ours differs from NeMo's code (docs/methods.md says it too): a repeated label's second
//! state always has its self-loop (NeMo's builder leaves it out when the blank state between
//! the two is new), a spot is kept once where NeMo's filter can list it twice (merging it twice
//! changes nothing), and a running best score of exactly 0 counts as set.

mod graph;
mod greedy;
mod merge;
mod spot;

pub use graph::ContextGraph;
pub use merge::{greedy_words, merge, AlignedWord};
pub use spot::{spot, Spot, SpotterConfig};

/// Errors of building a context graph or spotting.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    /// A label outside the model's columns, or the blank inside a spelling.
    #[error("phrase '{phrase}': {message}")]
    Spelling {
        /// The phrase.
        phrase: String,
        /// What is wrong.
        message: String,
    },
    /// A setting out of its range.
    #[error("{0}")]
    Config(String),
    /// Log-probabilities of the wrong width.
    #[error("log-probabilities have {got} columns, the labels {want}")]
    Width {
        /// Columns of the matrix.
        got: usize,
        /// Labels the graph was built for.
        want: usize,
    },
}

/// Result of this crate.
pub type Result<T> = std::result::Result<T, WsError>;

/// The model's labels: each column's piece (`▁` starts a word) and the blank's column.
#[derive(Debug, Clone, PartialEq)]
pub struct Labels {
    /// Piece of each column (the blank's entry is not read).
    pub pieces: Vec<String>,
    /// The blank's column.
    pub blank: u32,
}

/// The piece that starts a word (SentencePiece's).
pub const WORD_START: char = '▁';

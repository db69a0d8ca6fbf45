//! Errors of CTC decoding.

/// What can go wrong decoding CTC outputs.
#[derive(Debug, thiserror::Error)]
pub enum CtcError {
    /// A row of log-probabilities does not sum to 1 in probability.
    #[error("utterance {utt}, frame {frame}: log-probabilities are not normalised (log-sum-exp {lse:.4}, expected 0 ± {tol}); give log-softmax outputs, not logits")]
    NotNormalised {
        /// Utterance id.
        utt: String,
        /// Row.
        frame: usize,
        /// log Σ exp of the row.
        lse: f64,
        /// The tolerance.
        tol: f64,
    },
    /// The score width does not match the token table.
    #[error("utterance {utt}: {cols} score columns, but tokens.txt has {tokens} tokens (blank included)")]
    Width {
        /// Utterance id.
        utt: String,
        /// Columns in the scores.
        cols: usize,
        /// Tokens in the table.
        tokens: usize,
    },
    /// The graph lacks what the CTC topology needs.
    #[error("TLG: {0}")]
    Topology(String),
    /// A setting out of range.
    #[error("CTC settings: {0}")]
    Config(String),
    /// A streaming call on a channel that is not open (or already open).
    #[error("channel {0}: {1}")]
    Channel(u64, String),
    /// The search engine failed.
    #[error(transparent)]
    Decode(#[from] wfst_search::DecodeError),
}

/// Result with [`CtcError`].
pub type Result<T> = std::result::Result<T, CtcError>;

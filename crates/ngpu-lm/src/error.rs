//! Errors of building and querying the arrays.

/// What went wrong building or querying an [`crate::NgramLm`].
#[derive(Debug, thiserror::Error)]
pub enum NgpuError {
    /// ARPA words that are not labels of the model's vocabulary (a word-level LM for a token
    /// model, or a token LM trained with another tokenizer).
    #[error("the LM's vocabulary does not match the model's: {count} LM word(s) are not model labels (e.g. {examples})")]
    VocabMismatch {
        /// How many.
        count: usize,
        /// The first few, quoted.
        examples: String,
    },
    /// An order the arrays do not support.
    #[error("an LM of order {order} is beyond the supported maximum {max}")]
    Order {
        /// The LM's order.
        order: usize,
        /// The largest supported.
        max: usize,
    },
    /// A weight that is NaN (or +∞) in the ARPA.
    #[error("n-gram {ngram}: {what} is {value}, not a finite log-probability")]
    BadWeight {
        /// The n-gram's words.
        ngram: String,
        /// `probability` or `back-off`.
        what: &'static str,
        /// The value.
        value: f32,
    },
    /// A query with a state or label out of range, or buffers of the wrong size.
    #[error("{0}")]
    Query(String),
    /// An invalid setting (fusion weight, ...).
    #[error("{0}")]
    Invalid(String),
    /// A model output that is not a log-probability (NaN or infinite), named by utterance.
    #[error("{0}")]
    Model(String),
    /// The device (a GPU, or the CPU shim of its kernels) failed.
    #[error("NGPU-LM device: {0}")]
    Device(String),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, NgpuError>;

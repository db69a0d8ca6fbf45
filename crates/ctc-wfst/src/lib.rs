//! CTC WFST decoding (001, galvez-kaldewey): a TLG graph searched frame by frame over a CTC
//! model's log-probabilities, on the engine of `wfst-search`.
//!
//! - [`config`]: the CTC settings (blank column, blank penalty, acoustic scale, word insertion
//!   penalty) beside the search's beams.
//! - [`check`]: what a CTC model's outputs and a TLG must satisfy (normalised rows, the width
//!   of tokens.txt, blank self-loops), each a clear error.
//! - [`boost`]: per-utterance word boosting (001 §3.3: the single-state acceptor B applied on
//!   every arc with a word output, never composed) and phrase boosting, a bonus per word of a
//!   phrase matched in order (beyond 001; a broken-off prefix keeps it).
//! - [`decoder`]: offline batched decoding and streaming channels opened and closed by
//!   correlation id, with partial hypotheses after every chunk and a final lattice.
//! - [`greedy`]: greedy (best-path) CTC decoding and the shape of a model's posteriors.

pub mod boost;
pub mod check;
pub mod config;
pub mod decoder;
pub mod error;
pub mod greedy;

pub use boost::{BoostReport, ContextBoost};
pub use config::CtcConfig;
pub use decoder::{add_word_penalty, with_word_penalty, CtcDecoder, CtcInput, StreamingCtc};
pub use error::{CtcError, Result};
pub use greedy::{greedy_tokens, PosteriorShape};

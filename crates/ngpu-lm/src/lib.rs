//! NGPU-LM (Bataev et al., 004; NeMo's `NGramGPULanguageModel`): a back-off n-gram LM stored as
//! flat arrays so that a batch of LM states can be advanced over the whole vocabulary at once.
//!
//! - [`arrays`]: ARPA -> arrays (arcs sorted by (state, label), per-state arc ranges, back-off
//!   target and weight, final weight; the unigram state holds every label), natural-log weights.
//! - [`query`]: batched full-vocabulary queries `advance(states) -> (scores[B, V], next[B, V])`,
//!   the sparse variant for K candidate labels per row, and final weights, on the CPU (rayon).
//! - [`cuda`]: the same queries as the kernels of `kernels/ngpu_lm.cu` on a device (a GPU, or
//!   the CPU shim in tests), equal to the CPU's bit for bit.
//! - [`beam`]: beam-search baselines with shallow fusion: CTC prefix beam search, transducer
//!   modified beam search (RNN-T and TDT), AED beam search.
//! - [`boost`]: an Aho-Corasick boosting tree (keyword boosting) as the same arrays.
//! - [`forest`]: many trees in one set of arrays, each query row from its own tree's root (a
//!   decode's per-utterance contexts in one device upload and one query).
//! - [`fusion`]: greedy decoding with LM fusion for CTC, RNN-T/TDT and AED models (004 §2.3).
//!
//! Labels are the model's output units (BPE pieces or words) numbered 0..V; the ARPA's `<s>`
//! starts a sequence ([`NgramLm::bos_state`]) and its `</s>` is each state's final weight.

pub mod arrays;
pub mod beam;
pub mod boost;
pub mod cuda;
pub mod error;
pub mod forest;
pub mod fusion;
pub mod query;

pub use arrays::{ArraysReport, NgramLm, MAX_CHAIN, MAX_ORDER};
pub use cuda::{DeviceLm, ResidentWalk};
pub use error::{NgpuError, Result};
pub use forest::Forest;

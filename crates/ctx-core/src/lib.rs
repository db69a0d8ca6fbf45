//! `ctx-core`: the formats and measures every ctxbench crate shares.
//!
//! - [`symbols`] — OpenFst text symbol tables.
//! - [`arpa`] — ARPA n-gram LMs (read, write, query).
//! - [`scores`] — score matrices in `.npy` and Kaldi archives.
//! - [`score_table`] — per-utterance scores from an ark, scp or `.npy` folder, read on demand.
//! - [`lexicon`] — Kaldi and CMUdict lexicons.
//! - [`bias`] — biasing lists (global, per document, per utterance) and OOV reports.
//! - [`context_list`] — weighted phrase lists for open-vocabulary contexts.
//! - [`corpus`] — Kaldi data directories and Earnings `.nlp` transcripts.
//! - [`metrics`] — WER, NE-WER, U-WER, NE-A, per-class WER, P/R/F1, fstalign-style normalisation.
//! - [`transition`] — Kaldi transition models (`final.mdl`): transition-id → pdf-id.
//! - [`timing`] — RTFx.
//! - [`e2e`] — step interfaces of transducer and attention encoder-decoder models.
//! - [`io`] — gzip-transparent reading and atomic writing.
//! - [`hash`] — FNV-1a, the one stable hash (seeds, cache keys, fingerprints).

pub mod arpa;
pub mod bias;
pub mod context_list;
pub mod corpus;
pub mod e2e;
pub mod error;
pub mod hash;
pub mod io;
pub mod lexicon;
pub mod metrics;
pub mod score_table;
pub mod scores;
pub mod sphinx_lm;
pub mod symbols;
pub mod timing;
pub mod transition;
pub mod wav;

pub use error::{CoreError, Result};

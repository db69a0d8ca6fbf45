//! The ctxbench runner as a library, so benches and tests drive exactly what the CLI does.
//!
//! - [`score`]: `ctxbench score`, scoring hypotheses against Kaldi `text` or Earnings `.nlp`
//!   references with WER, NE-WER, U-WER, NE-A, per-class WER and target-word P/R/F1.

pub mod data;
pub mod graph;
pub mod lm;
pub mod score;

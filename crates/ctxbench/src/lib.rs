//! The ctxbench runner as a library, so benches and tests drive exactly what the CLI does.
//!
//! - [`score`]: `ctxbench score`, scoring hypotheses against Kaldi `text` or Earnings `.nlp`
//!   references with WER, NE-WER, U-WER, NE-A, per-class WER and target-word P/R/F1.

//! - [`pipeline`]: dataset → graph → simulated scores → decoding → rescoring → scoring.
//! - [`decode`]: `ctxbench decode`, one decoding run with its figures.

pub mod data;
pub mod decode;
pub mod graph;
pub mod lm;
pub mod pipeline;
pub mod score;

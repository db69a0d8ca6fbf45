//! The ctxbench runner as a library, so benches and tests drive exactly what the CLI does.
//!
//! - [`score`]: `ctxbench score`, scoring hypotheses against Kaldi `text` or Earnings `.nlp`
//!   references with WER, NE-WER, U-WER, NE-A, per-class WER and target-word P/R/F1.
//! - [`pipeline`]: dataset → graph → simulated scores → decoding → rescoring → scoring.
//! - [`audio`]: `kind = "audio"` datasets, recordings scored by a real acoustic model.
//! - [`decode`]: `ctxbench decode`, one decoding run with its figures.
//! - [`kaldi_lattice`]: word lattices as a Kaldi text archive of CompactLattices.
//! - [`experiment`]: experiment files and presets, the sweep grid.
//! - [`run`]: `ctxbench run`/`merge`: resumable, shardable execution of the points.
//! - [`methods`]: the method families the runner reaches through one seam (what a figure
//!   depends on): WFST decoding with its biasing methods, the CTC WFST decoder.
//! - [`results`]: the results contract (point store, points.csv/.parquet).
//! - [`frame`]: the points frame and its CSV and Parquet files.
//! - [`table`], [`plot`]: the paper-layout tables (Markdown, LaTeX) and plots (PNG, SVG).
//! - [`regress`]: `ctxbench regress` against results/baselines.
//! - [`fidelity`]: `ctxbench fidelity`, each method's effect beside the paper's.
//! - [`throughput`]: `ctxbench throughput`, decoder-only speed against concurrent streams.
//! - [`commands`]: the CLI of the experiment commands and the results index.

pub mod audio;
pub mod commands;
pub mod data;
pub mod decode;
pub mod experiment;
pub mod export;
pub mod fidelity;
pub mod frame;
pub mod graph;
pub mod kaldi_lattice;
pub mod lm;
pub mod methods;
pub mod pipeline;
pub mod plot;
pub mod regress;
pub mod results;
pub mod run;
pub mod score;
pub mod settings;
pub mod table;
pub mod throughput;
pub mod version;

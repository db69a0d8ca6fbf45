//! HCLG arc-index boosting with per-stream dynamic contexts (000 §4, 003 §3.2; docs/design.md §3).
//!
//! - [`registry`]: contexts loaded by name from phrase lists into sorted, de-duplicated arc
//!   index arrays (000 Algorithm 1, [`ctx_graph::phrase_arcs`]), all in one buffer with
//!   per-context offsets; added and removed while streams run, never touching the graph.
//!   A context may also carry an open-vocabulary graph that the search follows
//!   through the graph's class slot, so that its phrases are decoded whatever their words.
//! - [`online`]: the online batched pipeline — streams opened and closed by correlation id,
//!   chunks with first/last flags, a context per stream switched at any chunk, partial
//!   hypotheses after each chunk, endpoints, and at each endpoint the word lattice rescored by
//!   lattice biasing with the stream's context (000's "at endpoints" rows).
//!
//! The load simulation (many clients at real-time pace, chunk latency percentiles) is the
//! runner's (`ctxbench`'s `methods::load`), which drives this pipeline as one of its servers.
//!
//! The three faults of the public reference code are absent by construction and tested: its
//! arc lists are unsorted (emitting and non-emitting CSR ranges interleave; here every list is
//! sorted and unique, so the GPU's binary search finds every arc), its depth-first search shares
//! one visited set across seed states (here one per search step, `ctx-graph`), and it has one
//! context for all streams (here each stream names its own, per chunk).

pub mod error;
pub mod online;
pub mod registry;

pub use error::{HclgBoostError, Result};
pub use online::{
    Chunk, ChunkResult, Endpointed, Engine, OnlinePipeline, PipelineConfig, PipelineTimes,
};
pub use registry::{ContextRegistry, ContextReport};

//! CPU lattice rescoring for contextual biasing (003 §3.1, docs/design.md §3):
//!
//! - [`phrases`]: biasing lists as word-id sequences, with out-of-vocabulary phrases counted.
//! - [`bias`]: lattice biasing — word lattice ∘ biasing FST, best path (003 §3.1.2), with the
//!   FST itself or its deterministic equivalent, the phrase-prefix automaton.
//!
//! Lattices come from [`wfst_search`]; biasing FSTs from [`ctx_graph::biasing`].

pub mod bias;
pub mod phrases;

pub use bias::{biased_best_path, prefix_biased_best_path, BiasedPath};
pub use phrases::{PhraseIds, PhraseReport};

//! Biasing components: the parts a method name joins with `+` that build something per
//! utterance for the search (boosters, contexts). Each is one module: its settings and what it
//! builds from a setup.

pub mod arc_boost;
pub mod gboost;
pub mod open_vocab;
pub mod word_boost;

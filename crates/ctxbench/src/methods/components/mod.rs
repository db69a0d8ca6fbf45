//! Biasing components: the parts a method name joins with `+`. Each is one module: its
//! settings block (`crate::settings_block!`: every setting once, with its default and doc) and
//! what it builds from a setup (boosters, contexts, a static boost, a rescoring). A family
//! lists the components it accepts (its `COMPONENTS` and `settings()`); see docs/design.md
//! "Adding a biasing component".

pub mod arc_boost;
pub mod ctc_ws;
pub mod gboost;
pub mod hclg_boost;
pub mod lattice_bias;
pub mod open_vocab;
pub mod penalties;
pub mod search;
pub mod word_boost;

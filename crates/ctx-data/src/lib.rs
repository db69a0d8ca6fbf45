//! `ctx-data`: the data side of ctxbench (docs/design.md §1, §5, §6).
//!
//! - [`kneser_ney`] — word or token n-gram LMs by interpolated modified Kneser-Ney, written as ARPA.
//! - [`acoustic`], [`e2e`] — simulated hybrid, CTC, transducer (RNN-T, TDT) and AED models;
//!   [`internal_lm`] — the bigram prior that decides which confusions such a model makes.
//! - [`pronounce`] — pronunciations: CMUdict, compounds, spelled codes, letter-to-sound rules.

pub mod acoustic;
pub mod atc;
pub mod bpe;
pub mod dataset;
pub mod e2e;
pub mod earnings;
pub mod graphs;
pub mod internal_lm;
pub mod kneser_ney;
pub mod pronounce;
pub mod radio;
pub mod registry;
pub mod rng;
pub mod utterance;

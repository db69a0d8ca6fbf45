//! `ctx-data`: the data side of ctxbench (DESIGN.md §1, §5, §6).
//!
//! - [`kneser_ney`] — word or token n-gram LMs by interpolated modified Kneser-Ney, written as ARPA.
//! - [`pronounce`] — pronunciations: CMUdict, compounds, spelled codes, letter-to-sound rules.

pub mod acoustic;
pub mod atc;
pub mod bpe;
pub mod dataset;
pub mod earnings;
pub mod graphs;
pub mod kneser_ney;
pub mod pronounce;
pub mod registry;
pub mod rng;

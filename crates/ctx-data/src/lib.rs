//! `ctx-data`: the data side of ctxbench (DESIGN.md §1, §5, §6).
//!
//! - [`kneser_ney`] — word or token n-gram LMs by interpolated modified Kneser-Ney, written as ARPA.

pub mod kneser_ney;

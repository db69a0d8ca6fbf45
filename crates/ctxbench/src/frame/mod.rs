//! A table of typed, nullable columns — the points frame — and its two file formats: CSV
//! ([`csv`], written and read) and Apache Parquet ([`parquet`], written). Small on purpose: the
//! results contract needs one row per point and nothing a dataframe library adds (one would
//! be about half of a cold build).

pub mod csv;
pub mod parquet;
mod table;

pub use table::{Cells, Column, Frame, FrameError};

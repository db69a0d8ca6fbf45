//! CMU Sphinx semi-continuous acoustic models, read as pocketsphinx ships them: the
//! binary model definition with its triphone tree ([`Mdef`]), Gaussian codebooks
//! ([`Gaussians`]), 8-bit mixture weights ([`MixtureWeights`]), transition matrices
//! ([`TransitionMatrices`]) and front-end settings ([`FeatParams`]), cross-checked as one
//! [`Model`]. The project ships the en-us model in `datasets/sphinx-en-us/` (BSD-2-Clause).
//! Every malformed file is a [`SphinxError`] naming the file and what was wrong; no header
//! count allocates before it is checked against the file's size.

pub mod audio;
mod bytes;
pub mod error;
pub mod features;
pub mod frontend;
pub mod gauden;
pub mod graph;
pub mod hclg;
pub mod mdef;
pub mod model;
pub mod params;
pub mod ptm;
mod s3;
pub mod scorer;
pub mod sendump;
pub mod tmat;

pub use error::{Result, SphinxError};
pub use gauden::Gaussians;
pub use mdef::{Mdef, Phone, WordPos};
pub use model::Model;
pub use params::FeatParams;
pub use scorer::AudioScorer;
pub use sendump::MixtureWeights;
pub use tmat::TransitionMatrices;

//! Method families: the one seam through which the runner reaches every method (docs/design.md §8).
//!
//! A family declares its components (the parts a method name joins with `+`) and settings,
//! says which points can share a setup (graph, acoustic model) and a decode, and decodes a
//! group of points into their records. The runner (`run.rs`) knows nothing else about methods:
//! a new family is a new module here, listed in [`families`]. What a figure depends on lives in
//! this folder, `pipeline/` and `settings/`, so build.rs hashes them into the code version.
//!
//! - [`wfst`]: WFST decoding (HCLG or TLG) with G-boosting, HCLG-boosting, arc boosting and
//!   lattice biasing (000, 003 chapter 3); `baseline` is its method with no component.
//! - [`hclg`]: the online batched pipeline of `hclg-boost` with per-stream contexts (000 §4).
//! - [`ctc`]: the CTC WFST decoder with word and phrase boosting (001).
//! - [`ngpu`]: simulated end-to-end models (CTC, RNN-T, TDT, AED) decoded greedily or by beam
//!   search, with NGPU-LM shallow fusion (004).
//! - [`peer`]: another decoder's hypotheses and timing (e.g. pocketsphinx's), scored as ours.

pub mod components;
pub mod ctc;
mod e2e_device;
mod e2e_setup;
pub mod family;
pub mod hclg;
pub mod load;
pub mod ngpu;
pub mod peer;
pub mod wfst;

use crate::experiment::{Catalog, Method};
pub use family::{Component, Family, FamilySpec, GroupContext, OutputSink, SetupCache};

/// Every family, the default (`baseline`) first. Adding a family: its module above and one
/// entry here.
pub fn families() -> &'static [&'static dyn Family] {
    &[
        &wfst::WFST,
        &hclg::HclgBoost,
        &ctc::CtcWfst,
        &ngpu::E2e,
        &peer::Peer,
    ]
}

/// The families as the experiment parser sees them (in the order of [`families`]).
pub fn catalog() -> &'static Catalog {
    static CATALOG: std::sync::LazyLock<Catalog> = std::sync::LazyLock::new(|| {
        Catalog::new(
            families()
                .iter()
                .map(|f| *f as &'static dyn FamilySpec)
                .collect(),
        )
    });
    &CATALOG
}

/// The family that runs a method (parsed with [`catalog`]).
pub fn family_of(m: &Method) -> &'static dyn Family {
    families()[m.family_index()]
}

//! Lattice biasing after the search (003 §3.1.2): each utterance's lattice composed with its
//! list's biasing FST and its best path read again (the rescoring is
//! [`crate::pipeline::output`]'s).

use super::word_boost::parse_list;
use crate::pipeline::ListKind;
use anyhow::Result;

crate::settings_block! {
    /// Lattice biasing's settings.
    pub struct LatticeBias in "lattice-biasing" {
        /// lattice-biasing list: sequences, unigrams, gt, list:NAME, file:PATH or KIND+file:PATH
        bias_list: Option<String> = None => required,
        /// lattice-biasing discount per word (graph units; negative = boost)
        discount: f64 = -2.0,
    }
}

impl LatticeBias {
    /// The list kind and discount, when the component is on.
    pub fn rescoring(&self) -> Result<Option<(ListKind, f32)>> {
        Ok(parse_list(
            crate::key!(LatticeBias, bias_list),
            self.bias_list.as_deref(),
        )?
        .map(|k| (k, self.discount as f32)))
    }
}

//! HCLG-boosting by composition (003 §3.1.4): the graph composed with the biasing FST of a
//! static list before decoding (the composition itself is the setup's,
//! [`crate::pipeline::SetupOptions::hclg_bias`]).

use crate::pipeline::StaticBoost;

crate::settings_block! {
    /// HCLG-boosting's settings.
    pub struct HclgBoost in "hclg-boosting" {
        /// static list composed into HCLG (sequences, unigrams, gt or a global list)
        hclg_list: Option<String> = None => required; old "hclg-bias",
        /// HCLG-boosting discount per word (graph units; negative = boost)
        hclg_discount: f64 = -2.0; old "hclg-bias-discount",
    }
}

impl HclgBoost {
    /// The static boost the setup composes (`None` without a list).
    pub fn static_boost(&self) -> Option<StaticBoost> {
        self.hclg_list.as_ref().map(|l| StaticBoost {
            list: l.clone(),
            discount: self.hclg_discount as f32,
        })
    }
}

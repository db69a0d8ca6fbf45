//! Per-stream cost modifiers (DESIGN.md §4). A booster never copies the graph: it adds a cost
//! delta to an arc when the arc is relaxed, looked up from the arc's CSR index.

use crate::error::{DecodeError, Result};

/// A sorted, de-duplicated set of arc indices that all earn one discount (000 Algorithm 1's
/// per-context list). Lookup is a binary search, as on the GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArcSetBooster {
    arcs: Vec<u32>,
    discount: f32,
}

impl ArcSetBooster {
    /// Builds the set; `arcs` may come unsorted and with duplicates (emitting and non-emitting
    /// CSR ranges interleave when collected state by state).
    pub fn new(mut arcs: Vec<u32>, discount: f32) -> Result<Self> {
        if !discount.is_finite() {
            return Err(DecodeError::Booster(format!(
                "discount {discount} is not finite"
            )));
        }
        arcs.sort_unstable();
        arcs.dedup();
        Ok(Self { arcs, discount })
    }

    /// The boosted arc indices, ascending.
    pub fn arcs(&self) -> &[u32] {
        &self.arcs
    }

    /// The discount added to a boosted arc's cost (negative = boost).
    pub fn discount(&self) -> f32 {
        self.discount
    }

    /// The cost delta of arc `arc`.
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        match (self.arcs.first(), self.arcs.last()) {
            (Some(&lo), Some(&hi))
                if arc >= lo && arc <= hi && self.arcs.binary_search(&arc).is_ok() =>
            {
                self.discount
            }
            _ => 0.0,
        }
    }
}

/// A stream's booster.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Booster {
    /// No change to the graph's costs.
    #[default]
    None,
    /// Arc-index set + discount.
    ArcSet(ArcSetBooster),
    /// Several boosters whose deltas add up.
    Stack(Vec<Booster>),
}

impl Booster {
    /// The cost delta of arc `arc` (0 for unboosted arcs).
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        match self {
            Booster::None => 0.0,
            Booster::ArcSet(b) => b.delta(arc),
            Booster::Stack(v) => v.iter().map(|b| b.delta(arc)).sum(),
        }
    }

    /// Whether the booster changes nothing.
    pub fn is_none(&self) -> bool {
        match self {
            Booster::None => true,
            Booster::ArcSet(b) => b.arcs.is_empty() || b.discount == 0.0,
            Booster::Stack(v) => v.iter().all(Booster::is_none),
        }
    }

    /// Checks every arc index is below `num_arcs`.
    pub fn validate(&self, num_arcs: usize) -> Result<()> {
        match self {
            Booster::None => Ok(()),
            Booster::ArcSet(b) => match b.arcs.last() {
                Some(&a) if a as usize >= num_arcs => Err(DecodeError::Booster(format!(
                    "arc index {a} is outside the graph ({num_arcs} arcs)"
                ))),
                _ => Ok(()),
            },
            Booster::Stack(v) => v.iter().try_for_each(|b| b.validate(num_arcs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_set_sorts_dedups_and_finds() {
        let b = ArcSetBooster::new(vec![9, 3, 7, 3, 12], -2.0).unwrap();
        assert_eq!(b.arcs(), &[3, 7, 9, 12]);
        let hits: Vec<u32> = (0..15).filter(|&a| b.delta(a) != 0.0).collect();
        assert_eq!(hits, vec![3, 7, 9, 12]);
        assert_eq!(b.delta(7), -2.0);
        let s = Booster::Stack(vec![Booster::ArcSet(b.clone()), Booster::ArcSet(b)]);
        assert_eq!(s.delta(9), -4.0);
        assert_eq!(s.delta(8), 0.0);
        assert!(Booster::ArcSet(ArcSetBooster::new(vec![20], -1.0).unwrap())
            .validate(20)
            .is_err());
        assert!(ArcSetBooster::new(vec![1], f32::NAN).is_err());
    }
}

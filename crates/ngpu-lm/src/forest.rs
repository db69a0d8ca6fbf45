//! Many boosting trees (or LMs) over one vocabulary in one set of arrays, so that a batch whose
//! rows each follow their own tree — per-utterance keyword contexts — is one query (003 ch. 4's
//! GPU context graph; one device upload for all of a decode's trees).
//!
//! Tree `k`'s states are shifted by the states before it (its root, state 0 of its own
//! arrays, becomes [`Forest::roots`]`[k]`), its arcs by the arcs before it; arc targets and
//! back-off targets are shifted with the states, weights copied. A query names each row's root:
//! the back-off chain ends there and the root's arcs `arc_start[root] + label` hold every label,
//! exactly as a tree's unigram state does, so a forest row gives its tree's scores bit for bit
//! ([`NgramLm::advance_row_from`] on the CPU, `ngpu_advance` with a roots array on a device).

use crate::arrays::NgramLm;
use crate::error::{NgpuError, Result};

/// Trees over one vocabulary, concatenated.
#[derive(Debug, Clone)]
pub struct Forest {
    arrays: NgramLm,
    roots: Vec<u32>,
}

impl Forest {
    /// The forest of `trees` (at least one, all over the same vocabulary); tree `k`'s state `s`
    /// is forest state `roots()[k] + s`.
    pub fn new(trees: &[&NgramLm]) -> Result<Self> {
        let first = trees
            .first()
            .ok_or_else(|| NgpuError::Invalid("a forest needs at least one tree".into()))?;
        let v = first.vocab;
        if let Some((k, t)) = trees.iter().enumerate().find(|(_, t)| t.vocab != v) {
            return Err(NgpuError::Invalid(format!(
                "tree {k} has {} labels, tree 0 {v}: a forest's trees share one vocabulary",
                t.vocab
            )));
        }
        let states: usize = trees.iter().map(|t| t.num_states()).sum();
        let arcs: usize = trees.iter().map(|t| t.num_arcs()).sum();
        if states > u32::MAX as usize || arcs >= u32::MAX as usize {
            return Err(NgpuError::Invalid(format!(
                "a forest of {states} states and {arcs} arcs does not fit 32-bit indices"
            )));
        }
        let mut a = NgramLm {
            vocab: v,
            order: trees.iter().map(|t| t.order).max().unwrap_or(1),
            arc_start: Vec::with_capacity(states + 1),
            arc_label: Vec::with_capacity(arcs),
            arc_weight: Vec::with_capacity(arcs),
            arc_to: Vec::with_capacity(arcs),
            backoff_to: Vec::with_capacity(states),
            backoff_weight: Vec::with_capacity(states),
            final_weight: Vec::with_capacity(states),
            bos: 0,
            upper: trees
                .iter()
                .map(|t| t.upper)
                .fold(f32::NEG_INFINITY, f32::max),
        };
        let mut roots = Vec::with_capacity(trees.len());
        for t in trees {
            let (s0, a0) = (a.backoff_to.len() as u32, a.arc_label.len() as u32);
            roots.push(s0);
            let n = t.num_states();
            a.arc_start.extend(t.arc_start[..n].iter().map(|&x| x + a0));
            a.arc_label.extend_from_slice(&t.arc_label);
            a.arc_weight.extend_from_slice(&t.arc_weight);
            a.arc_to.extend(t.arc_to.iter().map(|&x| x + s0));
            a.backoff_to.extend(t.backoff_to.iter().map(|&x| x + s0));
            a.backoff_weight.extend_from_slice(&t.backoff_weight);
            a.final_weight.extend_from_slice(&t.final_weight);
        }
        a.arc_start.push(a.arc_label.len() as u32);
        Ok(Self { arrays: a, roots })
    }

    /// The concatenated arrays (what a device holds; [`crate::DeviceLm::new_forest`]).
    pub fn arrays(&self) -> &NgramLm {
        &self.arrays
    }

    /// Per tree, its root (its state 0) in the forest.
    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// Full-vocabulary scores and next states (forest states) of row `b` from `states[b]` in the
    /// tree rooted at `roots[b]`: `scores[b * V + l]`, `next[b * V + l]` (CPU reference).
    pub fn advance_rooted(
        &self,
        states: &[u32],
        roots: &[u32],
        scores: &mut [f32],
        next: &mut [u32],
    ) -> Result<()> {
        let v = self.arrays.vocab;
        crate::query::check_advance(
            self.arrays.num_states(),
            v,
            states,
            scores.len(),
            next.len(),
        )?;
        let mut sorted = self.roots.clone();
        sorted.sort_unstable();
        check_roots(&sorted, states, roots)?;
        for (b, (&s, &r)) in states.iter().zip(roots).enumerate() {
            self.arrays.advance_row_from(
                r,
                s,
                &mut scores[b * v..(b + 1) * v],
                &mut next[b * v..(b + 1) * v],
            );
        }
        Ok(())
    }
}

/// Checks a rooted query: one root per row, each a root of the arrays (`valid`, sorted), and
/// each row's state in that root's tree (at or after the root, before the next root).
pub(crate) fn check_roots(valid: &[u32], states: &[u32], roots: &[u32]) -> Result<()> {
    if roots.len() != states.len() {
        return Err(NgpuError::Query(format!(
            "{} states but {} roots",
            states.len(),
            roots.len()
        )));
    }
    for (i, (&s, &r)) in states.iter().zip(roots).enumerate() {
        let Ok(k) = valid.binary_search(&r) else {
            return Err(NgpuError::Query(format!(
                "row {i}: state {r} is not a tree's root"
            )));
        };
        let end = valid.get(k + 1).copied().unwrap_or(u32::MAX);
        if s < r || s >= end {
            return Err(NgpuError::Query(format!(
                "row {i}: state {s} is not in the tree rooted at {r}"
            )));
        }
    }
    Ok(())
}

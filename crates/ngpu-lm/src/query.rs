//! Batched queries on the arrays (004 Algorithm 1), CPU reference.
//!
//! - [`NgramLm::advance`]: for each of B states, ln p(l | state) and the next state for every
//!   label l: the state's arcs first, then its back-off's (plus the back-off weight), down to the
//!   unigram state, which fills every label still unset. At most `order` levels per row.
//! - [`NgramLm::advance_sparse`]: the same for K candidate labels per row (binary search in each
//!   level's label-sorted arc range), what beam search and fusion over a large V need.
//! - [`NgramLm::final_weights`]: ln p(`</s>` | state), precomputed.
//!
//! Rows are independent and run in parallel (rayon). Costs are summed in one fixed order
//! (back-off weights from the highest level down, then the arc weight), the order the CUDA
//! kernels follow, so both backends give the same bits.

use crate::arrays::NgramLm;
use crate::error::{NgpuError, Result};
use rayon::prelude::*;

/// Checks a batch of states against an LM with `num_states` states.
pub(crate) fn check_states(num_states: usize, states: &[u32]) -> Result<()> {
    let n = num_states as u32;
    if let Some((i, s)) = states.iter().enumerate().find(|(_, s)| **s >= n) {
        return Err(NgpuError::Query(format!(
            "row {i}: state {s} is out of range (the LM has {n} states)"
        )));
    }
    Ok(())
}

/// Checks the buffers of a full-vocabulary query (`advance`, CPU or device).
pub(crate) fn check_advance(
    num_states: usize,
    vocab: usize,
    states: &[u32],
    scores: usize,
    next: usize,
) -> Result<()> {
    check_states(num_states, states)?;
    let want = states.len() * vocab;
    if scores != want || next != want {
        return Err(NgpuError::Query(format!(
            "advance: {} states need {want} scores and next states, got {scores} and {next}",
            states.len()
        )));
    }
    Ok(())
}

/// Checks a sparse query (`advance_sparse`, CPU or device); returns K, the labels per row
/// (0 when there is nothing to do).
pub(crate) fn check_sparse(
    num_states: usize,
    vocab: usize,
    states: &[u32],
    labels: &[u32],
    scores: usize,
    next: usize,
) -> Result<usize> {
    check_states(num_states, states)?;
    let b = states.len();
    if b == 0 {
        return Ok(0);
    }
    if !labels.len().is_multiple_of(b) || scores != labels.len() || next != labels.len() {
        return Err(NgpuError::Query(format!(
            "advance_sparse: {b} states, {} labels, {scores} scores, {next} next states (labels must be B × K, outputs as many)",
            labels.len(),
        )));
    }
    if let Some(l) = labels.iter().find(|l| **l as usize >= vocab) {
        return Err(NgpuError::Query(format!(
            "advance_sparse: label {l} is out of range (V = {vocab})"
        )));
    }
    Ok(labels.len() / b)
}

/// Checks a final-weight query.
pub(crate) fn check_final(num_states: usize, states: &[u32], out: usize) -> Result<()> {
    check_states(num_states, states)?;
    if out != states.len() {
        return Err(NgpuError::Query(format!(
            "final_weights: {} states, {out} outputs",
            states.len()
        )));
    }
    Ok(())
}

impl NgramLm {
    /// One row of [`Self::advance`]: fills `scores` and `next` (length V) for `state`. Unchecked
    /// (the inner loop of the batched query): panics on a state out of range or buffers shorter
    /// than V; [`Self::advance`] checks and returns errors instead.
    ///
    /// The back-off chain is walked first (at most `order` states, the accumulated back-off
    /// weight of each); then the unigram level writes every label (a loop the compiler
    /// vectorises) and each higher level, lowest first, overwrites its own labels, so each label
    /// ends with the value of the highest level that has it: the back-off rule, with the sums
    /// formed in the same order as [`Self::score`] and the CUDA kernel.
    pub fn advance_row(&self, state: u32, scores: &mut [f32], next: &mut [u32]) {
        self.advance_row_from(0, state, scores, next)
    }

    /// [`Self::advance_row`] in the tree whose root is `root` (a [`crate::Forest`]: the chain
    /// ends at the root, whose arcs `arc_start[root] + label` hold every label; root 0 is the
    /// LM's unigram state). Unchecked, like [`Self::advance_row`].
    pub fn advance_row_from(&self, root: u32, state: u32, scores: &mut [f32], next: &mut [u32]) {
        let mut chain = [(0usize, 0.0f32); crate::arrays::MAX_CHAIN];
        let mut n = 0;
        let mut s = state as usize;
        let mut acc = 0.0f32;
        while s != root as usize {
            chain[n] = (s, acc);
            n += 1;
            acc += self.backoff_weight[s];
            s = self.backoff_to[s] as usize;
        }
        // The root: arc index = its first arc + label, every label present.
        let v = self.vocab;
        let r = self.arc_start[root as usize] as usize;
        for (o, &w) in scores[..v].iter_mut().zip(&self.arc_weight[r..r + v]) {
            *o = acc + w;
        }
        next[..v].copy_from_slice(&self.arc_to[r..r + v]);
        for &(s, acc) in chain[..n].iter().rev() {
            let (a, b) = (self.arc_start[s] as usize, self.arc_start[s + 1] as usize);
            for i in a..b {
                let l = self.arc_label[i] as usize;
                scores[l] = acc + self.arc_weight[i];
                next[l] = self.arc_to[i];
            }
        }
    }

    /// For each state of `states` (B), ln p(l | state) into `scores[b * V + l]` and the next state
    /// into `next[b * V + l]`, every label l.
    pub fn advance(&self, states: &[u32], scores: &mut [f32], next: &mut [u32]) -> Result<()> {
        let v = self.vocab;
        check_advance(self.num_states(), v, states, scores.len(), next.len())?;
        scores
            .par_chunks_mut(v)
            .zip(next.par_chunks_mut(v))
            .zip(states.par_iter())
            .for_each(|((sc, nx), &s)| self.advance_row(s, sc, nx));
        Ok(())
    }

    /// ln p(`label` | `state`) and the next state: one query, following back-offs. Unchecked:
    /// panics on a state or label out of range ([`Self::advance_sparse`] checks).
    pub fn score(&self, state: u32, label: u32) -> (f32, u32) {
        let mut s = state as usize;
        let mut acc = 0.0f32;
        while s != 0 {
            let (a, b) = (self.arc_start[s] as usize, self.arc_start[s + 1] as usize);
            if let Ok(k) = self.arc_label[a..b].binary_search(&label) {
                return (acc + self.arc_weight[a + k], self.arc_to[a + k]);
            }
            acc += self.backoff_weight[s];
            s = self.backoff_to[s] as usize;
        }
        let l = label as usize;
        (acc + self.arc_weight[l], self.arc_to[l])
    }

    /// For each row b, the K labels `labels[b * K ..][..K]`: their scores and next states into
    /// `scores[b * K + k]`, `next[b * K + k]`.
    pub fn advance_sparse(
        &self,
        states: &[u32],
        labels: &[u32],
        scores: &mut [f32],
        next: &mut [u32],
    ) -> Result<()> {
        let k = check_sparse(
            self.num_states(),
            self.vocab,
            states,
            labels,
            scores.len(),
            next.len(),
        )?;
        if k == 0 {
            return Ok(());
        }
        scores
            .par_chunks_mut(k)
            .zip(next.par_chunks_mut(k))
            .zip(labels.par_chunks(k))
            .zip(states.par_iter())
            .for_each(|(((sc, nx), ls), &s)| {
                for j in 0..k {
                    let (w, t) = self.score(s, ls[j]);
                    sc[j] = w;
                    nx[j] = t;
                }
            });
        Ok(())
    }

    /// ln p(`</s>` | state) for each state into `out`.
    pub fn final_weights(&self, states: &[u32], out: &mut [f32]) -> Result<()> {
        check_final(self.num_states(), states, out.len())?;
        for (o, &s) in out.iter_mut().zip(states) {
            *o = self.final_weight[s as usize];
        }
        Ok(())
    }

    /// ln p(`</s>` | state).
    pub fn final_weight(&self, state: u32) -> f32 {
        self.final_weight[state as usize]
    }
}

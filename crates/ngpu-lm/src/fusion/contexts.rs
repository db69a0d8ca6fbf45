//! Context boosting trees in fused decoding: which tree each utterance follows
//! ([`Contexts`], [`UttContext`]) and a decode's trees on a device ([`DeviceContexts`]); the
//! label stage (stage.rs) adds their bonuses each step.

use crate::arrays::NgramLm;
use crate::cuda::DeviceLm;
use crate::error::{NgpuError, Result};
use crate::forest::Forest;
use std::collections::HashMap;

/// Context boosting trees ([`crate::boost`]) of a decode: none, one for every utterance, one
/// per utterance (each utterance its own list, in one batch), or a shared tree plus one per
/// utterance, their scores summed (003's unified trie: the word-level LM's n-grams shared, each
/// utterance's keywords its own; with end bonuses only and strict matching the sum equals one
/// trie holding both). A tree's scores are bonuses and take-backs added as they are (their
/// weight is in the tree's scores).
#[derive(Debug, Clone, Copy, Default)]
pub enum Contexts<'a> {
    /// No context boosting.
    #[default]
    None,
    /// One tree for every utterance.
    Shared(&'a NgramLm),
    /// Tree `i` for utterance `i` (utterances with the same list may share one tree).
    PerUtterance(&'a [&'a NgramLm]),
    /// A tree for every utterance plus tree `i` for utterance `i`.
    SharedAndPerUtterance(&'a NgramLm, &'a [&'a NgramLm]),
}

impl<'a> Contexts<'a> {
    /// The contexts of utterances `range` only, renumbered from 0: what a decode of that slice
    /// of the utterances takes (a per-utterance list shorter than the range is cut where it
    /// ends, and then refused by the decode's check).
    ///
    /// ```
    /// use ngpu_lm::fusion::Contexts;
    /// assert!(matches!(Contexts::None.slice(3..5), Contexts::None));
    /// ```
    pub fn slice(&self, range: std::ops::Range<usize>) -> Contexts<'a> {
        let cut = |ts: &'a [&'a NgramLm]| {
            let end = range.end.min(ts.len());
            &ts[range.start.min(end)..end]
        };
        match *self {
            Contexts::None => Contexts::None,
            Contexts::Shared(t) => Contexts::Shared(t),
            Contexts::PerUtterance(ts) => Contexts::PerUtterance(cut(ts)),
            Contexts::SharedAndPerUtterance(t, ts) => Contexts::SharedAndPerUtterance(t, cut(ts)),
        }
    }

    /// The trees of utterance `i`.
    pub fn get(&self, i: usize) -> UttContext<'a> {
        match *self {
            Contexts::None => UttContext::default(),
            Contexts::Shared(t) => UttContext {
                shared: Some(t),
                own: None,
            },
            Contexts::PerUtterance(ts) => UttContext {
                shared: None,
                own: ts.get(i).copied(),
            },
            Contexts::SharedAndPerUtterance(t, ts) => UttContext {
                shared: Some(t),
                own: ts.get(i).copied(),
            },
        }
    }

    /// Checks the trees against `utts` utterances of a model with `width` columns.
    pub(crate) fn check(&self, utts: usize, width: usize) -> Result<()> {
        let (shared, own): (Option<&NgramLm>, &[&NgramLm]) = match *self {
            Contexts::None => return Ok(()),
            Contexts::Shared(t) => (Some(t), &[]),
            Contexts::PerUtterance(ts) => (None, ts),
            Contexts::SharedAndPerUtterance(t, ts) => (Some(t), ts),
        };
        if matches!(
            self,
            Contexts::PerUtterance(_) | Contexts::SharedAndPerUtterance(..)
        ) && own.len() != utts
        {
            return Err(NgpuError::Invalid(format!(
                "{} context trees for {utts} utterances",
                own.len()
            )));
        }
        if let Some(t) = shared
            .into_iter()
            .chain(own.iter().copied())
            .find(|t| t.vocab_size() + 1 != width)
        {
            return Err(NgpuError::VocabMismatch {
                count: t.vocab_size().abs_diff(width.saturating_sub(1)),
                examples: format!(
                    "a context tree has {} labels, the model {}",
                    t.vocab_size(),
                    width.saturating_sub(1)
                ),
            });
        }
        Ok(())
    }
}

/// A context state: the state in the shared tree and in the utterance's own tree (0 where the
/// tree is absent).
pub type CtxState = [u32; 2];

/// The context trees of one utterance (the shared one and its own), scored as their sum in
/// that order.
#[derive(Debug, Clone, Copy, Default)]
pub struct UttContext<'a> {
    /// The tree every utterance has.
    pub shared: Option<&'a NgramLm>,
    /// The utterance's own tree.
    pub own: Option<&'a NgramLm>,
}

impl UttContext<'_> {
    /// Whether any tree scores this utterance.
    pub fn is_some(&self) -> bool {
        self.shared.is_some() || self.own.is_some()
    }

    pub(super) fn trees(&self) -> [Option<&NgramLm>; 2] {
        [self.shared, self.own]
    }

    /// The start state.
    pub fn start(&self) -> CtxState {
        self.trees().map(|t| t.map_or(0, NgramLm::bos_state))
    }

    /// The bonus of `label` (0-based) from `s` and the next state.
    pub fn score(&self, s: CtxState, label: u32) -> (f32, CtxState) {
        let (mut w, mut next) = (0.0, [0; 2]);
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                let (x, n) = t.score(s[k], label);
                w += x;
                next[k] = n;
            }
        }
        (w, next)
    }

    /// The final weight (the take-back of broken-off phrases).
    pub fn final_weight(&self, s: CtxState) -> f32 {
        let mut w = 0.0;
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                w += t.final_weight(s[k]);
            }
        }
        w
    }

    /// The largest bonus any label can earn from any state.
    pub fn upper_bound(&self) -> f32 {
        self.trees()
            .into_iter()
            .flatten()
            .map(NgramLm::score_upper_bound)
            .sum()
    }

    /// Bonuses and next states of every label from `s` (the sum in [`Self::score`]'s order).
    pub(super) fn advance_row(
        &self,
        s: CtxState,
        scores: &mut [f32],
        next: &mut [CtxState],
        tmp: &mut CtxRow,
    ) {
        let v = scores.len();
        tmp.scores.resize(v, 0.0);
        tmp.next.resize(v, 0);
        scores.fill(0.0);
        for (k, t) in self.trees().into_iter().enumerate() {
            if let Some(t) = t {
                t.advance_row(s[k], &mut tmp.scores, &mut tmp.next);
                for l in 0..v {
                    scores[l] += tmp.scores[l];
                    next[l][k] = tmp.next[l];
                }
            } else {
                for n in next.iter_mut() {
                    n[k] = 0;
                }
            }
        }
    }
}

/// Buffers of one tree's row in [`UttContext::advance_row`].
#[derive(Default)]
pub(super) struct CtxRow {
    pub(super) scores: Vec<f32>,
    pub(super) next: Vec<u32>,
}

/// A decode's context trees on a device: every distinct tree of a [`Contexts`] in one
/// [`Forest`], uploaded once, so that each step's context bonuses of a whole batch are one
/// rooted query (003 ch. 4's context graph on the GPU). Context states stay tree-local on the
/// host; a query shifts them by the tree's root.
pub struct DeviceContexts {
    pub(super) dev: DeviceLm,
    /// Tree (by address) -> its root in the forest.
    pub(super) roots: HashMap<usize, u32>,
}

impl std::fmt::Debug for DeviceContexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceContexts({:?}, {} trees)",
            self.dev,
            self.roots.len()
        )
    }
}

impl DeviceContexts {
    /// The trees of `contexts` on `dev` (`None` for [`Contexts::None`]).
    pub fn new(contexts: &Contexts, dev: Box<dyn ctx_cuda::Device>) -> Result<Option<Self>> {
        let (shared, own): (Option<&NgramLm>, &[&NgramLm]) = match *contexts {
            Contexts::None => return Ok(None),
            Contexts::Shared(t) => (Some(t), &[]),
            Contexts::PerUtterance(ts) => (None, ts),
            Contexts::SharedAndPerUtterance(t, ts) => (Some(t), ts),
        };
        let mut trees: Vec<&NgramLm> = Vec::new();
        let mut index: HashMap<usize, usize> = HashMap::new();
        for t in shared.into_iter().chain(own.iter().copied()) {
            index
                .entry(t as *const NgramLm as usize)
                .or_insert_with(|| {
                    trees.push(t);
                    trees.len() - 1
                });
        }
        let forest = Forest::new(&trees)?;
        let roots = index
            .into_iter()
            .map(|(addr, k)| (addr, forest.roots()[k]))
            .collect();
        Ok(Some(Self {
            dev: DeviceLm::new_forest(&forest, dev)?,
            roots,
        }))
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.dev.device_name()
    }

    pub(super) fn root_of(&self, t: &NgramLm) -> Result<u32> {
        self.roots
            .get(&(t as *const NgramLm as usize))
            .copied()
            .ok_or_else(|| {
                NgpuError::Invalid(
                    "a context tree that is not on the device (build DeviceContexts from the same contexts)"
                        .into(),
                )
            })
    }
}

/// Buffers of the context stage: per row its bonuses and next states (row `i` at
/// `[i·V, (i+1)·V)`), and the device query's.
#[derive(Default)]
pub(super) struct CtxScratch {
    pub(super) scores: Vec<f32>,
    pub(super) next: Vec<CtxState>,
    pub(super) tmp: CtxRow,
    pub(super) q_states: Vec<u32>,
    pub(super) q_roots: Vec<u32>,
    pub(super) q_scores: Vec<f32>,
    pub(super) q_next: Vec<u32>,
    pub(super) q_of: Vec<(usize, usize, u32)>,
}

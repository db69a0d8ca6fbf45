//! An ARPA back-off LM as NGPU-LM's flat arrays (004 §2.2).
//!
//! A **state** is a history (context) the LM distinguishes: the empty history (state 0, the
//! unigram state), `<s>`, every listed n-gram below the top order that can be a history, and
//! every prefix of a listed n-gram, listed or not. Pruned models (KenLM's `--prune`) list
//! higher-order n-grams whose prefixes are missing (NeMo's builder fails on them: NVIDIA/NeMo#15715); such a prefix
//! becomes a state with back-off weight 1 (log 0), entered by an arc that carries the back-off
//! probability of its last word, so the n-grams that extend it stay reachable.
//!
//! An **arc** `h -w-> h'` exists for every listed n-gram `h w` (and every added prefix), with weight
//! ln p(w | h) and `h'` the longest suffix of `h w` that is a state. Arcs are sorted by (state,
//! label); `arc_start[s]..arc_start[s + 1]` are state `s`'s. The unigram state has one arc per
//! label, in label order (arc index = label), labels missing from the ARPA at the `<unk>` weight.
//! Each state has a back-off target (its longest proper suffix that is a state) and weight, and a
//! final weight ln p(`</s>` | h) precomputed along back-offs, so a query never searches for `</s>`.
//!
//! The ARPA back-off rule then holds exactly: from state `h`, a label found among `h`'s arcs takes
//! that arc; otherwise the back-off weight is added and the search goes on from the back-off
//! target, at most `order` times, ending at the unigram state, which has every label.

use crate::error::{NgpuError, Result};
use ctx_core::arpa::{ArpaLm, BOS, EOS, UNK};
use std::collections::HashMap;

/// The highest ARPA order supported (004 uses 10-grams; NeMo's limit is the same order of
/// magnitude).
pub const MAX_ORDER: usize = 16;

/// The longest back-off chain a query walks (a boosting tree's depth; ARPA LMs stay within
/// [`MAX_ORDER`]).
pub const MAX_CHAIN: usize = 64;

/// log10 -> ln.
const LN_10: f32 = std::f32::consts::LN_10;
/// ARPA's "never" (log10 −99), used for labels the LM lacks when it has no `<unk>`.
const NEVER_LOG10: f32 = -99.0;

/// An n-gram LM as flat arrays over the labels 0..V of a model's vocabulary.
#[derive(Debug, Clone)]
pub struct NgramLm {
    /// Vocabulary size V (labels 0..V).
    pub(crate) vocab: usize,
    /// LM order.
    pub(crate) order: usize,
    /// Per state, its first arc; one more entry for the end (`states + 1`).
    pub(crate) arc_start: Vec<u32>,
    /// Per arc, its label.
    pub(crate) arc_label: Vec<u32>,
    /// Per arc, ln p(label | state).
    pub(crate) arc_weight: Vec<f32>,
    /// Per arc, the next state.
    pub(crate) arc_to: Vec<u32>,
    /// Per state, its back-off target (state 0 points to itself).
    pub(crate) backoff_to: Vec<u32>,
    /// Per state, its ln back-off weight (0 for state 0).
    pub(crate) backoff_weight: Vec<f32>,
    /// Per state, ln p(`</s>` | state) along back-offs.
    pub(crate) final_weight: Vec<f32>,
    /// The state after `<s>` (state 0 when the ARPA has no `<s>`).
    pub(crate) bos: u32,
    /// [`NgramLm::score_upper_bound`], computed once.
    pub(crate) upper: f32,
}

/// What building the arrays found: sizes, memory and what the vocabulary mapping did.
#[derive(Debug, Clone, PartialEq)]
pub struct ArraysReport {
    /// N-grams listed in the ARPA, all orders.
    pub ngrams: usize,
    /// States.
    pub states: usize,
    /// Arcs.
    pub arcs: usize,
    /// Prefix states added for a pruned model's n-grams whose prefixes are not listed.
    pub added_prefixes: usize,
    /// Labels of the model that the ARPA lacks (scored at the `<unk>` weight at unigram level).
    pub missing_labels: usize,
    /// Bytes of the arrays.
    pub bytes: usize,
}

impl ArraysReport {
    /// Bytes per listed n-gram.
    pub fn bytes_per_ngram(&self) -> f64 {
        self.bytes as f64 / self.ngrams.max(1) as f64
    }
}

impl NgramLm {
    /// Arrays for a word-level LM over its own vocabulary: every ARPA word except `<s>` and
    /// `</s>` is a label, in ARPA order (see [`Self::labels_of`]).
    pub fn from_arpa_words(lm: &ArpaLm) -> Result<(Self, ArraysReport, Vec<String>)> {
        let labels = Self::labels_of(lm);
        let (a, r) = Self::from_arpa(lm, &labels)?;
        Ok((a, r, labels))
    }

    /// The labels [`Self::from_arpa_words`] uses: the ARPA vocabulary without `<s>` and `</s>`.
    pub fn labels_of(lm: &ArpaLm) -> Vec<String> {
        lm.vocab()
            .iter()
            .filter(|w| *w != BOS && *w != EOS)
            .cloned()
            .collect()
    }

    /// Arrays over the model's `labels` (label i = `labels[i]`). Every ARPA word other than `<s>`,
    /// `</s>` and `<unk>` must be a label; labels the ARPA lacks score as `<unk>` at the unigram
    /// level (log10 −99 without an `<unk>`).
    pub fn from_arpa(lm: &ArpaLm, labels: &[String]) -> Result<(Self, ArraysReport)> {
        let order = lm.order();
        if order > MAX_ORDER {
            return Err(NgpuError::Order {
                order,
                max: MAX_ORDER,
            });
        }
        let v = labels.len();
        let label_of: HashMap<&str, u32> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_str(), i as u32))
            .collect();
        let bos_w = lm.word_id(BOS);
        let eos_w = lm.word_id(EOS);
        // ARPA word id -> label.
        let mut lab: Vec<Option<u32>> = Vec::with_capacity(lm.vocab().len());
        let mut unknown = Vec::new();
        for w in lm.vocab() {
            let l = label_of.get(w.as_str()).copied();
            if l.is_none() && w != BOS && w != EOS && w != UNK {
                unknown.push(format!("{w:?}"));
            }
            lab.push(l);
        }
        if !unknown.is_empty() {
            return Err(NgpuError::VocabMismatch {
                count: unknown.len(),
                examples: unknown[..unknown.len().min(5)].join(", "),
            });
        }
        let name = |ids: &[u32]| {
            ids.iter()
                .map(|&i| lm.word(i).unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut ngrams = 0;
        for n in 1..=order {
            for e in lm.entries(n) {
                ngrams += 1;
                if !e.log10_prob.is_finite() && e.log10_prob != f32::NEG_INFINITY {
                    return Err(NgpuError::BadWeight {
                        ngram: name(&e.words),
                        what: "probability",
                        value: e.log10_prob,
                    });
                }
                if !e.log10_backoff.is_finite() && e.log10_backoff != f32::NEG_INFINITY {
                    return Err(NgpuError::BadWeight {
                        ngram: name(&e.words),
                        what: "back-off",
                        value: e.log10_backoff,
                    });
                }
            }
        }

        // States: histories as ARPA word-id sequences, shorter first, then file order.
        let mut state_of: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut hist: Vec<Vec<u32>> = Vec::new();
        let mut bo10: Vec<f32> = Vec::new();
        let mut listed: Vec<bool> = Vec::new();
        let mut add = |h: &[u32], bo: f32, is_listed: bool, hist: &mut Vec<Vec<u32>>| -> bool {
            if let Some(&s) = state_of.get(h) {
                if is_listed {
                    bo10[s as usize] = bo;
                    listed[s as usize] = true;
                }
                return false;
            }
            state_of.insert(h.to_vec(), hist.len() as u32);
            hist.push(h.to_vec());
            bo10.push(bo);
            listed.push(is_listed);
            true
        };
        add(&[], 0.0, true, &mut hist);
        let mut added_prefixes = 0;
        for n in 1..order {
            for e in lm.entries(n) {
                if Some(*e.words.last().unwrap()) == eos_w {
                    continue;
                }
                add(&e.words, e.log10_backoff, true, &mut hist);
            }
        }
        // Prefixes of every listed n-gram (a pruned model may lack them), shortest first.
        for n in 2..=order {
            for e in lm.entries(n) {
                for k in 1..n {
                    if add(&e.words[..k], 0.0, false, &mut hist) {
                        added_prefixes += 1;
                    }
                }
            }
        }
        let index: HashMap<&[u32], u32> = hist
            .iter()
            .enumerate()
            .map(|(i, h)| (h.as_slice(), i as u32))
            .collect();
        let longest_state_suffix = |seq: &[u32]| -> u32 {
            let start = seq.len().saturating_sub(order - 1);
            for k in start..=seq.len() {
                if let Some(&s) = index.get(&seq[k..]) {
                    return s;
                }
            }
            0
        };
        let ns = hist.len();
        let mut backoff_to = vec![0u32; ns];
        let mut backoff_weight = vec![0f32; ns];
        for (s, h) in hist.iter().enumerate().skip(1) {
            backoff_to[s] = longest_state_suffix(&h[1..]);
            backoff_weight[s] = bo10[s] * LN_10;
        }

        // Arcs per state: (label, ln weight, next).
        let mut out: Vec<Vec<(u32, f32, u32)>> = vec![Vec::new(); ns];
        // Unigram state: every label.
        let unk10 = lm
            .word_id(UNK)
            .and_then(|u| lm.entry(&[u]))
            .map_or(NEVER_LOG10, |e| e.log10_prob);
        let mut uni = vec![(unk10, 0u32); v];
        let mut seen = vec![false; v];
        for e in lm.entries(1) {
            let w = e.words[0];
            if let Some(l) = lab[w as usize] {
                uni[l as usize] = (e.log10_prob, index.get(&e.words[..]).copied().unwrap_or(0));
                seen[l as usize] = true;
            }
        }
        let missing_labels = seen.iter().filter(|s| !**s).count();
        out[0] = uni
            .iter()
            .enumerate()
            .map(|(l, &(p, to))| (l as u32, p * LN_10, to))
            .collect();
        // Higher orders: every listed n-gram `h w` with a label w.
        let mut has_arc: std::collections::HashSet<(u32, u32)> = Default::default();
        for n in 2..=order {
            for e in lm.entries(n) {
                let (h, w) = e.words.split_at(n - 1);
                let Some(l) = lab[w[0] as usize] else {
                    continue; // </s> (a final weight), <s> or an <unk> that is not a label
                };
                let from = index[h];
                out[from as usize].push((l, e.log10_prob * LN_10, longest_state_suffix(&e.words)));
                has_arc.insert((from, l));
            }
        }
        // Added prefix states are entered by an arc with the back-off probability of their last
        // word (the ARPA rule gives the same weight; the arc keeps the longer history).
        for (s, h) in hist.iter().enumerate().skip(1) {
            if listed[s] || h.len() < 2 {
                continue;
            }
            let (p, w) = h.split_at(h.len() - 1);
            let Some(l) = lab[w[0] as usize] else {
                continue;
            };
            let from = index[p];
            if has_arc.insert((from, l)) {
                let p10 = lm.log10_prob(p, w[0]).unwrap_or(NEVER_LOG10);
                out[from as usize].push((l, p10 * LN_10, s as u32));
            }
        }
        // Final weights along back-offs (a suffix is shorter, so it is computed first).
        let mut by_len: Vec<usize> = (0..ns).collect();
        by_len.sort_by_key(|&s| hist[s].len());
        let mut final_weight = vec![NEVER_LOG10 * LN_10; ns];
        for &s in &by_len {
            let own = eos_w.and_then(|e| {
                let mut k = hist[s].clone();
                k.push(e);
                lm.entry(&k).map(|x| x.log10_prob * LN_10)
            });
            final_weight[s] = match own {
                Some(w) => w,
                None if s == 0 => NEVER_LOG10 * LN_10,
                None => backoff_weight[s] + final_weight[backoff_to[s] as usize],
            };
        }
        // Flatten, each state's arcs sorted by label.
        let mut arc_start = Vec::with_capacity(ns + 1);
        let (mut arc_label, mut arc_weight, mut arc_to) = (Vec::new(), Vec::new(), Vec::new());
        for arcs in &mut out {
            arcs.sort_by_key(|a| a.0);
            arc_start.push(arc_label.len() as u32);
            for &(l, w, t) in arcs.iter() {
                arc_label.push(l);
                arc_weight.push(w);
                arc_to.push(t);
            }
        }
        arc_start.push(arc_label.len() as u32);
        let bos = bos_w
            .and_then(|b| index.get(&[b][..]).copied())
            .unwrap_or(0);
        let lm_arrays = NgramLm::from_parts(
            v,
            order,
            arc_start,
            arc_label,
            arc_weight,
            arc_to,
            backoff_to,
            backoff_weight,
            final_weight,
            bos,
        );
        let report = ArraysReport {
            ngrams,
            states: ns,
            arcs: lm_arrays.arc_label.len(),
            added_prefixes,
            missing_labels,
            bytes: lm_arrays.bytes(),
        };
        Ok((lm_arrays, report))
    }

    /// Arrays from their parts (an ARPA LM, a boosting tree); the score upper bound computed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        vocab: usize,
        order: usize,
        arc_start: Vec<u32>,
        arc_label: Vec<u32>,
        arc_weight: Vec<f32>,
        arc_to: Vec<u32>,
        backoff_to: Vec<u32>,
        backoff_weight: Vec<f32>,
        final_weight: Vec<f32>,
        bos: u32,
    ) -> Self {
        let lm = NgramLm {
            vocab,
            order,
            arc_start,
            arc_label,
            arc_weight,
            arc_to,
            backoff_to,
            backoff_weight,
            final_weight,
            bos,
            upper: 0.0,
        };
        NgramLm {
            upper: lm.compute_upper_bound(),
            ..lm
        }
    }

    /// An upper bound of every query's score: the largest arc weight plus `order − 1` times the
    /// largest positive back-off weight (a back-off chain has at most `order − 1` steps). Exact
    /// candidate pruning in fusion uses it (the fusion module).
    pub fn score_upper_bound(&self) -> f32 {
        self.upper
    }

    fn compute_upper_bound(&self) -> f32 {
        let arc = self
            .arc_weight
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        let bo = self.backoff_weight.iter().copied().fold(0.0f32, f32::max);
        arc + (self.order.saturating_sub(1)) as f32 * bo
    }

    /// Bytes of the arrays (what a device copy takes).
    pub fn bytes(&self) -> usize {
        4 * (self.arc_start.len()
            + self.arc_label.len()
            + self.arc_weight.len()
            + self.arc_to.len()
            + self.backoff_to.len()
            + self.backoff_weight.len()
            + self.final_weight.len())
    }

    /// Vocabulary size V.
    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// The LM's order.
    pub fn order(&self) -> usize {
        self.order
    }

    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.backoff_to.len()
    }

    /// Number of arcs.
    pub fn num_arcs(&self) -> usize {
        self.arc_label.len()
    }

    /// The state a sequence starts in (after `<s>`).
    pub fn bos_state(&self) -> u32 {
        self.bos
    }

    /// The unigram (empty-history) state.
    pub fn unigram_state(&self) -> u32 {
        0
    }
}

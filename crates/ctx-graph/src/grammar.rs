//! The grammar acceptor G from an ARPA back-off LM (Kaldi's `arpa2fst`).
//!
//! One state per listed history (every n-gram below the top order that does not end in `</s>`,
//! and every context of a listed n-gram), plus the empty-history state. An n-gram `(h, w)` is an
//! arc from state(h) labelled `w:w` to the state of its longest suffix (at most order − 1 words)
//! that has a state; `(h, </s>)` is state(h)'s final weight; each non-empty history backs off to
//! its longest proper suffix with a state on a `#0:ε` arc weighted by its back-off. Costs are
//! −ln p (ARPA log10 × ln 10). The start state is the history `<s>`.
//!
//! [`build_grammar_fst_with`] applies a [`GrammarEdit`] on the way (G-boosting, the `gboost` module):
//! cost deltas on listed n-grams and extra n-grams of any order. Added n-grams make their
//! histories states (back-off weight 1, i.e. cost 0, to the longest suffix with a state), and the
//! state rule for listed n-grams stays the one of the LM's own order, so an empty edit gives
//! exactly the G of [`build_grammar_fst`].

use crate::error::{GraphError, Result};
use crate::StdFst;
use ctx_core::arpa::{ArpaLm, BOS, EOS};
use ctx_core::symbols::SymbolTable;
use rustfst::prelude::*;
use std::collections::HashMap;

/// What to do with LM words the graph's word table lacks (words without a pronunciation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingWords {
    /// Refuse the LM, naming the words (the default).
    #[default]
    Error,
    /// Drop the n-grams that use them and count them in the report.
    Skip,
}

/// What a G-boosting edit did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GBoostReport {
    /// Distinct phrases asked for.
    pub phrases: usize,
    /// Phrases boosted.
    pub kept: usize,
    /// Phrases dropped because a word is outside the LM or has no pronunciation.
    pub dropped: usize,
    /// Listed n-grams whose cost changed.
    pub discounted: usize,
    /// n-grams added.
    pub added: usize,
}

/// Changes applied to an LM while its G is built (word ids are the LM's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GrammarEdit {
    /// Cost delta (added to −ln p; negative = boost) per listed n-gram.
    pub deltas: HashMap<Vec<u32>, f32>,
    /// n-grams the LM does not list, with their cost −ln p, in a deterministic order.
    pub added: Vec<(Vec<u32>, f32)>,
}

/// Counts of a G build, including what was skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GrammarReport {
    /// States of G.
    pub states: usize,
    /// Arcs of G (back-off arcs included).
    pub arcs: usize,
    /// LM words missing from the word table (sorted), when skipping.
    pub skipped_words: Vec<String>,
    /// n-grams dropped because they use a skipped word.
    pub skipped_ngrams: usize,
    /// What G-boosting changed (boosted graphs only).
    pub gboost: Option<GBoostReport>,
}

const LN10: f32 = std::f32::consts::LN_10;

/// The state of G for the empty history (the unigrams), where every back-off chain ends; the
/// first state a G is built with. The context slot is a self-loop there.
pub const NULL_HISTORY: StateId = 0;

/// Builds G over `words` (whose `#0` id is `backoff_label`) from an ARPA LM.
pub fn build_grammar_fst(
    lm: &ArpaLm,
    words: &SymbolTable,
    backoff_label: u32,
    missing: MissingWords,
) -> Result<(StdFst, GrammarReport)> {
    build_grammar_fst_with(lm, words, backoff_label, missing, &GrammarEdit::default())
}

/// Builds G like [`build_grammar_fst`], applying `edit` (see the module notes).
pub fn build_grammar_fst_with(
    lm: &ArpaLm,
    words: &SymbolTable,
    backoff_label: u32,
    missing: MissingWords,
    edit: &GrammarEdit,
) -> Result<(StdFst, GrammarReport)> {
    let order = lm.order();
    if order == 0 {
        return Err(GraphError::Invalid("the ARPA LM has no n-grams".into()));
    }
    let bos = lm.word_id(BOS);
    let eos = lm.word_id(EOS);
    // LM word id -> graph label (None: <s>, </s> or missing).
    let mut label: Vec<Option<u32>> = Vec::with_capacity(lm.vocab().len());
    let mut missing_words = Vec::new();
    for (i, w) in lm.vocab().iter().enumerate() {
        let i = i as u32;
        if Some(i) == bos || Some(i) == eos {
            label.push(None);
            continue;
        }
        match words.id(w) {
            Some(id) if id != 0 && id != backoff_label => label.push(Some(id)),
            _ => {
                missing_words.push(w.clone());
                label.push(None);
            }
        }
    }
    let mut report = GrammarReport::default();
    if !missing_words.is_empty() {
        missing_words.sort();
        if missing == MissingWords::Error {
            let shown: Vec<&str> = missing_words.iter().take(10).map(String::as_str).collect();
            return Err(GraphError::Invalid(format!(
                "{} word(s) of the ARPA LM are not in the lexicon (first: {}); add pronunciations \
                 or skip them explicitly",
                missing_words.len(),
                shown.join(", ")
            )));
        }
        report.skipped_words = missing_words;
    }
    let is_missing = |w: u32| Some(w) != bos && Some(w) != eos && label[w as usize].is_none();

    let mut fst = StdFst::new();
    let mut states: HashMap<Vec<u32>, StateId> = HashMap::new();
    let null = fst.add_state();
    debug_assert_eq!(null, NULL_HISTORY);
    states.insert(Vec::new(), null);
    // Histories in a deterministic order: listed n-grams below the top order, then contexts.
    let mut backoffs: Vec<(StateId, Vec<u32>, f32)> = Vec::new();
    for n in 1..order {
        for e in lm.entries(n) {
            if Some(*e.words.last().unwrap()) == eos || e.words.iter().any(|&w| is_missing(w)) {
                continue;
            }
            if !states.contains_key(&e.words) {
                let s = fst.add_state();
                states.insert(e.words.clone(), s);
                backoffs.push((s, e.words.clone(), e.log10_backoff));
            }
        }
    }
    for n in 2..=order {
        for e in lm.entries(n) {
            let h = &e.words[..n - 1];
            if h.iter().any(|&w| is_missing(w)) || states.contains_key(h) {
                continue;
            }
            let s = fst.add_state();
            states.insert(h.to_vec(), s);
            backoffs.push((s, h.to_vec(), 0.0));
        }
    }
    for (ws, cost) in &edit.added {
        if ws.is_empty() || !cost.is_finite() || ws.iter().any(|&w| w as usize >= label.len()) {
            return Err(GraphError::Invalid(format!(
                "G edit: added n-gram {ws:?} has no words, a word outside the LM or cost {cost}"
            )));
        }
        if lm.entry(ws).is_some() {
            return Err(GraphError::Invalid(format!(
                "G edit: added n-gram {ws:?} is already listed in the LM"
            )));
        }
        let h = &ws[..ws.len() - 1];
        if h.iter().any(|&w| is_missing(w)) || states.contains_key(h) {
            continue;
        }
        // Every shorter prefix must be a history already (the edit adds prefixes first).
        let s = fst.add_state();
        states.insert(h.to_vec(), s);
        backoffs.push((s, h.to_vec(), 0.0));
    }
    let max_order = edit
        .added
        .iter()
        .map(|(ws, _)| ws.len())
        .max()
        .unwrap_or(0)
        .max(order);
    let start = bos
        .and_then(|b| states.get(&vec![b]).copied())
        .unwrap_or(null);
    fst.set_start(start).map_err(|e| GraphError::fst("G", e))?;

    let longest_state = |ws: &[u32]| -> StateId {
        let keep = ws.len().min(max_order - 1);
        let mut k = ws.len() - keep;
        while k < ws.len() {
            if let Some(&s) = states.get(&ws[k..]) {
                return s;
            }
            k += 1;
        }
        null
    };
    for n in 1..=order {
        for e in lm.entries(n) {
            if e.words.iter().any(|&w| is_missing(w)) {
                report.skipped_ngrams += 1;
                continue;
            }
            let w = *e.words.last().unwrap();
            let h = &e.words[..n - 1];
            let Some(&src) = states.get(h) else {
                continue; // a history ending in </s>: unreachable
            };
            let cost = -e.log10_prob * LN10 + edit.deltas.get(&e.words).copied().unwrap_or(0.0);
            if Some(w) == bos {
                continue;
            }
            if Some(w) == eos {
                if cost.is_finite() {
                    fst.set_final(src, cost)
                        .map_err(|e| GraphError::fst("G", e))?;
                }
                continue;
            }
            if !cost.is_finite() {
                continue;
            }
            let dst = longest_state(&e.words);
            let lab = label[w as usize].expect("in-vocabulary word");
            fst.add_tr(src, Tr::new(lab, lab, cost, dst))
                .map_err(|e| GraphError::fst("G", e))?;
        }
    }
    for (ws, cost) in &edit.added {
        let w = *ws.last().unwrap();
        if ws.iter().any(|&x| is_missing(x)) || Some(w) == bos {
            report.skipped_ngrams += 1;
            continue;
        }
        let Some(&src) = states.get(&ws[..ws.len() - 1]) else {
            return Err(GraphError::Invalid(format!(
                "G edit: the history of added n-gram {ws:?} is neither listed nor added"
            )));
        };
        if Some(w) == eos {
            fst.set_final(src, *cost)
                .map_err(|e| GraphError::fst("G", e))?;
            continue;
        }
        let dst = longest_state(ws);
        let lab = label[w as usize].expect("in-vocabulary word");
        fst.add_tr(src, Tr::new(lab, lab, *cost, dst))
            .map_err(|e| GraphError::fst("G", e))?;
    }
    for (s, h, bo) in backoffs {
        let dst = longest_state(&h[1..]);
        fst.add_tr(s, Tr::new(backoff_label, 0, -bo * LN10, dst))
            .map_err(|e| GraphError::fst("G", e))?;
    }
    report.states = fst.num_states();
    report.arcs = (0..fst.num_states() as StateId)
        .map(|s| fst.num_trs(s).unwrap_or(0))
        .sum();
    Ok((fst, report))
}

/// Adds the context slot to G: word `slot` as a self-loop of the empty-history
/// state costing `cost`, so a context can be entered wherever a word may start after backing
/// off. A non-finite cost is refused.
pub fn add_context_slot(g: &mut StdFst, slot: Label, cost: f32) -> Result<()> {
    if !cost.is_finite() {
        return Err(GraphError::Invalid(format!(
            "context slot entry cost {cost} is not finite"
        )));
    }
    g.add_tr(NULL_HISTORY, Tr::new(slot, slot, cost, NULL_HISTORY))
        .map_err(|e| GraphError::fst("G", e))
}

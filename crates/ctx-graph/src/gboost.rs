//! G-boosting (003 §3.1.3): bias an n-gram LM towards a phrase list before the decoding graph is
//! compiled, so that boosted words reach the search (and the lattices) in the first place.
//!
//! For a phrase `w1 … wk` (every word in the LM and in the graph's word table):
//! - every listed n-gram whose words **end with a prefix** `w1 … wi` (`i ≥ 1`) of the phrase gets
//!   the discount added to its cost (Eq. 3.2, `W_new = W_old − log p` with `discount = −log p`):
//!   the phrase's first word is boosted after any history, each later word after the phrase's
//!   own earlier words. An n-gram matching several prefixes or phrases is discounted once;
//! - every prefix `w1 … wi` (`i ≥ 2`) the LM does not list is **added**, with the cost the LM's
//!   back-off rule gives it plus the discount ("a new arc … with a preset weight"). Prefixes
//!   longer than the LM's order become new higher-order n-grams, so a 5-word callsign is boosted
//!   as a whole in a 3-gram LM (what the thesis adds G-boosting for).
//!
//! Without a discount and with every prefix listed, the edit is empty and G is unchanged.

pub use crate::grammar::GBoostReport;
use crate::grammar::GrammarEdit;
use crate::{GraphError, Result};
use ctx_core::arpa::{ArpaLm, BOS, EOS};
use ctx_core::symbols::SymbolTable;
use std::collections::{BTreeSet, HashMap, HashSet};

const LN10: f32 = std::f32::consts::LN_10;

/// A G-boosting request: the phrases (words as written in the LM) and the discount per word.
#[derive(Debug, Clone, PartialEq)]
pub struct GBoost {
    /// Phrases to boost, each a word sequence.
    pub phrases: Vec<Vec<String>>,
    /// Cost added to each boosted n-gram (negative = boost), in −ln units like G's weights.
    pub discount: f32,
}

/// Computes the [`GrammarEdit`] of a G-boosting request against `lm`; `words` is the graph's
/// word table (a phrase with a word outside it cannot be decoded and is dropped).
pub fn gboost_edit(
    lm: &ArpaLm,
    words: &SymbolTable,
    boost: &GBoost,
) -> Result<(GrammarEdit, GBoostReport)> {
    if !boost.discount.is_finite() {
        return Err(GraphError::Invalid(format!(
            "G-boosting discount {} is not finite",
            boost.discount
        )));
    }
    let specials = [BOS, EOS];
    let distinct: BTreeSet<&Vec<String>> = boost.phrases.iter().filter(|p| !p.is_empty()).collect();
    let mut report = GBoostReport {
        phrases: distinct.len(),
        ..GBoostReport::default()
    };
    let mut phrases: Vec<Vec<u32>> = Vec::new();
    for p in distinct {
        let ids: Option<Vec<u32>> = p
            .iter()
            .map(|w| {
                if specials.contains(&w.as_str()) || words.id(w).is_none() {
                    None
                } else {
                    lm.word_id(w)
                }
            })
            .collect();
        match ids {
            Some(ids) => phrases.push(ids),
            None => report.dropped += 1,
        }
    }
    report.kept = phrases.len();
    let mut edit = GrammarEdit::default();
    if phrases.is_empty() {
        return Ok((edit, report));
    }
    // Every phrase prefix, and the longest one.
    let mut prefixes: HashSet<&[u32]> = HashSet::new();
    for p in &phrases {
        for i in 1..=p.len() {
            prefixes.insert(&p[..i]);
        }
    }
    let longest = phrases.iter().map(Vec::len).max().unwrap_or(0);
    if boost.discount != 0.0 {
        let mut deltas: HashMap<Vec<u32>, f32> = HashMap::new();
        for n in 1..=lm.order() {
            for e in lm.entries(n) {
                let hit = (1..=n.min(longest)).any(|k| prefixes.contains(&e.words[n - k..]));
                if hit {
                    deltas.insert(e.words.clone(), boost.discount);
                }
            }
        }
        report.discounted = deltas.len();
        edit.deltas = deltas;
    }
    // Missing prefixes, shortest first so each history exists before it is extended.
    let mut seen: HashSet<Vec<u32>> = HashSet::new();
    for len in 2..=longest {
        for p in &phrases {
            if p.len() < len {
                continue;
            }
            let g = &p[..len];
            if lm.entry(g).is_some() || !seen.insert(g.to_vec()) {
                continue;
            }
            let lp = lm
                .log10_prob(&g[..len - 1], g[len - 1])
                .expect("phrase words are in the LM");
            edit.added.push((g.to_vec(), -lp * LN10 + boost.discount));
        }
    }
    report.added = edit.added.len();
    Ok((edit, report))
}

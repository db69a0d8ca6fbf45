//! Per-utterance contexts for CTC decoding.
//!
//! **Word boosting** (001 §3.3, Fig. 4–5): a table word → score, applied as a single-state
//! acceptor B on every arc with a non-ε output label, without composing or copying TLG
//! ([`wfst_search::WordBooster`]). A **positive score is a bonus**: it is subtracted from the
//! path cost (graph units, natural log) each time the word is emitted. 001's rule of thumb keeps
//! a boost at most half the beam: a larger one lets boosted words crowd the beam out; such
//! scores are reported in [`BoostReport::over_half_beam`].
//!
//! **Phrase boosting** (beyond 001): multi-word phrases earn the score per word as the phrase
//! advances (an Aho-Corasick automaton over words carried in each token,
//! [`wfst_search::PhraseAutomaton`]); a partial match keeps what it earned when it breaks off,
//! as G-boosting's cost change does (no take-back).

use crate::error::Result;
use ctx_core::symbols::SymbolTable;
use ctx_graph::csr::DecodingGraph;
use wfst_search::{Booster, PhraseAutomaton, WordArcIndex, WordBooster};

/// What became of a context's entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoostReport {
    /// Entries applied.
    pub applied: usize,
    /// Entries with a word not in words.txt (left out, the others applied).
    pub oov: Vec<String>,
    /// Words whose score exceeds half the beam (001's rule of thumb), with the score.
    pub over_half_beam: Vec<(String, f32)>,
}

/// A built context: the booster a stream decodes with and the report.
#[derive(Debug, Clone)]
pub struct ContextBoost {
    /// The per-stream booster.
    pub booster: Booster,
    /// What was applied and what was not.
    pub report: BoostReport,
}

impl ContextBoost {
    /// Word boosting: `entries` are (word, score) with a positive score a bonus; a word given
    /// twice keeps its last score. `beam` is the search beam the rule of thumb is checked
    /// against.
    pub fn words(
        g: &DecodingGraph,
        words: &SymbolTable,
        entries: &[(String, f32)],
        beam: f32,
    ) -> Result<Self> {
        Self::words_indexed(&WordArcIndex::new(g), words, entries, beam)
    }

    /// [`Self::words`] over a graph's word-arc index built once ([`WordArcIndex::new`]): many
    /// per-utterance tables over one graph then cost their own words' arcs each.
    pub fn words_indexed(
        index: &WordArcIndex,
        words: &SymbolTable,
        entries: &[(String, f32)],
        beam: f32,
    ) -> Result<Self> {
        let mut report = BoostReport::default();
        let mut table = Vec::new();
        for (w, score) in entries {
            match words.id(w).filter(|&id| id != 0) {
                Some(id) => {
                    report.applied += 1;
                    if score.abs() > beam / 2.0 {
                        report.over_half_beam.push((w.clone(), *score));
                    }
                    table.push((id, -*score));
                }
                None => report.oov.push(w.clone()),
            }
        }
        let booster = if table.is_empty() {
            Booster::None
        } else {
            Booster::Words(WordBooster::with_index(index, table)?)
        };
        Ok(Self { booster, report })
    }

    /// Phrase boosting: each phrase (words) earns `score` per word matched in order (a partial
    /// match keeps it). A phrase with a word not in words.txt is left out.
    pub fn phrases(words: &SymbolTable, phrases: &[Vec<String>], score: f32) -> Result<Self> {
        let mut report = BoostReport::default();
        let mut ids = Vec::new();
        for p in phrases {
            let id: Option<Vec<u32>> = p.iter().map(|w| words.id(w).filter(|&i| i != 0)).collect();
            match id {
                Some(id) if !id.is_empty() => {
                    report.applied += 1;
                    ids.push(id);
                }
                _ => report.oov.push(p.join(" ")),
            }
        }
        let booster = if ids.is_empty() {
            Booster::None
        } else {
            Booster::Phrases(PhraseAutomaton::new(&ids, -score)?)
        };
        Ok(Self { booster, report })
    }
}

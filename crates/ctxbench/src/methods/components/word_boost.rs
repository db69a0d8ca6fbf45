//! Word boosting (001 §3.3's single-state B on any graph): each utterance's distinct words
//! earn a bonus when a path emits them.

use super::search::{BuildContext, Built, SearchComponent};
use crate::experiment::Component;
use crate::pipeline::lists::check_global;
use crate::pipeline::lists::ListKind;
use crate::pipeline::setup::Setup;
use crate::pipeline::utterance_lists::{list_identity, list_of, set_list};
use crate::settings::{Block, SettingSpec, Settings};
use anyhow::{bail, Result};
use ctx_core::bias::BiasList;
use ctx_data::dataset::Dataset;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use wfst_search::Booster;

/// Per-utterance boosting (001 §3.3 and phrase boosting) of every utterance of a setup: one
/// [`ctc_wfst::ContextBoost`] per distinct list (a global list is built once for all), its
/// booster shared by the utterances with that list.
pub struct ContextBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// Words (or phrases) applied, summed over utterances.
    pub applied: usize,
    /// Words (or phrases) not in the graph's words.txt (left out), summed over utterances.
    pub oov: usize,
    /// Seconds spent building the tables (the lists arrive with their utterances: counted in RTFx).
    pub build_s: f64,
    /// Distinct lists built (a set-wide list: 1).
    pub lists: usize,
}

impl ContextBoosters {
    /// Word boosting: the distinct words of each utterance's list of `kind`, each with bonus
    /// `score` (positive = favoured), as the single-state B applied on the fly
    /// ([`ctc_wfst::ContextBoost::words_indexed`], over the graph's word-arc index, built once
    /// per graph, [`Setup::word_index`]; the lists' own time is counted).
    pub fn words(setup: &Setup, kind: &ListKind, score: f32, beam: f32) -> Result<Self> {
        if !score.is_finite() {
            bail!("word_boost_score (--word-boost-score) {score}: a bonus in graph units, a finite number");
        }
        // The graph's index is built once per graph (not per list: not in the list's time).
        let index = setup.word_index();
        let t = Instant::now();
        let words_of = |l: &BiasList| -> Vec<String> {
            let set: BTreeSet<&String> = l.phrases.iter().flatten().collect();
            set.into_iter().cloned().collect()
        };
        let mut out = Self::per_list(setup, kind, words_of, |words| {
            let entries: Vec<(String, f32)> = words.iter().map(|w| (w.clone(), score)).collect();
            Ok(ctc_wfst::ContextBoost::words_indexed(
                index,
                &setup.graph.symbols.words,
                &entries,
                beam,
            )?)
        })?;
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Phrase boosting: each utterance's list of `kind` as a phrase automaton, `score` per word
    /// matched in order ([`ctc_wfst::ContextBoost::phrases`]).
    pub fn phrases(setup: &Setup, kind: &ListKind, score: f32) -> Result<Self> {
        Self::per_list(
            setup,
            kind,
            |l| l.phrases.clone(),
            |phrases| {
                Ok(ctc_wfst::ContextBoost::phrases(
                    &setup.graph.symbols.words,
                    phrases,
                    score,
                )?)
            },
        )
    }

    /// One `make(key(list))` per distinct key over the utterances' lists of `kind`.
    fn per_list<K: Ord>(
        setup: &Setup,
        kind: &ListKind,
        key: impl Fn(&BiasList) -> K,
        mut make: impl FnMut(&K) -> Result<ctc_wfst::ContextBoost>,
    ) -> Result<Self> {
        crate::pipeline::lists::require_named(&setup.dataset, kind)?;
        let t = Instant::now();
        let mut out = Self {
            boosters: Vec::with_capacity(setup.dataset.utterances.len()),
            applied: 0,
            oov: 0,
            build_s: 0.0,
            lists: 1,
        };
        let utts = &setup.dataset.utterances;
        if let Some(l) = set_list(setup, kind) {
            // One list for every utterance: built once.
            let c = make(&key(&l))?;
            out.applied = c.report.applied * utts.len();
            out.oov = c.report.oov.len() * utts.len();
            out.boosters = vec![c.booster; utts.len()];
        } else {
            // Each utterance's list is told apart by its identity (cheap for a file added to
            // an own list), then built once per distinct key of the list itself.
            let mut seen: BTreeMap<Vec<Vec<String>>, usize> = BTreeMap::new();
            let mut index: BTreeMap<K, usize> = BTreeMap::new();
            let mut made: Vec<ctc_wfst::ContextBoost> = Vec::new();
            for u in utts {
                let i = match seen.entry(list_identity(setup, u, kind)) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => {
                        let k = key(&list_of(setup, u, kind));
                        let i = match index.entry(k) {
                            Entry::Occupied(x) => *x.get(),
                            Entry::Vacant(x) => {
                                made.push(make(x.key())?);
                                *x.insert(made.len() - 1)
                            }
                        };
                        *e.insert(i)
                    }
                };
                let c = &made[i];
                out.applied += c.report.applied;
                out.oov += c.report.oov.len();
                out.boosters.push(c.booster.clone());
            }
            out.lists = made.len();
        }
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }
}

crate::settings_block! {
    /// Word boosting's settings (001 §3.3's B on any graph; the WFST and CTC families).
    pub struct WordBoost in "word-boosting" {
        /// per-utterance word list whose distinct words are boosted: sequences, unigrams, gt,
        /// test-words, other-words, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH
        word_boost: Option<String> = None => required,
        /// bonus per boosted word (graph units; positive = favoured; 001's rule: at most half
        /// the beam)
        word_boost_score: f64 = 3.0,
    }
}

impl WordBoost {
    /// The list kind, when the component is on (an unknown kind is an error naming it).
    pub fn list(&self) -> Result<Option<ListKind>> {
        parse_list(
            crate::key!(WordBoost, word_boost),
            self.word_boost.as_deref(),
        )
    }

    /// Checks the values: a list kind the runner knows, a finite score.
    pub fn check(&self) -> Result<()> {
        self.list()?;
        if !self.word_boost_score.is_finite() {
            bail!("word_boost_score {} must be finite", self.word_boost_score);
        }
        Ok(())
    }

    /// Every utterance's word booster (`None` without a list); `beam` bounds the score.
    pub fn boosters(&self, st: &Setup, beam: f32) -> Result<Option<ContextBoosters>> {
        match self.list()? {
            Some(kind) => {
                ContextBoosters::words(st, &kind, self.word_boost_score as f32, beam).map(Some)
            }
            None => Ok(None),
        }
    }
}

crate::settings_block! {
    /// Phrase boosting's settings (the CTC family: a bonus per word matched in order).
    pub struct PhraseBoost in "phrase-boosting" {
        /// per-utterance phrase list: sequences, gt, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH
        phrase_boost: Option<String> = None => required,
        /// bonus per word of a phrase matched in order (graph units; a broken-off prefix keeps
        /// it, as in G-boosting)
        phrase_boost_score: f64 = 3.0,
    }
}

impl PhraseBoost {
    /// The list kind, when the component is on.
    pub fn list(&self) -> Result<Option<ListKind>> {
        parse_list(
            crate::key!(PhraseBoost, phrase_boost),
            self.phrase_boost.as_deref(),
        )
    }

    /// Every utterance's phrase booster (`None` without a list).
    pub fn boosters(&self, st: &Setup) -> Result<Option<ContextBoosters>> {
        match self.list()? {
            Some(kind) => {
                ContextBoosters::phrases(st, &kind, self.phrase_boost_score as f32).map(Some)
            }
            None => Ok(None),
        }
    }
}

/// A per-utterance list setting's kind (`None` unset); `key` names it in the error.
pub fn parse_list(key: &str, v: Option<&str>) -> Result<Option<ListKind>> {
    v.map(|l| {
        ListKind::parse(l).ok_or_else(|| {
            anyhow::anyhow!(
                "{key} '{l}' (sequences, unigrams, gt, test-words, other-words, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH)"
            )
        })
    })
    .transpose()
}

/// Word boosting as a search component (001 §3.3).
pub struct WordBoosting;

impl SearchComponent for WordBoosting {
    fn component(&self) -> Component {
        Component {
            name: "word-boosting",
            doc: "per-utterance word boosting as a single-state B applied on the fly (001 §3.3), \
                  on any graph",
        }
    }

    fn specs(&self) -> &'static [SettingSpec] {
        WordBoost::SPECS
    }

    fn on(&self, s: &Settings) -> Result<bool> {
        Ok(WordBoost::read(s)?.word_boost.is_some())
    }

    fn check(&self, s: &Settings) -> Result<()> {
        WordBoost::read(s)?.check()
    }

    fn check_lists(&self, ds: &Dataset, s: &Settings) -> Result<()> {
        let w = WordBoost::read(s)?;
        check_global(
            ds,
            crate::key!(WordBoost, word_boost),
            w.word_boost.as_deref(),
        )
    }

    fn key(&self, s: &Settings) -> Result<String> {
        Ok(WordBoost::read(s)?.key())
    }

    fn build(&self, cx: &BuildContext<'_>, s: &Settings) -> Result<Option<Built>> {
        let w = WordBoost::read(s)?;
        let Some(b) = w.boosters(cx.setup, cx.decode.config.beam)? else {
            return Ok(None);
        };
        let n = cx.setup.dataset.utterances.len() as f64;
        Ok(Some(Built {
            report: format!(
                "word boosting with list '{}' (+{} per word): {} words applied, {} not in words.txt, tables built in {:.3} s",
                w.word_boost.as_deref().unwrap_or_default(),
                w.word_boost_score,
                b.applied,
                b.oov,
                b.build_s
            ),
            measures: [
                ("boosted_words", b.applied as f64 / n),
                ("boost_oov", b.oov as f64 / n),
                ("contexts", b.lists as f64),
            ]
            .into(),
            phrases: None,
            build_s: b.build_s,
            boosters: b.boosters,
        }))
    }
}

/// Phrase boosting as a search component (the CTC family: a bonus per word matched in order).
pub struct PhraseBoosting;

impl SearchComponent for PhraseBoosting {
    fn component(&self) -> Component {
        Component {
            name: "phrase-boosting",
            doc: "per-utterance phrase boosting: a bonus per word matched in order (beyond 001)",
        }
    }

    fn specs(&self) -> &'static [SettingSpec] {
        PhraseBoost::SPECS
    }

    fn on(&self, s: &Settings) -> Result<bool> {
        Ok(PhraseBoost::read(s)?.phrase_boost.is_some())
    }

    fn check(&self, s: &Settings) -> Result<()> {
        PhraseBoost::read(s)?.list().map(|_| ())
    }

    fn check_lists(&self, ds: &Dataset, s: &Settings) -> Result<()> {
        let p = PhraseBoost::read(s)?;
        check_global(
            ds,
            crate::key!(PhraseBoost, phrase_boost),
            p.phrase_boost.as_deref(),
        )
    }

    fn key(&self, s: &Settings) -> Result<String> {
        Ok(PhraseBoost::read(s)?.key())
    }

    fn build(&self, cx: &BuildContext<'_>, s: &Settings) -> Result<Option<Built>> {
        let p = PhraseBoost::read(s)?;
        let Some(b) = p.boosters(cx.setup)? else {
            return Ok(None);
        };
        Ok(Some(Built {
            report: format!(
                "phrase boosting with list '{}' (+{} per matched word): {} phrases applied, {} with a word outside words.txt, built in {:.3} s",
                p.phrase_boost.as_deref().unwrap_or_default(),
                p.phrase_boost_score,
                b.applied,
                b.oov,
                b.build_s
            ),
            measures: [("contexts", b.lists as f64)].into(),
            phrases: Some((b.applied as f64, b.oov as f64)),
            build_s: b.build_s,
            boosters: b.boosters,
        }))
    }
}

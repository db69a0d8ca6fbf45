//! How a setup's hypotheses are scored: WER, NE-WER over the dataset's entity classes with its
//! insertion rule, U-WER and the target words' precision and recall, and — when the entry asks
//! (`fbai_scoring`) — the LibriSpeech biasing benchmark's WER, U-WER and B-WER.

use super::setup::Setup;
use anyhow::Result;
use ctx_core::metrics::keywords::KeywordList;
use ctx_core::metrics::reference::ScoringRef;
use ctx_core::metrics::score::{
    score_utterance, NeInsertions, PrfCounts, ScoreOptions, ScoreTotals,
};
use ctx_data::dataset::Dataset;
use std::collections::{BTreeMap, BTreeSet};

impl Setup {
    /// The entity classes NE-WER counts (Earnings: PERSON and ORG, as the thesis; ATC: all).
    fn ne_classes(&self) -> Option<BTreeSet<String>> {
        if let Some((classes, _)) = &self.files_scoring {
            return classes.clone();
        }
        if self.dataset.has_callsigns {
            None
        } else {
            Some(["PERSON", "ORG"].iter().map(|s| s.to_string()).collect())
        }
    }

    /// Scores hypotheses (one per utterance, in dataset order); `targets` are the words whose
    /// precision/recall/F1 is measured.
    pub fn score(
        &self,
        hyps: &[Vec<String>],
        targets: Option<&BTreeSet<String>>,
    ) -> Result<ScoreTotals> {
        let opts = ScoreOptions {
            ne_classes: self.ne_classes(),
            ne_insertions: if let Some((_, ins)) = &self.files_scoring {
                *ins
            } else if self.dataset.has_callsigns {
                NeInsertions::Inside
            } else {
                NeInsertions::Never
            },
            targets: targets.map(|t| t.iter().cloned().collect()),
        };
        score_with(&self.dataset, hyps, &opts)
    }

    /// The LibriSpeech biasing benchmark's WER, U-WER and B-WER (`score.py`'s definitions,
    /// [`ctx_core::metrics::fbai`]) of hypotheses in dataset order, each utterance's entity
    /// words its biased words: `fbai_wer`, `fbai_u_wer`, `fbai_b_wer` when the entry asks
    /// for them (`fbai_scoring`), none otherwise.
    pub fn fbai_measures(&self, hyps: &[Vec<String>]) -> BTreeMap<String, f64> {
        use ctx_core::metrics::fbai::{score_utterance, FbaiTotals};
        let mut m = BTreeMap::new();
        if !self.fbai {
            return m;
        }
        let mut t = FbaiTotals::default();
        for (u, h) in self.dataset.utterances.iter().zip(hyps) {
            let rare: std::collections::HashSet<String> = u
                .entities
                .iter()
                .flat_map(|&(_, a, b)| u.words[a..b].iter().cloned())
                .collect();
            score_utterance(&u.words, h, &rare, &mut t);
        }
        for (k, c) in [
            ("fbai_wer", t.wer),
            ("fbai_u_wer", t.u_wer),
            ("fbai_b_wer", t.b_wer),
        ] {
            if let Some(r) = c.error_rate() {
                m.insert(k.to_string(), r);
            }
        }
        m
    }
}

fn score_with(ds: &Dataset, hyps: &[Vec<String>], opts: &ScoreOptions) -> Result<ScoreTotals> {
    let mut totals = ScoreTotals::default();
    for (u, h) in ds.utterances.iter().zip(hyps) {
        let r = ScoringRef::with_spans(&u.id, &u.words, &u.entities)?;
        totals.add(&score_utterance(&r, h, opts));
    }
    totals.keywords = keyword_counts(ds, hyps);
    Ok(totals)
}

/// The field's keyword counts (NeMo's `compute_key_words_fscore.py`,
/// [`ctx_core::metrics::keywords`]) of hypotheses in dataset order, each utterance's keywords
/// its own list (`sequences`: an ATC transmission's callsigns and commands, an Earnings call's
/// entity list); `None` for a dataset without lists.
fn keyword_counts(ds: &Dataset, hyps: &[Vec<String>]) -> Option<PrfCounts> {
    let mut lists: BTreeMap<usize, KeywordList> = BTreeMap::new();
    let mut c: Option<PrfCounts> = None;
    for (u, h) in ds.utterances.iter().zip(hyps) {
        let Some(l) = ds.list_for(u) else {
            continue;
        };
        // Utterances of one call share its list: one keyword table per list.
        let kw = lists
            .entry(l as *const _ as usize)
            .or_insert_with(|| KeywordList::new(l.phrases.iter()));
        c.get_or_insert_with(PrfCounts::default)
            .add(&kw.count(&u.words, h));
    }
    c
}

/// Scores hypotheses of a simulated (registered, not `files`) dataset the way [`Setup::score`]
/// does: entities PERSON and ORG (Earnings) or callsigns (ATCO2), for methods without a graph.
pub fn score_dataset(
    ds: &Dataset,
    hyps: &[Vec<String>],
    targets: Option<&BTreeSet<String>>,
) -> Result<ScoreTotals> {
    let opts = ScoreOptions {
        ne_classes: (!ds.has_callsigns)
            .then(|| ["PERSON", "ORG"].iter().map(|s| s.to_string()).collect()),
        ne_insertions: if ds.has_callsigns {
            NeInsertions::Inside
        } else {
            NeInsertions::Never
        },
        targets: targets.map(|t| t.iter().cloned().collect()),
    };
    score_with(ds, hyps, &opts)
}

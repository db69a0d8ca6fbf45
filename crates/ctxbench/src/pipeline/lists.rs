//! Biasing lists by name: a whole set's static list, an utterance's list of a kind
//! (`sequences`, `unigrams`, `gt`, `list:NAME`) and the open-vocabulary list kinds.

use anyhow::{bail, Result};
use ctx_core::bias::BiasList;
use ctx_data::dataset::{Dataset, Utterance};
use std::collections::BTreeSet;

/// A static (whole-set) phrase list, sorted and de-duplicated: `sequences` is the union of every
/// utterance's (ATC radar) or document's (Earnings) list, `unigrams` their distinct words, `gt`
/// every reference entity of the set (an oracle), any other name a global list of the dataset
/// (Earnings `oracle`/`distractor`, ATC `rare`).
pub fn static_list(dataset: &Dataset, name: &str) -> Result<Vec<Vec<String>>> {
    let mut set: BTreeSet<Vec<String>> = BTreeSet::new();
    match name {
        "sequences" => {
            for l in dataset.lists.values() {
                set.extend(l.phrases.iter().cloned());
            }
        }
        "unigrams" => {
            for l in dataset.lists.values() {
                set.extend(l.unigrams().phrases);
            }
        }
        "gt" => {
            for u in &dataset.utterances {
                set.extend(entity_phrases(u));
            }
        }
        other => match dataset.global_lists.get(other) {
            Some(l) => set.extend(l.phrases.iter().cloned()),
            None => {
                let mut names = vec!["sequences", "unigrams", "gt"];
                names.extend(dataset.global_lists.keys().map(String::as_str));
                bail!(
                    "dataset {} has no list '{other}' (available: {})",
                    dataset.name,
                    names.join(", ")
                );
            }
        },
    }
    set.retain(|p| !p.is_empty());
    Ok(set.into_iter().collect())
}

/// Which list an utterance is biased with (Table 1's rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The utterance's (ATC) or document's (Earnings) list of phrases.
    Sequences,
    /// The distinct words of that list.
    Unigrams,
    /// Only the ground-truth entity of the utterance (ATC callsign; oracle).
    GroundTruth,
    /// A global list of the dataset for every utterance (ATC `rare`, Earnings `oracle`).
    Global(String),
    /// Every distinct word of the references being decoded, for every utterance (001 Fig. 6's
    /// "accurate" list).
    TestWords,
    /// As many words of the graph's vocabulary that never occur in those references, chosen by
    /// a fixed hash order (001 Fig. 6's "inaccurate" list).
    OtherWords,
}

impl ListKind {
    /// Parses `sequences`, `unigrams`, `gt`, `test-words`, `other-words` or `list:NAME` (a
    /// global list).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "test-words" => Some(Self::TestWords),
            "other-words" => Some(Self::OtherWords),
            "sequences" => Some(Self::Sequences),
            "unigrams" => Some(Self::Unigrams),
            "gt" | "ground-truth" => Some(Self::GroundTruth),
            _ => s
                .strip_prefix("list:")
                .filter(|n| !n.is_empty())
                .map(|n| Self::Global(n.to_string())),
        }
    }
}

/// The word sequences of an utterance's reference entities (the ground-truth phrases).
fn entity_phrases(u: &Utterance) -> impl Iterator<Item = Vec<String>> + '_ {
    u.entities.iter().map(|(_, s, e)| u.words[*s..*e].to_vec())
}

/// Where an open-vocabulary run's phrase lists come from (issue 42).
#[derive(Debug, Clone, PartialEq)]
pub enum OpenList {
    /// Each utterance's dataset list of this kind, every phrase at the run's weight.
    Dataset(ListKind),
    /// One phrase file for every utterance (`file:PATH`): a phrase per line with an optional
    /// `<TAB>weight` (the run's weight otherwise; negative weights suppress).
    File(std::path::PathBuf),
}

impl OpenList {
    /// Parses `file:PATH` or a [`ListKind`].
    ///
    /// ```
    /// use ctxbench::pipeline::{ListKind, OpenList};
    /// assert_eq!(OpenList::parse("file:names.tsv"), Some(OpenList::File("names.tsv".into())));
    /// assert_eq!(OpenList::parse("gt"), Some(OpenList::Dataset(ListKind::GroundTruth)));
    /// assert_eq!(OpenList::parse("file:"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        match s.strip_prefix("file:") {
            Some("") => None,
            Some(p) => Some(Self::File(p.into())),
            None => ListKind::parse(s).map(Self::Dataset),
        }
    }
}

/// The list of an utterance that the dataset alone defines (its sequences, their unigrams, its
/// ground-truth entities, a global list); `None` for the kinds that need a graph's vocabulary
/// (test words, other words).
pub fn dataset_list_of(ds: &Dataset, u: &Utterance, kind: &ListKind) -> Option<BiasList> {
    Some(match kind {
        ListKind::Sequences => ds.list_for(u).cloned().unwrap_or_default(),
        ListKind::Unigrams => ds.list_for(u).map(BiasList::unigrams).unwrap_or_default(),
        ListKind::GroundTruth => BiasList {
            phrases: entity_phrases(u).collect(),
        },
        ListKind::Global(name) => ds.global_lists.get(name).cloned().unwrap_or_default(),
        ListKind::TestWords | ListKind::OtherWords => return None,
    })
}

/// A list setting naming a global list (`list:NAME`) must name one of `ds`.
pub fn check_global(ds: &Dataset, key: &str, list: Option<&str>) -> Result<()> {
    if let Some(Some(ListKind::Global(n))) = list.map(ListKind::parse) {
        if !ds.global_lists.contains_key(&n) {
            bail!(
                "{key} 'list:{n}': dataset {} has no global list '{n}'",
                ds.name
            );
        }
    }
    Ok(())
}

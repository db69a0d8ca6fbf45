//! Biasing lists by name: a whole set's static list, an utterance's list of a kind
//! (`sequences`, `unigrams`, `gt`, `list:NAME`) and the open-vocabulary list kinds.

use anyhow::{bail, Result};
use ctx_core::bias::BiasList;
use ctx_core::context_list::{ContextList, ContextPhrase};
use ctx_data::dataset::{Dataset, Utterance};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A static (whole-set) phrase list, sorted and de-duplicated: `sequences` is the union of every
/// utterance's (ATC radar) or document's (Earnings) list, `unigrams` their distinct words, `gt`
/// every reference entity of the set (an oracle), any other name a global list of the dataset
/// (Earnings `oracle`/`distractor`, ATC `rare`), and `file:PATH` a phrase file's phrases.
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
        other if ListFile::parse(other).is_some() => {
            let f = ListFile::parse(other).expect("checked");
            set.extend(bias_list_of(&*file_list(&f)?).phrases);
        }
        other => match (
            dataset.global_lists.get(other),
            dataset.doc_lists.get(other),
        ) {
            (Some(l), _) => set.extend(l.phrases.iter().cloned()),
            // A per-document list as one static list: the union of the documents' lists.
            (None, Some(per_doc)) => {
                for l in per_doc.values() {
                    set.extend(l.phrases.iter().cloned());
                }
            }
            (None, None) => {
                let mut names = vec!["sequences", "unigrams", "gt"];
                names.extend(dataset.list_names());
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
    /// A named list of the dataset (`list:NAME`): a global one for every utterance (ATC
    /// `rare`, Earnings `oracle`) or a per-document one (Earnings `conec`, each call's list).
    Global(String),
    /// Every distinct word of the references being decoded, for every utterance (001 Fig. 6's
    /// "accurate" list).
    TestWords,
    /// As many words of the graph's vocabulary that never occur in those references, chosen by
    /// a fixed hash order (001 Fig. 6's "inaccurate" list).
    OtherWords,
    /// One phrase file for every utterance (`file:PATH`, a phrase per line, an optional
    /// `<TAB>weight` that only open-vocabulary contexts read; a phrase with a negative weight
    /// is a suppression there and left out of the other methods' lists): the list a user
    /// holds, at any size.
    File(ListFile),
    /// Each utterance's list of a kind plus one phrase file's phrases (`KIND+file:PATH`): the
    /// utterance's own phrases among distractors, a "global" list (a phrase in
    /// both counts once).
    Plus(Box<ListKind>, ListFile),
}

/// A phrase file and its format: ours (`file:PATH`, `phrase[<TAB>weight]`) or NVIDIA NeMo's
/// context-biasing file (`nemo:PATH`, `WORD_SPELLING1_SPELLING2` per line, an optional
/// `<TAB>weight`): NeMo's underscore is a separator, so a file of ours whose words hold one
/// (ATC's `k_l_m`) is read as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListFile {
    /// Where the file is.
    pub path: PathBuf,
    /// Whether underscores separate a phrase from its spellings (NeMo's format).
    pub nemo: bool,
}

impl ListFile {
    /// `file:PATH` or `nemo:PATH` (a non-empty path), else `None`.
    pub fn parse(s: &str) -> Option<Self> {
        let (p, nemo) = match (s.strip_prefix("file:"), s.strip_prefix("nemo:")) {
            (Some(p), _) => (p, false),
            (_, Some(p)) => (p, true),
            _ => return None,
        };
        (!p.is_empty()).then(|| Self {
            path: p.into(),
            nemo,
        })
    }

    /// A file in our format (`file:PATH`).
    pub fn ours(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            nemo: false,
        }
    }

    /// Reads the file (errors name it and the line); lines without a weight get `weight`.
    pub fn read(&self, weight: f32) -> Result<ContextList> {
        Ok(ContextList::read_with(
            &self.path,
            weight,
            true,
            self.nemo.then_some('_'),
        )?)
    }
}

impl std::fmt::Display for ListFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.nemo { "nemo" } else { "file" };
        write!(f, "{kind}:{}", self.path.display())
    }
}

impl ListKind {
    /// What tells one utterance's list of this kind from another's: for a phrase file added to
    /// an own list (`KIND+file:PATH`) the own list's kind — the file is every utterance's, so a
    /// build memoised on it joins the file once per distinct own list — else the kind itself.
    pub fn identity(&self) -> &ListKind {
        match self {
            Self::Plus(own, _) => own,
            k => k,
        }
    }

    /// Parses `sequences`, `unigrams`, `gt`, `test-words`, `other-words`, `list:NAME` (a
    /// global list), `file:PATH` (a phrase file) or `nemo:PATH` (a NeMo context file).
    ///
    /// ```
    /// use ctxbench::pipeline::{ListFile, ListKind};
    /// assert_eq!(ListKind::parse("file:names.tsv"), Some(ListKind::File(ListFile::ours("names.tsv"))));
    /// assert_eq!(ListKind::parse("file:"), None);
    /// assert_eq!(ListKind::parse("list:rare"), Some(ListKind::Global("rare".into())));
    /// assert_eq!(
    ///     ListKind::parse("sequences+file:d.txt"),
    ///     Some(ListKind::Plus(Box::new(ListKind::Sequences), ListFile::ours("d.txt")))
    /// );
    /// assert_eq!(ListKind::parse("file:a+file:b"), None);
    /// let nemo = ListKind::parse("gt+nemo:ctx.txt").unwrap();
    /// assert!(matches!(nemo, ListKind::Plus(_, f) if f.nemo && f.to_string() == "nemo:ctx.txt"));
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        let plus = s.find("+file:").or_else(|| s.find("+nemo:"));
        if let Some(i) = plus {
            let own = Self::parse(&s[..i])?;
            let file = ListFile::parse(&s[i + 1..])?;
            if matches!(own, Self::File(_) | Self::Plus(..)) {
                return None;
            }
            return Some(Self::Plus(Box::new(own), file));
        }
        if let Some(f) = ListFile::parse(s) {
            return Some(Self::File(f));
        }
        if s.starts_with("file:") || s.starts_with("nemo:") {
            return None;
        }
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

/// A list setting (`key`'s value `l`) of a kind the dataset alone defines per utterance —
/// sequences, unigrams, gt, list:NAME, file:PATH or KIND+file:PATH (not the graph's test or
/// other words) — or an error naming the setting and the kinds.
pub fn dataset_kind(key: &str, l: &str) -> Result<ListKind> {
    match ListKind::parse(l) {
        Some(ListKind::TestWords | ListKind::OtherWords) | None => {
            bail!("{key} '{l}' (sequences, unigrams, gt, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH)")
        }
        Some(k) => Ok(k),
    }
}

/// The word sequences of an utterance's reference entities (the ground-truth phrases).
fn entity_phrases(u: &Utterance) -> impl Iterator<Item = Vec<String>> + '_ {
    u.entities.iter().map(|(_, s, e)| u.words[*s..*e].to_vec())
}

/// Where an open-vocabulary run's phrase lists come from.
#[derive(Debug, Clone, PartialEq)]
pub enum OpenList {
    /// Each utterance's dataset list of this kind, every phrase at the run's weight.
    Dataset(ListKind),
    /// One phrase file for every utterance (`file:PATH`, or NeMo's `nemo:PATH`): a phrase per
    /// line with an optional `<TAB>weight` (the run's weight otherwise; negative weights
    /// suppress).
    File(ListFile),
}

impl OpenList {
    /// Parses `file:PATH`, `nemo:PATH` or a [`ListKind`].
    ///
    /// ```
    /// use ctxbench::pipeline::{ListFile, ListKind, OpenList};
    /// assert_eq!(OpenList::parse("file:names.tsv"), Some(OpenList::File(ListFile::ours("names.tsv"))));
    /// assert_eq!(OpenList::parse("gt"), Some(OpenList::Dataset(ListKind::GroundTruth)));
    /// assert_eq!(OpenList::parse("file:"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        match ListKind::parse(s)? {
            ListKind::File(f) => Some(Self::File(f)),
            k => Some(Self::Dataset(k)),
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
        ListKind::Global(name) => ds.named_list(name, u).cloned().unwrap_or_default(),
        // Read (once per process) when the run's lists were checked ([`check_global`]).
        ListKind::File(f) => return file_list(f).ok().map(|l| bias_list_of(&l)),
        ListKind::Plus(own, f) => {
            let own = dataset_list_of(ds, u, own)?;
            let file = file_list(f).ok().map(|l| bias_list_of(&l))?;
            union(own, file)
        }
        ListKind::TestWords | ListKind::OtherWords => return None,
    })
}

/// The phrases of an utterance's list with their spellings (NeMo's `WORD_SPELLING…`, only a
/// phrase file has them), for a method that writes a phrase as a unit however it was heard
/// (CTC-WS): a phrase file's phrases of weight 0 or more, the dataset's phrases as written;
/// `None` as [`dataset_list_of`].
pub fn spelled_list_of(ds: &Dataset, u: &Utterance, kind: &ListKind) -> Option<Vec<ContextPhrase>> {
    let file = |f: &ListFile| -> Option<Vec<ContextPhrase>> {
        let l = file_list(f).ok()?;
        Some(
            l.phrases
                .iter()
                .filter(|p| p.weight >= 0.0)
                .cloned()
                .collect(),
        )
    };
    let plain = |l: BiasList| -> Vec<ContextPhrase> {
        l.phrases
            .into_iter()
            .map(|w| ContextPhrase::new(w, 0.0))
            .collect()
    };
    match kind {
        ListKind::File(f) => file(f),
        ListKind::Plus(own, f) => {
            let mut out = plain(dataset_list_of(ds, u, own)?);
            let seen: std::collections::HashSet<Vec<String>> =
                out.iter().map(|p| p.words.clone()).collect();
            out.extend(file(f)?.into_iter().filter(|p| !seen.contains(&p.words)));
            Some(out)
        }
        _ => dataset_list_of(ds, u, kind).map(plain),
    }
}

/// `a`'s phrases, then those of `b` that `a` lacks.
pub fn union(a: BiasList, b: BiasList) -> BiasList {
    let seen: std::collections::HashSet<&Vec<String>> = a.phrases.iter().collect();
    let extra: Vec<Vec<String>> = b
        .phrases
        .iter()
        .filter(|p| !seen.contains(p))
        .cloned()
        .collect();
    let mut phrases = a.phrases;
    phrases.extend(extra);
    BiasList { phrases }
}

/// The phrases of a phrase file that a list of phrases without weights holds: those with a
/// weight of 0 or more (a negative weight suppresses a phrase in an open-vocabulary context;
/// no other method has a use for it), each as its spellings (NeMo's `WORD_SPELLING…`: a method
/// that boosts the graph's words or the model's tokens boosts what the phrase may be heard as,
/// and writes what it decodes), each word sequence once.
pub fn bias_list_of(l: &ContextList) -> BiasList {
    let mut seen = std::collections::HashSet::new();
    BiasList {
        phrases: l
            .phrases
            .iter()
            .filter(|p| p.weight >= 0.0)
            .flat_map(|p| p.spelled())
            .filter(|s| seen.insert(*s))
            .map(<[String]>::to_vec)
            .collect(),
    }
}

/// A phrase file (`file:PATH` or `nemo:PATH`), read once per process and shared: errors name
/// the file and the line; a file without a phrase is an error (it would decode unbiased under a
/// biased row's label). Lines without a weight get weight 1.
pub fn file_list(f: &ListFile) -> Result<Arc<ContextList>> {
    static READ: Mutex<BTreeMap<ListFile, Arc<ContextList>>> = Mutex::new(BTreeMap::new());
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = read.get(f) {
        return Ok(l.clone());
    }
    let l = f.read(1.0)?;
    if l.is_empty() {
        bail!("{}: the file holds no phrase", f.path.display());
    }
    let l = Arc::new(l);
    read.insert(f.clone(), l.clone());
    Ok(l)
}

/// What an error about a missing `list:NAME` says the dataset has.
pub fn lists_it_has(ds: &Dataset) -> String {
    match ds.list_names() {
        names if names.is_empty() => "it has no named list".into(),
        names => format!("it has: {}", names.join(", ")),
    }
}

/// A `list:NAME` the dataset lacks, refused with the names it has (every method checks this
/// before it builds anything).
pub fn require_named(ds: &Dataset, kind: &ListKind) -> Result<()> {
    match kind {
        ListKind::Plus(own, _) => require_named(ds, own),
        ListKind::Global(n) if !ds.has_list(n) => bail!(
            "dataset {} has no list '{n}' ({})",
            ds.name,
            lists_it_has(ds)
        ),
        _ => Ok(()),
    }
}

/// A list setting naming a global list (`list:NAME`) must name one of `ds`; one naming a phrase
/// file (`file:PATH`) must read and hold a phrase (read here, once, before anything decodes).
pub fn check_global(ds: &Dataset, key: &str, list: Option<&str>) -> Result<()> {
    let parsed = list.map(ListKind::parse);
    if let Some(Some(ListKind::Plus(own, f))) = &parsed {
        require_named(ds, own).map_err(|e| anyhow::anyhow!("{key}: {e:#}"))?;
        file_list(f).map_err(|e| anyhow::anyhow!("{key} '{f}': {e:#}"))?;
        return Ok(());
    }
    match parsed {
        Some(Some(ListKind::Global(n))) if !ds.has_list(&n) => bail!(
            "{key} 'list:{n}': dataset {} has no list '{n}' ({})",
            ds.name,
            lists_it_has(ds)
        ),
        Some(Some(ListKind::File(f))) => {
            file_list(&f).map_err(|e| anyhow::anyhow!("{key} '{f}': {e:#}"))?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctx_data::dataset::ListScope;

    fn phrases(l: &[&str]) -> Vec<Vec<String>> {
        l.iter()
            .map(|p| p.split_whitespace().map(String::from).collect())
            .collect()
    }

    /// `KIND+file:PATH`: each utterance's own phrases first, then the file's it lacks; a
    /// per-document named list works as the own part.
    #[test]
    fn a_list_plus_a_file_is_the_own_phrases_among_the_distractors() {
        let dir = tempfile::tempdir().unwrap();
        let u = Utterance {
            id: "u1".into(),
            doc: Some("c1".into()),
            words: vec!["acme".into()],
            duration_s: 1.0,
            entities: vec![],
            callsign: None,
        };
        let ds = Dataset {
            name: "t".into(),
            utterances: vec![u.clone()],
            lists: BTreeMap::from([(
                "c1".into(),
                BiasList {
                    phrases: phrases(&["acme", "beta"]),
                },
            )]),
            list_scope: ListScope::Document,
            global_lists: BTreeMap::new(),
            doc_lists: BTreeMap::from([(
                "slides".into(),
                BTreeMap::from([(
                    "c1".into(),
                    BiasList {
                        phrases: phrases(&["gamma"]),
                    },
                )]),
            )]),
            lm_text: vec![],
            has_callsigns: false,
            segments: vec![],
            source: None,
        };
        let f2 = dir.path().join("d2.txt");
        std::fs::write(&f2, "zeta corp\nacme\n").unwrap();
        let k = ListKind::parse(&format!("sequences+file:{}", f2.display())).unwrap();
        let got = dataset_list_of(&ds, &u, &k).unwrap();
        assert_eq!(got.phrases, phrases(&["acme", "beta", "zeta corp"]));
        let k = ListKind::parse(&format!("list:slides+file:{}", f2.display())).unwrap();
        assert_eq!(
            dataset_list_of(&ds, &u, &k).unwrap().phrases,
            phrases(&["gamma", "zeta corp", "acme"])
        );
        let k = ListKind::parse(&format!("list:nope+file:{}", f2.display())).unwrap();
        let e = require_named(&ds, &k).unwrap_err().to_string();
        assert!(e.contains("has no list 'nope' (it has: slides)"), "{e}");
    }
}

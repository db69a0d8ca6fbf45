//! Earnings-21 as a test set: the 44 real calls cut into ~3-minute segments, entity spans from
//! `wer_tags`, and per-document oracle lists (docs/design.md §6).
//!
//! The `.nlp` files have no times, so segments are placed on token counts: a call of length L
//! seconds with N tokens gets k = round(L / segment_s) segments; cut i is aimed at token i·N/k and
//! moved to the nearest sentence end within ±80 tokens that splits no entity or normalisation
//! span (else the nearest token that splits none). A segment's duration is L times its share of
//! the tokens (a uniform speaking rate within a call).

use crate::utterance::{DataError, Utterance};
use ctx_core::bias::BiasList;
use ctx_core::corpus::earnings::{EarningsDoc, NlpToken};
use ctx_core::metrics::normalize::TextNorm;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::path::Path;

/// Where a segment comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The call.
    pub doc: String,
    /// Token rows `[start, end)` of the `.nlp` file.
    pub tokens: Range<usize>,
    /// Estimated start time in the call (s).
    pub start_s: f64,
    /// Estimated end time (s).
    pub end_s: f64,
}

/// The segmented calls with their lists.
#[derive(Debug, Clone)]
pub struct EarningsSegments {
    /// One utterance per segment.
    pub utterances: Vec<Utterance>,
    /// Where each comes from.
    pub segments: Vec<Segment>,
    /// Per call: the oracle phrases that occur in it.
    pub doc_lists: BTreeMap<String, BiasList>,
    /// The global `oracle` and `distractor` lists.
    pub global_lists: BTreeMap<String, BiasList>,
}

/// Reads `audio_length` per file id from `earnings21-file-metadata.csv`.
pub fn audio_lengths(path: &Path) -> Result<BTreeMap<String, f64>, DataError> {
    let text = ctx_core::io::read_text(path)?;
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines
        .next()
        .map(|(_, h)| h.split(',').collect())
        .unwrap_or_default();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            DataError::Core(ctx_core::CoreError::parse(
                path,
                1,
                format!("no column {name}"),
            ))
        })
    };
    let (id_col, len_col) = (col("file_id")?, col("audio_length")?);
    let mut out = BTreeMap::new();
    for (i, l) in lines {
        let f: Vec<&str> = l.split(',').collect();
        let bad = || DataError::Core(ctx_core::CoreError::parse(path, i + 1, "bad row"));
        let id = f.get(id_col).ok_or_else(bad)?;
        let len: f64 = f.get(len_col).ok_or_else(bad)?.parse().map_err(|_| bad())?;
        out.insert(id.to_string(), len);
    }
    Ok(out)
}

fn ends_sentence(t: &NlpToken) -> bool {
    t.punctuation.contains(['.', '?', '!'])
}

/// True when a cut before token `j` splits no normalisation span or entity.
fn clean_cut(toks: &[NlpToken], j: usize) -> bool {
    if j == 0 || j >= toks.len() {
        return true;
    }
    let (a, b) = (&toks[j - 1], &toks[j]);
    let same_label = matches!((&a.label, &b.label), (Some((x, _)), Some((y, _))) if x == y);
    let shared_entity = a.wer_tags.iter().any(|t| b.wer_tags.contains(t));
    !same_label && !shared_entity
}

/// Cut positions for `n` tokens into `k` segments.
fn cuts(toks: &[NlpToken], k: usize) -> Vec<usize> {
    let n = toks.len();
    let mut out = vec![0];
    for i in 1..k {
        let aim = i * n / k;
        let lo = aim.saturating_sub(80).max(out.last().unwrap() + 1);
        let hi = (aim + 80).min(n - 1);
        let best = |pred: &dyn Fn(usize) -> bool| {
            (lo..=hi)
                .filter(|&j| pred(j))
                .min_by_key(|&j| (j as i64 - aim as i64).unsigned_abs())
        };
        let j = best(&|j| ends_sentence(&toks[j - 1]) && clean_cut(toks, j))
            .or_else(|| best(&|j| clean_cut(toks, j)))
            .unwrap_or(aim.max(lo));
        if j > *out.last().unwrap() && j < n {
            out.push(j);
        }
    }
    out.push(n);
    out
}

/// Reads a folder of per-call lists for the calls `docs`: `<call>.txt` (or `.txt.gz`), a word
/// or phrase per line, optionally followed by a count (ConEC's `word 3`), normalised as the
/// references are; repeated phrases are kept once, in file order. A call without a file, or a
/// file without a phrase, is an error naming it (it would decode that call unbiased under a
/// biased row's label).
pub fn read_doc_lists<'a>(
    dir: &Path,
    docs: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, BiasList>, DataError> {
    let norm = TextNorm::Fstalign;
    let mut out = BTreeMap::new();
    for doc in docs {
        let path =
            ctx_core::io::find_maybe_gz(&dir.join(format!("{doc}.txt"))).ok_or_else(|| {
                DataError::Invalid(format!(
                    "{}: no list for call {doc} ({doc}.txt)",
                    dir.display()
                ))
            })?;
        let text = ctx_core::io::read_text(&path)?;
        let mut seen = BTreeSet::new();
        let mut phrases = Vec::new();
        for line in text.lines() {
            let mut fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 1 && fields.last().is_some_and(|c| c.parse::<u64>().is_ok()) {
                fields.pop();
            }
            let words = norm.words(&fields);
            if !words.is_empty() && seen.insert(words.clone()) {
                phrases.push(words);
            }
        }
        if phrases.is_empty() {
            return Err(DataError::Invalid(format!(
                "{}: the list holds no phrase",
                path.display()
            )));
        }
        out.insert(doc.to_string(), BiasList { phrases });
    }
    Ok(out)
}

/// Loads every call of `dir` and cuts it into segments; the transcripts and entity tags come
/// from `references` where given (a folder with `nlp_references/` and `wer_tags/`, such as
/// ConEC's corrected ones), everything else from `dir`.
pub fn load_segments(
    dir: &Path,
    references: Option<&Path>,
    segment_s: f64,
    classes: &BTreeSet<String>,
) -> Result<EarningsSegments, DataError> {
    let lengths = audio_lengths(&dir.join("earnings21-file-metadata.csv"))?;
    let oracle = BiasList::read(&dir.join("bias_lists/oracle_list.txt"), true)?;
    let distractor = BiasList::read(&dir.join("bias_lists/distractor_list.txt"), true)?;
    let norm = TextNorm::Fstalign;
    let oracle_norm: Vec<Vec<String>> = oracle
        .phrases
        .iter()
        .map(|p| norm.words(p))
        .filter(|p| !p.is_empty())
        .collect();
    let mut out = EarningsSegments {
        utterances: Vec::new(),
        segments: Vec::new(),
        doc_lists: BTreeMap::new(),
        global_lists: BTreeMap::from([
            ("oracle".to_string(), oracle.clone()),
            ("distractor".to_string(), distractor),
        ]),
    };
    let transcripts = references.unwrap_or(dir).join("nlp_references");
    for (id, path) in EarningsDoc::list_dir(&transcripts)? {
        let doc = EarningsDoc::load(&path)?;
        let len = *lengths.get(&id).ok_or_else(|| {
            DataError::Invalid(format!(
                "{}: call {id} has no audio_length in earnings21-file-metadata.csv",
                path.display()
            ))
        })?;
        let toks = &doc.nlp.tokens;
        if toks.is_empty() {
            return Err(DataError::Invalid(format!("{}: no tokens", path.display())));
        }
        let k = ((len / segment_s).round() as usize).clamp(1, toks.len());
        let cut = cuts(toks, k);
        // Normalised words of the whole call, for the per-call oracle list.
        let mut all_words = Vec::new();
        for (s, w) in cut.windows(2).enumerate() {
            let range = w[0]..w[1];
            let mut words = Vec::new();
            let mut spans: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for t in &toks[range.clone()] {
                let Some(word) = norm.token(&t.token) else {
                    continue;
                };
                for tag in &t.wer_tags {
                    if doc
                        .entity_classes
                        .get(tag)
                        .is_some_and(|c| classes.contains(c))
                    {
                        let e = spans
                            .entry(tag.as_str())
                            .or_insert((words.len(), words.len()));
                        e.1 = words.len() + 1;
                    }
                }
                words.push(word);
            }
            let mut entities: Vec<(String, usize, usize)> = spans
                .iter()
                .map(|(tag, &(a, b))| (doc.entity_classes[*tag].clone(), a, b))
                .collect();
            entities.sort_by_key(|(_, a, b)| (*a, *b));
            let start_s = len * w[0] as f64 / toks.len() as f64;
            let end_s = len * w[1] as f64 / toks.len() as f64;
            all_words.extend(words.iter().cloned());
            out.utterances.push(Utterance {
                id: format!("{id}-{s:03}"),
                doc: Some(id.clone()),
                words,
                duration_s: ((end_s - start_s) * 100.0).round() / 100.0,
                entities,
                callsign: None,
            });
            out.segments.push(Segment {
                doc: id.clone(),
                tokens: range,
                start_s,
                end_s,
            });
        }
        // The oracle phrases the call says: each checked only where its first word occurs.
        let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, w) in all_words.iter().enumerate() {
            at.entry(w.as_str()).or_default().push(i);
        }
        let phrases: Vec<Vec<String>> = oracle_norm
            .iter()
            .filter(|p| {
                at.get(p[0].as_str()).is_some_and(|starts| {
                    starts
                        .iter()
                        .any(|&i| all_words.get(i..i + p.len()) == Some(p.as_slice()))
                })
            })
            .cloned()
            .collect();
        out.doc_lists.insert(id.clone(), BiasList { phrases });
    }
    Ok(out)
}

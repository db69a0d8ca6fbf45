//! A reference prepared for scoring: words, the entities they belong to, and alternative
//! verbalisations of normalisation spans (Earnings `norm.json`), so that `2020` in the reference
//! also matches `twenty twenty` in a hypothesis.

use crate::corpus::EarningsDoc;
use crate::error::{CoreError, Result};
use crate::io::read_keyed_lines;
use crate::metrics::normalize::TextNorm;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Where a reference word of the chosen path sits in a [`ScoringRef`] (an alignment step's reference side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefPos {
    /// Segment index.
    pub segment: usize,
    /// Alternative index within the segment (0 for a plain word).
    pub alt: usize,
    /// Word index within the alternative (0 for a plain word).
    pub index: usize,
}

/// A reference word and the entities (indices into [`ScoringRef::entities`]) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefToken {
    /// The (normalised) word.
    pub word: String,
    /// Entities containing this word; a word may belong to several overlapping entities.
    pub entities: Vec<u32>,
}

/// One stretch of the reference: a single word, or a span with alternative verbalisations of which
/// the alignment may pick any (the first is the span as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefSegment {
    /// A plain word.
    Word(RefToken),
    /// Alternatives; each is a (possibly empty) word sequence.
    Alternatives(Vec<Vec<RefToken>>),
}

/// An entity of a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityInfo {
    /// Its class (`PERSON`, `ORG`, `callsign`, `NE`, ...).
    pub class: String,
    /// Its id in the source (`wer_tag` id) or its words.
    pub label: String,
}

/// A reference utterance or document ready to be aligned and scored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoringRef {
    /// Utterance or document id.
    pub id: String,
    /// The reference as segments.
    pub segments: Vec<RefSegment>,
    /// The entities the tokens refer to.
    pub entities: Vec<EntityInfo>,
}

impl ScoringRef {
    /// A reference of plain words with no entity.
    pub fn plain<S: AsRef<str>>(id: &str, words: &[S]) -> Self {
        let segments = words
            .iter()
            .map(|w| {
                RefSegment::Word(RefToken {
                    word: w.as_ref().to_owned(),
                    entities: Vec::new(),
                })
            })
            .collect();
        Self {
            id: id.to_owned(),
            segments,
            entities: Vec::new(),
        }
    }

    /// A reference whose entities are given as word spans `(class, start, end)` (end exclusive).
    pub fn with_spans<S: AsRef<str>>(
        id: &str,
        words: &[S],
        spans: &[(String, usize, usize)],
    ) -> Result<Self> {
        let mut r = Self::plain(id, words);
        for (k, (class, s, e)) in spans.iter().enumerate() {
            if s >= e || *e > words.len() {
                return Err(CoreError::utt(
                    id,
                    format!(
                        "entity span {s}..{e} is outside the {} reference words",
                        words.len()
                    ),
                ));
            }
            let label = words[*s..*e]
                .iter()
                .map(|w| w.as_ref())
                .collect::<Vec<_>>()
                .join(" ");
            r.entities.push(EntityInfo {
                class: class.clone(),
                label,
            });
            for seg in &mut r.segments[*s..*e] {
                if let RefSegment::Word(t) = seg {
                    t.entities.push(k as u32);
                }
            }
        }
        Ok(r)
    }

    /// A reference whose entities are given as phrases `(class, words)`; each is located at its first
    /// occurrence that does not overlap an entity located before it. A phrase that does not occur is
    /// an error naming the utterance.
    pub fn with_entity_phrases<S: AsRef<str>>(
        id: &str,
        words: &[S],
        phrases: &[(String, Vec<String>)],
    ) -> Result<Self> {
        let spans = entity_spans(id, words, phrases)?;
        Self::with_spans(id, words, &spans)
    }

    /// Builds the reference of an Earnings document the way fstalign does: consecutive tokens that
    /// share their first `tags` label form a span; when `norm.json` has candidates for that label, the
    /// span becomes alternatives (as written first, then the candidates by decreasing probability).
    /// Entities come from the `wer_tags` column; words of a candidate verbalisation belong to every
    /// entity of the span they replace.
    pub fn from_earnings(doc: &EarningsDoc, norm: TextNorm) -> Self {
        let mut entities = Vec::with_capacity(doc.entity_classes.len());
        let mut index: HashMap<&str, u32> = HashMap::new();
        for (id, class) in &doc.entity_classes {
            index.insert(id.as_str(), entities.len() as u32);
            entities.push(EntityInfo {
                class: class.clone(),
                label: id.clone(),
            });
        }
        let ents = |tags: &[String]| -> Vec<u32> {
            let mut v: Vec<u32> = tags
                .iter()
                .filter_map(|t| index.get(t.as_str()).copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let toks = &doc.nlp.tokens;
        let mut segments = Vec::with_capacity(toks.len());
        let mut i = 0;
        while i < toks.len() {
            let norm_span = toks[i]
                .label
                .as_ref()
                .and_then(|(lid, _)| doc.normalizations.get(lid).map(|n| (lid, n)));
            match norm_span {
                Some((lid, cands)) => {
                    let mut j = i;
                    while j < toks.len() && toks[j].label.as_ref().is_some_and(|(l, _)| l == lid) {
                        j += 1;
                    }
                    let span_tags: Vec<String> = toks[i..j]
                        .iter()
                        .flat_map(|t| t.wer_tags.iter().cloned())
                        .collect();
                    let span_ents = ents(&span_tags);
                    let as_written: Vec<RefToken> = toks[i..j]
                        .iter()
                        .filter_map(|t| {
                            norm.token(&t.token).map(|w| RefToken {
                                word: w,
                                entities: ents(&t.wer_tags),
                            })
                        })
                        .collect();
                    let mut alts = vec![as_written];
                    let mut order: Vec<usize> = (0..cands.candidates.len()).collect();
                    order.sort_by(|&a, &b| {
                        cands.candidates[b]
                            .probability
                            .partial_cmp(&cands.candidates[a].probability)
                            .unwrap_or(std::cmp::Ordering::Equal)
                    });
                    for k in order {
                        let alt: Vec<RefToken> = cands.candidates[k]
                            .verbalization
                            .iter()
                            .filter_map(|w| {
                                norm.token(w).map(|w| RefToken {
                                    word: w,
                                    entities: span_ents.clone(),
                                })
                            })
                            .collect();
                        let same_words = |a: &Vec<RefToken>| {
                            a.iter().map(|t| &t.word).eq(alt.iter().map(|t| &t.word))
                        };
                        if !alts.iter().any(same_words) {
                            alts.push(alt);
                        }
                    }
                    segments.push(RefSegment::Alternatives(alts));
                    i = j;
                }
                None => {
                    if let Some(w) = norm.token(&toks[i].token) {
                        segments.push(RefSegment::Word(RefToken {
                            word: w,
                            entities: ents(&toks[i].wer_tags),
                        }));
                    }
                    i += 1;
                }
            }
        }
        Self {
            id: doc.id.clone(),
            segments,
            entities,
        }
    }

    /// The reference word at an alignment position.
    pub fn token(&self, pos: RefPos) -> &RefToken {
        match &self.segments[pos.segment] {
            RefSegment::Word(t) => t,
            RefSegment::Alternatives(a) => &a[pos.alt][pos.index],
        }
    }

    /// The words as written (first alternative of every span).
    pub fn words_as_written(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for s in &self.segments {
            match s {
                RefSegment::Word(t) => out.push(t.word.as_str()),
                RefSegment::Alternatives(a) => out.extend(a[0].iter().map(|t| t.word.as_str())),
            }
        }
        out
    }
}

/// Locates entity phrases `(class, words)` in a reference as spans `(class, start, end)`: each at
/// its first occurrence that does not overlap an entity located before it. A phrase that does not
/// occur is an error naming the utterance.
pub fn entity_spans<S: AsRef<str>>(
    id: &str,
    words: &[S],
    phrases: &[(String, Vec<String>)],
) -> Result<Vec<(String, usize, usize)>> {
    let mut taken = vec![false; words.len()];
    let mut spans = Vec::with_capacity(phrases.len());
    for (class, phrase) in phrases {
        let n = phrase.len();
        let found = (0..words.len().saturating_sub(n.saturating_sub(1))).find(|&s| {
            n > 0
                && s + n <= words.len()
                && (s..s + n).all(|i| !taken[i] && words[i].as_ref() == phrase[i - s])
        });
        let s = found.ok_or_else(|| {
            CoreError::utt(
                id,
                format!(
                    "entity {:?} does not occur in the reference (or overlaps an earlier one)",
                    phrase.join(" ")
                ),
            )
        })?;
        taken[s..s + n].iter_mut().for_each(|t| *t = true);
        spans.push((class.clone(), s, s + n));
    }
    Ok(spans)
}

/// Per-utterance entity annotations: `utt-id<TAB>entity|entity|...`, each entity `[CLASS] words` or
/// just `words` (class `NE`). The format of the thesis' "utterance-ID NEs" files, with an optional
/// class so that per-class WER can be reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntityTable {
    /// Each utterance's entities as `(class, words)` in file order.
    pub entities: BTreeMap<String, Vec<(String, Vec<String>)>>,
}

impl EntityTable {
    /// Reads a table; words are normalised with `norm` like the reference will be.
    pub fn read(path: &Path, norm: TextNorm) -> Result<Self> {
        let mut t = EntityTable::default();
        for (line, utt, rest) in read_keyed_lines(path)? {
            let mut list = Vec::new();
            for item in rest.split('|') {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                let (class, words) = match item.strip_prefix('[').and_then(|r| r.split_once(']')) {
                    Some((c, w)) if !c.trim().is_empty() => (c.trim().to_owned(), w),
                    Some(_) => {
                        return Err(CoreError::parse(
                            path,
                            line,
                            format!("empty class in {item:?}"),
                        ))
                    }
                    None => ("NE".to_owned(), item),
                };
                let words = norm.words(&words.split_whitespace().collect::<Vec<_>>());
                if words.is_empty() {
                    return Err(CoreError::parse(
                        path,
                        line,
                        format!("entity {item:?} has no words"),
                    ));
                }
                list.push((class, words));
            }
            t.entities.insert(utt, list);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entities file with CRLF line ends reads as the LF one (same classes, same
    /// words: the same NE-WER), and an entity without a `[CLASS]` tag is class `NE`, as the
    /// format says, not a word "[...]" or a dropped entity.
    #[test]
    fn crlf_and_untagged_entities_read_as_documented() {
        let dir = tempfile::tempdir().unwrap();
        let lf = "u1\t[ORG] acme corp|[PERSON] jane doe\nu2\tzorblax\n";
        let (a, b) = (dir.path().join("lf.txt"), dir.path().join("crlf.txt"));
        std::fs::write(&a, lf).unwrap();
        std::fs::write(&b, lf.replace('\n', "\r\n")).unwrap();
        let ta = EntityTable::read(&a, TextNorm::Exact).unwrap();
        let tb = EntityTable::read(&b, TextNorm::Exact).unwrap();
        assert_eq!(ta, tb);
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            ta.entities["u1"],
            vec![
                ("ORG".to_string(), w("acme corp")),
                ("PERSON".to_string(), w("jane doe"))
            ]
        );
        assert_eq!(ta.entities["u2"], vec![("NE".to_string(), w("zorblax"))]);
    }
}

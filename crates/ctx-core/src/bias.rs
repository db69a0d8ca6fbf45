//! Biasing lists: the words and phrases a decoder should favour.
//!
//! Two forms: a phrase per line (one global list, or one file per document), and a Kaldi-style
//! per-utterance table `utt-id<TAB>phrase|phrase|...` (the radar callsigns of an ATC utterance).
//! Words are whitespace-separated and lower-cased on reading unless asked otherwise, because the
//! lexicons and LMs of the project are lower-case. Against a vocabulary, [`BiasList::oov_report`]
//! counts what a decoder cannot boost; a list with no usable phrase is an error, never a silent no-op.

use crate::error::{CoreError, Result};
use crate::io::{open_read, read_keyed_lines, write_atomic};
use std::collections::{BTreeMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A list of phrases, each a sequence of words, de-duplicated in first-seen order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BiasList {
    /// The phrases.
    pub phrases: Vec<Vec<String>>,
}

/// What part of a biasing list a vocabulary covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct OovReport {
    /// Phrases in the list.
    pub phrases: usize,
    /// Phrases with at least one out-of-vocabulary word.
    pub phrases_with_oov: usize,
    /// Phrases whose words are all out of vocabulary.
    pub phrases_all_oov: usize,
    /// Word tokens in the list.
    pub words: usize,
    /// Out-of-vocabulary word tokens.
    pub oov_words: usize,
    /// Each out-of-vocabulary word with its count.
    pub oov: BTreeMap<String, usize>,
}

impl OovReport {
    /// Share of word tokens outside the vocabulary, in [0, 1].
    pub fn oov_rate(&self) -> f64 {
        if self.words == 0 {
            0.0
        } else {
            self.oov_words as f64 / self.words as f64
        }
    }
}

/// The words of a phrase, lower-cased when asked (shared by every list format of the crate).
pub(crate) fn split_phrase(text: &str, lowercase: bool) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            if lowercase {
                w.to_lowercase()
            } else {
                w.to_owned()
            }
        })
        .collect()
}

impl BiasList {
    /// Builds a list from phrases given as text, dropping empty and duplicate phrases.
    pub fn from_phrases<S: AsRef<str>>(phrases: &[S], lowercase: bool) -> Self {
        let mut list = BiasList::default();
        let mut seen = HashSet::new();
        for p in phrases {
            let words = split_phrase(p.as_ref(), lowercase);
            if !words.is_empty() && seen.insert(words.clone()) {
                list.phrases.push(words);
            }
        }
        list
    }

    /// Reads a phrase-per-line file (blank lines skipped, duplicates dropped). An empty list is an
    /// error naming the file.
    pub fn read(path: &Path, lowercase: bool) -> Result<Self> {
        let mut lines = Vec::new();
        for line in open_read(path)?.lines() {
            lines.push(line.map_err(|e| CoreError::io(path, e))?);
        }
        let list = Self::from_phrases(&lines, lowercase);
        if list.is_empty() {
            return Err(CoreError::format(path, "the biasing list has no phrase"));
        }
        Ok(list)
    }

    /// Reads one list per document from a directory of `<doc>.txt` files, keyed by `<doc>`.
    pub fn read_dir(dir: &Path, lowercase: bool) -> Result<BTreeMap<String, Self>> {
        let mut out = BTreeMap::new();
        let rd = std::fs::read_dir(dir).map_err(|e| CoreError::io(dir, e))?;
        let mut paths: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .collect();
        paths.sort();
        for p in paths {
            let doc = p
                .file_stem()
                .expect("has extension")
                .to_string_lossy()
                .into_owned();
            out.insert(doc, Self::read(&p, lowercase)?);
        }
        if out.is_empty() {
            return Err(CoreError::format(
                dir,
                "no <doc>.txt biasing lists in this directory",
            ));
        }
        Ok(out)
    }

    /// Writes the list, a phrase per line, atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| {
            for p in &self.phrases {
                writeln!(w, "{}", p.join(" "))?;
            }
            Ok(())
        })
    }

    /// Number of phrases.
    pub fn len(&self) -> usize {
        self.phrases.len()
    }

    /// True when there is no phrase.
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }

    /// The distinct words of all phrases, in first-seen order (a "unigram" list, 003 Table 3.3).
    pub fn unigrams(&self) -> BiasList {
        let mut seen = HashSet::new();
        let phrases = self
            .phrases
            .iter()
            .flatten()
            .filter(|w| seen.insert(w.as_str()))
            .map(|w| vec![w.clone()])
            .collect();
        BiasList { phrases }
    }

    /// Counts the words that `in_vocab` rejects.
    pub fn oov_report(&self, in_vocab: impl Fn(&str) -> bool) -> OovReport {
        let mut r = OovReport {
            phrases: self.phrases.len(),
            ..OovReport::default()
        };
        for p in &self.phrases {
            let mut n_oov = 0;
            for w in p {
                r.words += 1;
                if !in_vocab(w) {
                    n_oov += 1;
                    r.oov_words += 1;
                    *r.oov.entry(w.clone()).or_default() += 1;
                }
            }
            if n_oov > 0 {
                r.phrases_with_oov += 1;
            }
            if n_oov == p.len() {
                r.phrases_all_oov += 1;
            }
        }
        r
    }

    /// Keeps the phrases fully inside the vocabulary and returns them with the report of what was
    /// dropped. An empty or entirely out-of-vocabulary list is an error naming `context` (a file,
    /// document or utterance), because boosting nothing would silently equal the baseline.
    pub fn usable(
        &self,
        in_vocab: impl Fn(&str) -> bool,
        context: &str,
    ) -> Result<(BiasList, OovReport)> {
        if self.is_empty() {
            return Err(CoreError::Invalid(format!(
                "{context}: the biasing list is empty"
            )));
        }
        let report = self.oov_report(&in_vocab);
        let kept: Vec<Vec<String>> = self
            .phrases
            .iter()
            .filter(|p| p.iter().all(|w| in_vocab(w)))
            .cloned()
            .collect();
        if kept.is_empty() {
            return Err(CoreError::Invalid(format!(
                "{context}: all {} phrases of the biasing list have words outside the vocabulary (e.g. {:?})",
                self.len(),
                report.oov.keys().next().map(String::as_str).unwrap_or("")
            )));
        }
        Ok((BiasList { phrases: kept }, report))
    }
}

/// Per-utterance biasing lists (`utt-id<TAB>phrase|phrase|...`), ordered by utterance id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BiasTable {
    /// Each utterance's list; an utterance may have an empty list.
    pub lists: BTreeMap<String, BiasList>,
}

impl BiasTable {
    /// Reads a table. The id is separated from the phrases by a tab (or, failing that, the first
    /// run of whitespace); phrases are separated by `|`. A repeated utterance id is an error.
    pub fn read(path: &Path, lowercase: bool) -> Result<Self> {
        let mut t = BiasTable::default();
        for (_, utt, rest) in read_keyed_lines(path)? {
            let phrases: Vec<&str> = rest.split('|').collect();
            t.lists
                .insert(utt, BiasList::from_phrases(&phrases, lowercase));
        }
        Ok(t)
    }

    /// Writes the table, atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| {
            for (utt, list) in &self.lists {
                let phrases: Vec<String> = list.phrases.iter().map(|p| p.join(" ")).collect();
                writeln!(w, "{utt}\t{}", phrases.join("|"))?;
            }
            Ok(())
        })
    }

    /// The list of utterance `utt`, if listed.
    pub fn get(&self, utt: &str) -> Option<&BiasList> {
        self.lists.get(utt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrase_list_dedupes_lowercases_and_reports_oov() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("oracle.txt");
        std::fs::write(&p, "GOLDMAN SACHS\n\nNIGEL CO\ngoldman sachs\nZZQ\n").unwrap();
        let l = BiasList::read(&p, true).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l.phrases[0], ["goldman", "sachs"]);
        let vocab: HashSet<&str> = ["goldman", "sachs", "co"].into_iter().collect();
        let r = l.oov_report(|w| vocab.contains(w));
        assert_eq!(
            (r.phrases_with_oov, r.phrases_all_oov, r.words, r.oov_words),
            (2, 1, 5, 2)
        );
        assert_eq!(r.oov.keys().collect::<Vec<_>>(), ["nigel", "zzq"]);
        let (kept, _) = l.usable(|w| vocab.contains(w), "oracle").unwrap();
        assert_eq!(
            kept.phrases,
            vec![vec!["goldman".to_string(), "sachs".into()]]
        );
        assert_eq!(l.unigrams().len(), 5);
    }

    #[test]
    fn empty_and_all_oov_lists_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("empty.txt");
        std::fs::write(&p, "\n  \n").unwrap();
        assert!(BiasList::read(&p, true)
            .unwrap_err()
            .to_string()
            .contains("empty.txt"));
        let l = BiasList::from_phrases(&["qqq zzz", "xxx"], true);
        let e = l.usable(|_| false, "utt7").unwrap_err().to_string();
        assert!(e.contains("utt7") && e.contains("all 2 phrases"), "{e}");
    }

    #[test]
    fn table_round_trip_and_duplicate_ids() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bias.tsv");
        std::fs::write(
            &p,
            "u1\tLufthansa One Two|Hansa One Two\nu2\t\nu3 speedbird five\n",
        )
        .unwrap();
        let t = BiasTable::read(&p, true).unwrap();
        assert_eq!(t.get("u1").unwrap().len(), 2);
        assert!(t.get("u2").unwrap().is_empty());
        assert_eq!(t.get("u3").unwrap().phrases[0], ["speedbird", "five"]);
        let q = dir.path().join("out.tsv");
        t.write(&q).unwrap();
        assert_eq!(BiasTable::read(&q, true).unwrap(), t);
        std::fs::write(&p, "u1\ta\nu1\tb\n").unwrap();
        assert!(BiasTable::read(&p, true)
            .unwrap_err()
            .to_string()
            .contains(":2"));
    }
}

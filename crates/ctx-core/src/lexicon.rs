//! Pronunciation lexicons: Kaldi `lexicon.txt` (`word p1 p2 ...`), `lexiconp.txt`
//! (`word prob p1 p2 ...`) and CMUdict (`word(2) P1 P2 ... # comment`, stress digits optional).

use crate::error::{CoreError, Result};
use crate::io::{open_read, write_atomic};
use std::collections::{BTreeSet, HashMap};
use std::io::BufRead;
use std::path::Path;

/// The on-disk form of a lexicon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexiconFormat {
    /// Kaldi `lexicon.txt`: `word phone...`.
    Kaldi,
    /// Kaldi `lexiconp.txt`: `word prob phone...`.
    KaldiProb,
    /// CMUdict: `word(N) PHONE...`, `#` comments, `;;;` comment lines.
    CmuDict {
        /// Remove the stress digits (`AH0` → `AH`).
        strip_stress: bool,
    },
}

/// One pronunciation.
#[derive(Debug, Clone, PartialEq)]
pub struct LexiconEntry {
    /// The word.
    pub word: String,
    /// Pronunciation probability (1.0 unless read from `lexiconp.txt`).
    pub prob: f32,
    /// The phones.
    pub phones: Vec<String>,
}

/// A list of pronunciations with a word index; a word may have several.
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    entries: Vec<LexiconEntry>,
    index: HashMap<String, Vec<usize>>,
}

impl Lexicon {
    /// An empty lexicon.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pronunciation (an exact duplicate of an existing one is ignored).
    pub fn push(&mut self, entry: LexiconEntry) {
        let slot = self.index.entry(entry.word.clone()).or_default();
        if slot.iter().any(|&i| self.entries[i].phones == entry.phones) {
            return;
        }
        slot.push(self.entries.len());
        self.entries.push(entry);
    }

    /// Reads a lexicon in the given format. Lines without phones, bad probabilities and malformed
    /// CMUdict variants are errors naming the line.
    pub fn read(path: &Path, format: LexiconFormat) -> Result<Self> {
        let mut lex = Lexicon::new();
        for (i, line) in open_read(path)?.lines().enumerate() {
            let lineno = i + 1;
            let line = line.map_err(|e| CoreError::io(path, e))?;
            let mut body = line.as_str();
            if let LexiconFormat::CmuDict { .. } = format {
                if body.starts_with(";;;") {
                    continue;
                }
                if let Some(pos) = body.find(" #") {
                    body = &body[..pos];
                }
            }
            let mut fields = body.split_whitespace();
            let Some(word) = fields.next() else { continue };
            let mut word = word.to_owned();
            let mut prob = 1.0f32;
            match format {
                LexiconFormat::KaldiProb => {
                    let p = fields
                        .next()
                        .ok_or_else(|| CoreError::parse(path, lineno, "missing probability"))?;
                    prob = p
                        .parse()
                        .ok()
                        .filter(|v: &f32| *v > 0.0 && *v <= 1.0)
                        .ok_or_else(|| {
                            CoreError::parse(
                                path,
                                lineno,
                                format!("probability {p:?} is not in (0, 1]"),
                            )
                        })?;
                }
                LexiconFormat::CmuDict { .. } => {
                    if let Some(open) = word.find('(') {
                        let variant = &word[open..];
                        let ok = variant.len() > 2
                            && variant.ends_with(')')
                            && variant[1..variant.len() - 1]
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        if !ok {
                            return Err(CoreError::parse(
                                path,
                                lineno,
                                format!("malformed variant marker in {word:?}"),
                            ));
                        }
                        word.truncate(open);
                    }
                }
                LexiconFormat::Kaldi => {}
            }
            let strip = matches!(format, LexiconFormat::CmuDict { strip_stress: true });
            let phones: Vec<String> = fields
                .map(|p| {
                    if strip {
                        p.trim_end_matches(|c: char| c.is_ascii_digit()).to_owned()
                    } else {
                        p.to_owned()
                    }
                })
                .collect();
            if phones.is_empty() {
                return Err(CoreError::parse(
                    path,
                    lineno,
                    format!("word {word:?} has no phones"),
                ));
            }
            lex.push(LexiconEntry { word, prob, phones });
        }
        Ok(lex)
    }

    /// Writes the lexicon in Kaldi form (`lexiconp.txt` when `with_probs`), atomically.
    pub fn write(&self, path: &Path, with_probs: bool) -> Result<()> {
        write_atomic(path, |w| {
            for e in &self.entries {
                w.write_all(e.word.as_bytes())?;
                if with_probs {
                    write!(w, "\t{}", e.prob)?;
                }
                w.write_all(b"\t")?;
                w.write_all(e.phones.join(" ").as_bytes())?;
                w.write_all(b"\n")?;
            }
            Ok(())
        })
    }

    /// All entries in insertion order.
    pub fn entries(&self) -> &[LexiconEntry] {
        &self.entries
    }

    /// Number of pronunciations.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no pronunciation.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pronunciations of `word` (empty when absent).
    pub fn pronunciations(&self, word: &str) -> impl Iterator<Item = &LexiconEntry> {
        self.index
            .get(word)
            .into_iter()
            .flatten()
            .map(move |&i| &self.entries[i])
    }

    /// True when `word` has at least one pronunciation.
    pub fn contains(&self, word: &str) -> bool {
        self.index.contains_key(word)
    }

    /// The distinct words, sorted.
    pub fn words(&self) -> BTreeSet<&str> {
        self.index.keys().map(String::as_str).collect()
    }

    /// The distinct phones used, sorted.
    pub fn phones(&self) -> BTreeSet<&str> {
        self.entries
            .iter()
            .flat_map(|e| e.phones.iter().map(String::as_str))
            .collect()
    }

    /// Checks every phone against a phone inventory; the error names the word and the phone.
    pub fn check_phones(&self, inventory: &BTreeSet<String>) -> Result<()> {
        for e in &self.entries {
            if let Some(p) = e.phones.iter().find(|p| !inventory.contains(*p)) {
                return Err(CoreError::Invalid(format!(
                    "word {:?}: phone {p:?} is not in the phone set",
                    e.word
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_all_three_formats_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let cmu = dir.path().join("cmu.dict");
        std::fs::write(
            &cmu,
            ";;; comment\nread R IY1 D\nread(2) R EH1 D # past tense\nhansa HH AE1 N S AH0\n",
        )
        .unwrap();
        let lex = Lexicon::read(&cmu, LexiconFormat::CmuDict { strip_stress: true }).unwrap();
        assert_eq!(lex.len(), 3);
        let reads: Vec<_> = lex
            .pronunciations("read")
            .map(|e| e.phones.join(" "))
            .collect();
        assert_eq!(reads, vec!["R IY D", "R EH D"]);
        let keep = Lexicon::read(
            &cmu,
            LexiconFormat::CmuDict {
                strip_stress: false,
            },
        )
        .unwrap();
        assert_eq!(
            keep.pronunciations("hansa").next().unwrap().phones,
            ["HH", "AE1", "N", "S", "AH0"]
        );

        let p = dir.path().join("lexiconp.txt");
        lex.write(&p, true).unwrap();
        let back = Lexicon::read(&p, LexiconFormat::KaldiProb).unwrap();
        assert_eq!(back.entries(), lex.entries());
        let k = dir.path().join("lexicon.txt");
        lex.write(&k, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&k).unwrap().lines().next(),
            Some("read\tR IY D")
        );
        assert_eq!(
            Lexicon::read(&k, LexiconFormat::Kaldi).unwrap().entries(),
            lex.entries()
        );
        assert_eq!(
            lex.phones().into_iter().collect::<Vec<_>>(),
            vec!["AE", "AH", "D", "EH", "HH", "IY", "N", "R", "S"]
        );
    }

    #[test]
    fn errors_name_the_line_and_the_phone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lexiconp.txt");
        std::fs::write(&p, "a 1.0 AH\nb 1.5 B IY\n").unwrap();
        let e = Lexicon::read(&p, LexiconFormat::KaldiProb)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lexiconp.txt:2") && e.contains("1.5"), "{e}");
        std::fs::write(&p, "a AH\nb\n").unwrap();
        let e = Lexicon::read(&p, LexiconFormat::Kaldi)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2") && e.contains("no phones"), "{e}");
        std::fs::write(&p, "a AH\nb B XX\n").unwrap();
        let lex = Lexicon::read(&p, LexiconFormat::Kaldi).unwrap();
        let inv: BTreeSet<String> = ["AH", "B"].iter().map(|s| s.to_string()).collect();
        let e = lex.check_phones(&inv).unwrap_err().to_string();
        assert!(e.contains("\"b\"") && e.contains("\"XX\""), "{e}");
    }
}

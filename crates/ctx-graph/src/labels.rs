//! A CTC model's output labels as a TLG's unit inventory: pyctcdecode's habit of a
//! decoder made from a label list and an LM. The labels are the score columns in order; one is
//! the blank. Words are spelled in the other labels — SentencePiece-style pieces (a `▁` marks a
//! word's first piece) or characters, with an optional word delimiter (`|`, a space) that may
//! stand between words — as the fewest labels that spell them.
//!
//! The graph is compiled with the blank at column 0 and the units in column order (T's
//! convention, [`crate::ctc`]); [`CtcLabels::label_map`] then maps its input labels onto the
//! model's own columns when the blank sits elsewhere (NeMo puts it last).
//!
//! ```
//! use ctx_graph::labels::CtcLabels;
//! let labels: Vec<String> = ["a", "b", "|", "<blank>"].iter().map(|s| s.to_string()).collect();
//! let l = CtcLabels::new(&labels, None, None).unwrap();
//! assert_eq!((l.blank(), l.delimiter()), (3, Some(2)));
//! // Units are the non-blank columns in order (ids from 1); "abba" is a b b a.
//! assert_eq!(l.spell("abba"), Some(vec![1, 2, 2, 1]));
//! assert_eq!(l.spell("abc"), None);
//! // Graph labels (blank = 1, unit u = u + 1) onto columns + 1: the blank reads column 3.
//! assert_eq!(l.label_map(), vec![0, 4, 1, 2, 3]);
//! ```

use crate::error::{GraphError, Result};
use crate::lexicon_fst::SilenceOptions;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use std::collections::HashMap;

/// Names a blank label may have when the caller does not say which column it is.
pub const BLANK_NAMES: [&str; 6] = ["", "<blk>", "<blank>", "<b>", "<pad>", "<eps>"];

/// Names a word delimiter may have (characters models: wav2vec2's `|`, a space).
pub const DELIMITER_NAMES: [&str; 2] = ["|", " "];

/// The word-start mark of SentencePiece pieces.
pub const WORD_START: char = '▁';

/// How words are written in the labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// SentencePiece-style pieces: a word is `▁` + its letters, in the fewest pieces.
    Pieces,
    /// Characters (or multi-character labels): a word is its letters, in the fewest labels.
    Characters,
}

/// A CTC model's labels, its blank and delimiter, and how it spells words.
#[derive(Debug, Clone)]
pub struct CtcLabels {
    labels: Vec<String>,
    blank: usize,
    delimiter: Option<usize>,
    spelling: Spelling,
    /// Spelling labels by their text: (text, unit id).
    pieces: HashMap<String, u32>,
    /// The longest spelling label, in chars.
    longest: usize,
}

impl CtcLabels {
    /// The labels of a model's score columns; `blank` (else the one label named as a blank:
    /// `""`, `<blk>`, `<blank>`, `<b>`, `<pad>`, `<eps>`) and `delimiter` (else a `|` or a
    /// space label of a character model) are columns. Duplicate labels are an error naming
    /// both columns, as are an unknown or missing blank.
    pub fn new(labels: &[String], blank: Option<usize>, delimiter: Option<usize>) -> Result<Self> {
        let bad = |m: String| Err(GraphError::Invalid(format!("labels: {m}")));
        if labels.len() < 2 {
            return bad(format!(
                "{} labels: a CTC model has a blank and at least one token",
                labels.len()
            ));
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, l) in labels.iter().enumerate() {
            if let Some(j) = seen.insert(l.as_str(), i) {
                return bad(format!("columns {j} and {i} are both {l:?}"));
            }
        }
        let blank = match blank {
            Some(b) if b < labels.len() => b,
            Some(b) => {
                return bad(format!(
                    "blank column {b} is beyond the {} labels",
                    labels.len()
                ))
            }
            None => {
                let named: Vec<usize> = (0..labels.len())
                    .filter(|&i| BLANK_NAMES.contains(&labels[i].as_str()))
                    .collect();
                match named.as_slice() {
                    [b] => *b,
                    [] => {
                        return bad(format!(
                            "no blank label (one of {:?}); name its column with blank=",
                            BLANK_NAMES
                        ))
                    }
                    _ => {
                        return bad(format!(
                            "columns {named:?} could each be the blank; name it with blank="
                        ))
                    }
                }
            }
        };
        let spelling = if labels.iter().any(|l| l.starts_with(WORD_START)) {
            Spelling::Pieces
        } else {
            Spelling::Characters
        };
        let delimiter = match delimiter {
            Some(d) if d >= labels.len() || d == blank => {
                return bad(format!(
                    "delimiter column {d} is beyond the labels or the blank"
                ))
            }
            Some(d) => Some(d),
            None if spelling == Spelling::Characters => (0..labels.len())
                .find(|&i| i != blank && DELIMITER_NAMES.contains(&labels[i].as_str())),
            None => None,
        };
        let mut pieces = HashMap::new();
        let mut longest = 0;
        for (i, l) in labels.iter().enumerate() {
            // Special labels (<unk>, <s>) and the delimiter spell no letters.
            let special = l.starts_with('<') && l.ends_with('>') && l.len() > 2;
            if i == blank || Some(i) == delimiter || special || l.is_empty() {
                continue;
            }
            longest = longest.max(l.chars().count());
            pieces.insert(l.clone(), Self::unit_of(blank, i));
        }
        Ok(Self {
            labels: labels.to_vec(),
            blank,
            delimiter,
            spelling,
            pieces,
            longest,
        })
    }

    /// Unit id (1-based) of column `col` (not the blank): the non-blank columns in order.
    fn unit_of(blank: usize, col: usize) -> u32 {
        (if col > blank { col } else { col + 1 }) as u32
    }

    /// The labels, one per score column.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The blank's column.
    pub fn blank(&self) -> usize {
        self.blank
    }

    /// The word delimiter's column, if the model has one.
    pub fn delimiter(&self) -> Option<usize> {
        self.delimiter
    }

    /// How words are written.
    pub fn spelling(&self) -> Spelling {
        self.spelling
    }

    /// The unit inventory of L: every non-blank column in order, named by its label (a label L
    /// cannot hold — empty, with white space, or a reserved `#…`/`<eps>` — as `<colN>`).
    pub fn units(&self) -> Vec<String> {
        (0..self.labels.len())
            .filter(|&c| c != self.blank)
            .map(|c| {
                let l = &self.labels[c];
                let reserved = l.is_empty()
                    || l.chars().any(char::is_whitespace)
                    || l.starts_with('#')
                    || l == "<eps>";
                if reserved {
                    format!("<col{c}>")
                } else {
                    l.clone()
                }
            })
            .collect()
    }

    /// The delimiter as L's optional unit between words (cost −ln ½ with or without it).
    pub fn delimiter_option(&self) -> Option<SilenceOptions> {
        let d = self.delimiter?;
        let units = self.units();
        Some(SilenceOptions {
            unit: units[Self::unit_of(self.blank, d) as usize - 1].clone(),
            prob: 0.5,
        })
    }

    /// `word` as unit ids (1-based, T's numbering): the fewest labels whose texts make it
    /// (pieces: `▁` + the word); ties go to the spelling whose first labels are longest.
    /// `None` when the labels cannot spell it.
    pub fn spell(&self, word: &str) -> Option<Vec<u32>> {
        let text: Vec<char> = match self.spelling {
            Spelling::Pieces => std::iter::once(WORD_START).chain(word.chars()).collect(),
            Spelling::Characters => word.chars().collect(),
        };
        let n = text.len();
        if n == 0 || (self.spelling == Spelling::Pieces && n == 1) {
            return None;
        }
        // best[i]: fewest labels spelling text[i..], and the first label's length.
        let mut best: Vec<Option<(u32, usize, u32)>> = vec![None; n + 1];
        best[n] = Some((0, 0, 0));
        for i in (0..n).rev() {
            for len in (1..=self.longest.min(n - i)).rev() {
                let Some((count, _, _)) = best[i + len] else {
                    continue;
                };
                let piece: String = text[i..i + len].iter().collect();
                if let Some(&unit) = self.pieces.get(&piece) {
                    if best[i].is_none_or(|(c, _, _)| count + 1 < c) {
                        best[i] = Some((count + 1, len, unit));
                    }
                }
            }
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < n {
            let (_, len, unit) = best[i]?;
            out.push(unit);
            i += len;
        }
        Some(out)
    }

    /// A lexicon of `words` spelled in the labels, and the words it cannot spell (left out).
    pub fn lexicon<'a>(
        &self,
        words: impl IntoIterator<Item = &'a String>,
    ) -> (Lexicon, Vec<String>) {
        let units = self.units();
        let mut lex = Lexicon::new();
        let mut missing = Vec::new();
        for w in words {
            match self.spell(w) {
                Some(ids) => lex.push(LexiconEntry {
                    word: w.clone(),
                    prob: 1.0,
                    phones: ids.iter().map(|&u| units[u as usize - 1].clone()).collect(),
                }),
                None => missing.push(w.clone()),
            }
        }
        (lex, missing)
    }

    /// Input labels of a graph built over [`Self::units`] (blank = 1, unit `u` = `u + 1`) onto
    /// the model's columns + 1: index = graph label, value = column + 1 (0 stays 0).
    pub fn label_map(&self) -> Vec<u32> {
        let mut map = vec![0, self.blank as u32 + 1];
        map.extend(
            (0..self.labels.len())
                .filter(|&c| c != self.blank)
                .map(|c| c as u32 + 1),
        );
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pieces_spell_a_word_in_the_fewest_pieces_from_its_word_start() {
        let l = CtcLabels::new(
            &labels(&["<blk>", "▁", "▁he", "▁h", "e", "llo", "l", "o", "lo"]),
            None,
            None,
        )
        .unwrap();
        assert_eq!(l.spelling(), Spelling::Pieces);
        assert_eq!(l.delimiter(), None);
        // ▁he + llo (2) beats ▁h e l lo (4) and ▁ ...: units are columns (blank 0).
        assert_eq!(l.spell("hello"), Some(vec![2, 5]));
        // A word the pieces cannot finish ("x") is not spelled.
        assert_eq!(l.spell("hex"), None);
        // No word-start piece for "o": ▁ + o.
        assert_eq!(l.spell("o"), Some(vec![1, 7]));
    }

    #[test]
    fn the_blank_is_found_by_name_and_refused_when_ambiguous_or_missing() {
        let e = CtcLabels::new(&labels(&["a", "b"]), None, None).unwrap_err();
        assert!(e.to_string().contains("no blank label"), "{e}");
        let e = CtcLabels::new(&labels(&["", "<pad>", "a"]), None, None).unwrap_err();
        assert!(e.to_string().contains("columns [0, 1]"), "{e}");
        let e = CtcLabels::new(&labels(&["<blk>", "a", "a"]), None, None).unwrap_err();
        assert!(e.to_string().contains("columns 1 and 2"), "{e}");
        let l = CtcLabels::new(&labels(&["x", "y", "z"]), Some(1), None).unwrap();
        assert_eq!(l.label_map(), vec![0, 2, 1, 3]);
        assert_eq!(l.spell("zx"), Some(vec![2, 1]));
    }

    #[test]
    fn labels_l_cannot_hold_get_column_names() {
        let l = CtcLabels::new(&labels(&["", " ", "#", "a"]), None, None).unwrap();
        assert_eq!(l.delimiter(), Some(1));
        assert_eq!(l.units(), labels(&["<col1>", "<col2>", "a"]));
        assert_eq!(l.delimiter_option().unwrap().unit, "<col1>");
        // The delimiter spells nothing; '#' is a letter.
        assert_eq!(l.spell("a#"), Some(vec![3, 2]));
        assert_eq!(l.spell("a a"), None);
    }
}

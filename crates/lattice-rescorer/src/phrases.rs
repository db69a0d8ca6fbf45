//! Biasing phrases as word ids of a graph's vocabulary.

use ctx_core::bias::BiasList;
use ctx_core::symbols::SymbolTable;

/// What mapping a list to word ids kept and dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhraseReport {
    /// Phrases in the list.
    pub phrases: usize,
    /// Phrases kept (every word in the vocabulary).
    pub kept: usize,
    /// Phrases dropped because a word is outside the vocabulary.
    pub dropped: usize,
    /// Words outside the vocabulary (with repetition).
    pub oov_words: usize,
}

impl PhraseReport {
    /// Adds another report's counts.
    pub fn add(&mut self, o: &PhraseReport) {
        self.phrases += o.phrases;
        self.kept += o.kept;
        self.dropped += o.dropped;
        self.oov_words += o.oov_words;
    }
}

/// A list's phrases as word-id sequences (phrases with an unknown word are dropped and counted:
/// they cannot match anything the decoder outputs; the rest are still boosted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhraseIds {
    /// Word-id sequences, in list order, duplicates removed.
    pub phrases: Vec<Vec<u32>>,
    /// Counts.
    pub report: PhraseReport,
}

impl PhraseIds {
    /// Maps `list` through `words`.
    pub fn new(list: &BiasList, words: &SymbolTable) -> Self {
        let mut out = PhraseIds::default();
        let mut seen = std::collections::HashSet::new();
        for p in &list.phrases {
            out.report.phrases += 1;
            let ids: Vec<Option<u32>> = p.iter().map(|w| words.id(w)).collect();
            let oov = ids.iter().filter(|i| i.is_none()).count();
            out.report.oov_words += oov;
            if oov > 0 || ids.is_empty() {
                out.report.dropped += 1;
                continue;
            }
            out.report.kept += 1;
            let ids: Vec<u32> = ids.into_iter().map(Option::unwrap).collect();
            if seen.insert(ids.clone()) {
                out.phrases.push(ids);
            }
        }
        out
    }

    /// Whether nothing is left to boost.
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oov_phrases_are_dropped_and_counted() {
        let mut t = SymbolTable::with_epsilon();
        for w in ["ryanair", "one", "two", "lufthansa"] {
            t.add(w);
        }
        let list = BiasList::from_phrases(
            &[
                "ryanair one two",
                "speedbird one",
                "lufthansa two",
                "ryanair one two",
            ],
            false,
        );
        let p = PhraseIds::new(&list, &t);
        assert_eq!(p.phrases, vec![vec![1, 2, 3], vec![4, 3]]);
        assert_eq!(
            p.report,
            PhraseReport {
                phrases: 3,
                kept: 2,
                dropped: 1,
                oov_words: 1
            }
        );
    }
}

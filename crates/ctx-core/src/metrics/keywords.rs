//! The field's keyword precision, recall and F-score: NVIDIA NeMo's
//! `compute_key_words_fscore.py` (`context_biasing_utils.compute_fscore`), counted per phrase
//! of a keyword list rather than per word of a target list (our P/R/F1).
//!
//! The reference and the hypothesis are aligned word by word (Levenshtein; a gap is `<eps>`).
//! At every position of the alignment and for every n from 1 to the longest keyword's length,
//! the n reference words from there (gaps included, so a phrase with a deleted or inserted
//! word inside it is not that phrase) are looked up: when they spell a keyword, it counts as
//! one in the ground truth, and as a true positive when the n hypothesis words at those
//! positions spell the same words; otherwise, when the n hypothesis words spell a keyword,
//! that is a false positive. Precision = tp / (tp + fp), recall = tp / gt.
//!
//! Where ours may differ from NeMo's: the alignment (texterrors there, ours here — ties between
//! equally cheap alignments may be broken otherwise, which can move a count between
//! true and false positive) and the zero cases (NeMo adds 1e-8 to each denominator; a rate
//! without a denominator is `None` here).
//!
//! ```
//! use ctx_core::metrics::keywords::KeywordList;
//! let kw = KeywordList::new([vec!["acme", "corp"], vec!["zorblax"]]);
//! // acme corp recognised; zorblax said but missed, then written where it was not said.
//! let c = kw.count(
//!     &["zorblax", "said", "acme", "corp"],
//!     &["zorba", "said", "acme", "corp", "zorblax"],
//! );
//! assert_eq!((c.true_pos, c.false_pos, c.false_neg), (1, 1, 1));
//! ```

use crate::metrics::align::{align_words, EditOp};
use crate::metrics::score::PrfCounts;
use std::collections::HashSet;

/// A keyword list: distinct phrases (word sequences), looked up by their words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeywordList {
    phrases: HashSet<Vec<String>>,
    longest: usize,
}

/// What fills an alignment gap (NeMo's texterrors writes `<eps>`): no keyword spells it.
const GAP: &str = "<eps>";

impl KeywordList {
    /// The list of `phrases` (empty ones are left out; duplicates count once).
    pub fn new<P, W>(phrases: impl IntoIterator<Item = P>) -> Self
    where
        P: IntoIterator<Item = W>,
        W: AsRef<str>,
    {
        let phrases: HashSet<Vec<String>> = phrases
            .into_iter()
            .map(|p| p.into_iter().map(|w| w.as_ref().to_string()).collect())
            .filter(|p: &Vec<String>| !p.is_empty())
            .collect();
        let longest = phrases.iter().map(Vec::len).max().unwrap_or(0);
        Self { phrases, longest }
    }

    /// Distinct keywords.
    pub fn len(&self) -> usize {
        self.phrases.len()
    }

    /// Whether the list holds no keyword.
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }

    /// One utterance's counts: `true_pos` keywords recognised, `false_pos` keywords written
    /// where the reference has none, `false_neg` reference keywords not recognised (NeMo's
    /// gt − tp).
    pub fn count<S: AsRef<str>, T: AsRef<str>>(&self, reference: &[S], hyp: &[T]) -> PrfCounts {
        let mut c = PrfCounts::default();
        if self.phrases.is_empty() {
            return c;
        }
        let pairs: Vec<(&str, &str)> = align_words(reference, hyp)
            .iter()
            .map(|s| {
                let r = s.reference.map_or(GAP, |p| reference[p.segment].as_ref());
                let h = s.hyp.map_or(GAP, |i| hyp[i].as_ref());
                match s.op {
                    EditOp::Ins => (GAP, h),
                    EditOp::Del => (r, GAP),
                    EditOp::Match | EditOp::Sub => (r, h),
                }
            })
            .collect();
        let mut r_gram: Vec<String> = Vec::with_capacity(self.longest);
        let mut h_gram: Vec<String> = Vec::with_capacity(self.longest);
        for i in 0..pairs.len() {
            r_gram.clear();
            h_gram.clear();
            for &(r, h) in pairs[i..].iter().take(self.longest) {
                r_gram.push(r.to_string());
                h_gram.push(h.to_string());
                if self.phrases.contains(&r_gram) {
                    if r_gram == h_gram {
                        c.true_pos += 1;
                    } else {
                        c.false_neg += 1;
                    }
                } else if self.phrases.contains(&h_gram) {
                    c.false_pos += 1;
                }
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    /// A hand count of NeMo's rules on one utterance with every case: a phrase recognised, a
    /// phrase broken by a substitution, a phrase with a deleted word, a keyword inserted, a
    /// one-word keyword inside a longer one.
    #[test]
    fn counts_follow_nemos_rules() {
        let kw = KeywordList::new([
            words("new york"),
            words("york"),
            words("acme corp"),
            words("zorblax"),
        ]);
        let r = words("we flew to new york with acme corp and zorblax people");
        let h = words("we flew to new york with acme court and people zorblax");
        let c = kw.count(&r, &h);
        // Reference keywords: "new york" (tp), "york" (tp, counted on its own as NeMo does),
        // "acme corp" (fn: court), "zorblax" (fn: deleted); hypothesis: "zorblax" inserted
        // at the end (fp).
        assert_eq!((c.true_pos, c.false_neg, c.false_pos), (2, 2, 1));
        assert_eq!(c.precision(), Some(200.0 / 3.0));
        assert_eq!(c.recall(), Some(50.0));
        // An empty list counts nothing.
        assert_eq!(
            KeywordList::new(Vec::<Vec<&str>>::new()).count(&r, &h),
            PrfCounts::default()
        );
        // A gap inside a phrase breaks it: "new <eps> york" is not "new york", neither in the
        // ground truth nor as a hit (NeMo's rule; its TODO says so); "york" alone still counts.
        let c = kw.count(&words("new york"), &words("new big york"));
        assert_eq!((c.true_pos, c.false_neg, c.false_pos), (1, 0, 0));
    }
}

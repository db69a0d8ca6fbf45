//! A simulated model's internal language model: a Witten-Bell word trigram of the transcripts it
//! was trained on. A network trained on a set's own transcripts (003's Zipformer on ATCO2) has
//! learned their phraseology: it mishears a word as a near spelling only where that spelling is
//! about as plausible in context, and keeps the reference where its prior rules the spelling
//! out. The simulators ask this model how much likelier a confusion makes the sentence
//! ([`InternalLm::gain`]). Built from the training text only: never entity tags or lists.

use std::collections::HashMap;

/// Sentence start and end share one id (as history: start; as a word: end).
const BOUNDARY: u32 = 0;

/// Word, bigram and trigram counts of a training text, with each history's total and number of
/// distinct followers (Witten-Bell's `c(h)` and `T(h)`).
#[derive(Debug, Clone)]
pub struct InternalLm {
    ids: HashMap<String, u32>,
    unigram: Vec<u64>,
    total: u64,
    bigram: HashMap<(u32, u32), u64>,
    trigram: HashMap<(u32, u32, u32), u64>,
    /// Per one-word history: (c(h), T(h)).
    hist1: Vec<(u64, u64)>,
    /// Per two-word history: (c(h), T(h)).
    hist2: HashMap<(u32, u32), (u64, u64)>,
}

impl InternalLm {
    /// Counts the sentences of a training text (words split on white space), each between
    /// sentence boundaries.
    ///
    /// ```
    /// use ctx_data::internal_lm::InternalLm;
    /// let lm = InternalLm::from_sentences(["cleared to land", "cleared for take off"]);
    /// assert!(lm.ln_prob(Some("cleared"), Some("to"), "land") > lm.ln_prob(None, None, "land"));
    /// ```
    pub fn from_sentences<'a>(sentences: impl IntoIterator<Item = &'a str>) -> Self {
        let mut lm = InternalLm {
            ids: HashMap::from([(String::new(), BOUNDARY)]),
            unigram: vec![0],
            total: 0,
            bigram: HashMap::new(),
            trigram: HashMap::new(),
            hist1: vec![(0, 0)],
            hist2: HashMap::new(),
        };
        for s in sentences {
            let mut ids: Vec<u32> = vec![BOUNDARY, BOUNDARY];
            for w in s.split_whitespace() {
                let next = lm.ids.len() as u32;
                let id = *lm.ids.entry(w.to_string()).or_insert(next);
                if id as usize == lm.unigram.len() {
                    lm.unigram.push(0);
                    lm.hist1.push((0, 0));
                }
                ids.push(id);
            }
            ids.push(BOUNDARY);
            for k in 2..ids.len() {
                let (a, b, w) = (ids[k - 2], ids[k - 1], ids[k]);
                lm.unigram[w as usize] += 1;
                lm.total += 1;
                let c2 = lm.bigram.entry((b, w)).or_insert(0);
                *c2 += 1;
                let h1 = &mut lm.hist1[b as usize];
                h1.0 += 1;
                h1.1 += u64::from(*c2 == 1);
                let c3 = lm.trigram.entry((a, b, w)).or_insert(0);
                *c3 += 1;
                let h2 = lm.hist2.entry((a, b)).or_insert((0, 0));
                h2.0 += 1;
                h2.1 += u64::from(*c3 == 1);
            }
        }
        lm
    }

    /// The id of a word (None: unseen); `None` as a word is the boundary.
    fn id(&self, w: Option<&str>) -> Option<u32> {
        match w {
            None => Some(BOUNDARY),
            Some(w) => self.ids.get(w).copied(),
        }
    }

    /// p(w), add-one smoothed over the seen words and one unseen word.
    fn unigram_p(&self, w: Option<u32>) -> f64 {
        let c = w.map_or(0, |i| self.unigram[i as usize]);
        (c + 1) as f64 / (self.total + self.unigram.len() as u64 + 1) as f64
    }

    /// ln p(w | h2 h1), Witten-Bell: `(c(h, w) + T(h)·p(w | shorter h)) / (c(h) + T(h))`, down to
    /// the add-one unigram. `None` as a history word is the sentence start; `None` as `w` the
    /// sentence end.
    pub fn ln_prob(&self, h2: Option<&str>, h1: Option<&str>, w: &str) -> f64 {
        self.ln_prob_ids(self.id(h2), self.id(h1), self.ids.get(w).copied())
    }

    fn ln_prob_ids(&self, h2: Option<u32>, h1: Option<u32>, w: Option<u32>) -> f64 {
        let p1 = self.unigram_p(w);
        let p2 = match h1.map(|h| self.hist1[h as usize]) {
            Some((c, t)) if c > 0 => {
                let c2 = match (h1, w) {
                    (Some(h), Some(w)) => self.bigram.get(&(h, w)).copied().unwrap_or(0),
                    _ => 0,
                };
                (c2 as f64 + t as f64 * p1) / (c + t) as f64
            }
            _ => p1,
        };
        let p3 = match (h2, h1) {
            (Some(a), Some(b)) => match self.hist2.get(&(a, b)) {
                Some(&(c, t)) => {
                    let c3 = w.map_or(0, |w| self.trigram.get(&(a, b, w)).copied().unwrap_or(0));
                    (c3 as f64 + t as f64 * p2) / (c + t) as f64
                }
                None => p2,
            },
            _ => p2,
        };
        p3.ln()
    }

    /// How much likelier (natural log) the sentence `words` is with `heard` in place of the
    /// word at `i`: the word's own probability and the two after it, which condition on it.
    ///
    /// ```
    /// use ctx_data::internal_lm::InternalLm;
    /// let lm = InternalLm::from_sentences(["cleared to land", "cleared to land", "two one"]);
    /// let said: Vec<String> = ["cleared", "to", "land"].map(String::from).to_vec();
    /// assert!(lm.gain(&said, 1, "two") < -2.0);
    /// ```
    pub fn gain(&self, words: &[String], i: usize, heard: &str) -> f64 {
        let id = |k: usize| -> Option<u32> {
            if k < 2 || k - 2 >= words.len() {
                Some(BOUNDARY)
            } else {
                self.ids.get(words[k - 2].as_str()).copied()
            }
        };
        // Positions shifted by two: 0 and 1 are the start, len + 2 the end.
        let at = i + 2;
        let heard_id = self.ids.get(heard).copied();
        let sum = |swap: bool| -> f64 {
            let pick = |k: usize| if swap && k == at { heard_id } else { id(k) };
            (at..=(at + 2).min(words.len() + 2))
                .map(|k| self.ln_prob_ids(pick(k - 2), pick(k - 1), pick(k)))
                .sum()
        };
        sum(true) - sum(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witten_bell_sums_to_one_over_the_vocabulary_and_an_unseen_word() {
        let lm = InternalLm::from_sentences(["a b a c", "a b b"]);
        for (h2, h1) in [
            (None, None),
            (None, Some("a")),
            (Some("a"), Some("b")),
            (Some("b"), Some("b")),
            (Some("zz"), Some("c")),
        ] {
            // The vocabulary: a, b, c, the sentence end and one unseen word.
            let ids = [Some(1), Some(2), Some(3), Some(BOUNDARY), None];
            let p: f64 = ids
                .iter()
                .map(|&w| lm.ln_prob_ids(lm.id(h2), lm.id(h1), w).exp())
                .sum();
            assert!((p - 1.0).abs() < 1e-9, "{h2:?} {h1:?}: {p}");
        }
        // After "a": b twice, c once (T = 2, c = 3); unigram p(b) = (3 + 1) / (9 + 4 + 1).
        let pb = 4.0 / 14.0;
        let want = (2.0 + 2.0 * pb) / 5.0;
        assert!((lm.ln_prob(Some("zz"), Some("a"), "b").exp() - want).abs() < 1e-12);
    }

    #[test]
    fn a_swap_seen_in_that_context_costs_less_than_one_never_seen_there() {
        let lm = InternalLm::from_sentences([
            "cleared to land",
            "cleared to land",
            "cleared for takeoff",
            "left turn",
        ]);
        let said: Vec<String> = "cleared to land".split(' ').map(String::from).collect();
        let seen_after_cleared = lm.gain(&said, 1, "for");
        let never_after_cleared = lm.gain(&said, 1, "left");
        assert!(never_after_cleared < seen_after_cleared && seen_after_cleared < 0.0);
        assert_eq!(lm.gain(&said, 1, "to"), 0.0);
    }
}

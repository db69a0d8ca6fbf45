//! Counts and rates from an alignment: WER (S/D/I), NE-WER, U-WER, NE-A, per-class WER and
//! precision/recall/F1 of target words.
//!
//! Definitions (thesis 003 §2.5, docs/design.md §7):
//! - **NE-WER**: errors on reference words that belong to a named entity, over their count.
//!   Substitutions and deletions are charged per reference word. An insertion is charged to an
//!   entity only under [`NeInsertions::Inside`] and only when both neighbouring reference words
//!   belong to that entity (a false word *within* the entity, as the thesis counts it); under
//!   [`NeInsertions::Never`] (fstalign, Earnings) insertions are never charged to entities.
//! - **U-WER**: the same over words outside entities, plus every insertion not charged to one.
//! - **NE-A**: share of entities whose reference words are all matched (insertions ignored).
//! - **Per-class WER**: like NE-WER for the words of each entity class.
//! - **Precision/recall/F1** of target words (e.g. the words of a biasing list): a matched
//!   reference target word is a true positive, an unmatched one a false negative, and a hypothesis
//!   target word that is substituted or inserted a false positive.

use crate::metrics::align::{align_reference, EditOp, Step};
use crate::metrics::reference::{RefToken, ScoringRef};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Substitution, deletion and insertion counts over a number of reference words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ErrorCounts {
    /// Reference words.
    pub ref_words: u64,
    /// Substitutions.
    pub substitutions: u64,
    /// Deletions.
    pub deletions: u64,
    /// Insertions.
    pub insertions: u64,
}

impl ErrorCounts {
    /// S + D + I.
    pub fn errors(&self) -> u64 {
        self.substitutions + self.deletions + self.insertions
    }

    /// Error rate in percent; `None` when there is no reference word.
    pub fn rate(&self) -> Option<f64> {
        (self.ref_words > 0).then(|| 100.0 * self.errors() as f64 / self.ref_words as f64)
    }

    fn record(&mut self, op: EditOp) {
        match op {
            EditOp::Match => self.ref_words += 1,
            EditOp::Sub => {
                self.ref_words += 1;
                self.substitutions += 1
            }
            EditOp::Del => {
                self.ref_words += 1;
                self.deletions += 1
            }
            EditOp::Ins => self.insertions += 1,
        }
    }

    /// Adds another count.
    pub fn add(&mut self, o: &ErrorCounts) {
        self.ref_words += o.ref_words;
        self.substitutions += o.substitutions;
        self.deletions += o.deletions;
        self.insertions += o.insertions;
    }
}

/// True/false positive and false negative counts of target words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PrfCounts {
    /// Reference target words recognised.
    pub true_pos: u64,
    /// Hypothesis target words that are wrong (substituted or inserted).
    pub false_pos: u64,
    /// Reference target words not recognised.
    pub false_neg: u64,
}

impl PrfCounts {
    /// Precision in percent (`None` without any hypothesised target word).
    pub fn precision(&self) -> Option<f64> {
        let d = self.true_pos + self.false_pos;
        (d > 0).then(|| 100.0 * self.true_pos as f64 / d as f64)
    }

    /// Recall in percent (`None` without any reference target word).
    pub fn recall(&self) -> Option<f64> {
        let d = self.true_pos + self.false_neg;
        (d > 0).then(|| 100.0 * self.true_pos as f64 / d as f64)
    }

    /// F1 in percent.
    pub fn f1(&self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        Some(if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        })
    }

    /// Adds another count.
    pub fn add(&mut self, o: &PrfCounts) {
        self.true_pos += o.true_pos;
        self.false_pos += o.false_pos;
        self.false_neg += o.false_neg;
    }
}

/// Whether insertions may be charged to entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NeInsertions {
    /// Charge an insertion to an entity when both neighbouring reference words belong to it.
    #[default]
    Inside,
    /// Never charge insertions to entities (fstalign's Earnings scoring).
    Never,
}

/// What to measure beyond plain WER.
#[derive(Debug, Clone, Default)]
pub struct ScoreOptions {
    /// Entity classes that count as named entities for NE-WER/U-WER/NE-A (`None`: all classes).
    pub ne_classes: Option<BTreeSet<String>>,
    /// Insertion policy for entities.
    pub ne_insertions: NeInsertions,
    /// Target words for precision/recall/F1 (`None`: not measured).
    pub targets: Option<HashSet<String>>,
}

/// The measures of one utterance (or document).
#[derive(Debug, Clone, Default)]
pub struct UttScore {
    /// Utterance or document id.
    pub id: String,
    /// All words.
    pub all: ErrorCounts,
    /// Words of named entities.
    pub ne: ErrorCounts,
    /// Words outside named entities.
    pub unbiased: ErrorCounts,
    /// Named entities with at least one reference word.
    pub entities: u64,
    /// Of those, entities recognised exactly.
    pub entities_correct: u64,
    /// Per entity class.
    pub per_class: BTreeMap<String, ErrorCounts>,
    /// Target-word counts.
    pub targets: PrfCounts,
    /// The alignment.
    pub steps: Vec<Step>,
}

/// Totals over many utterances.
#[derive(Debug, Clone, Default)]
pub struct ScoreTotals {
    /// Utterances added.
    pub utterances: u64,
    /// All words.
    pub all: ErrorCounts,
    /// Words of named entities.
    pub ne: ErrorCounts,
    /// Words outside named entities.
    pub unbiased: ErrorCounts,
    /// Named entities.
    pub entities: u64,
    /// Named entities recognised exactly.
    pub entities_correct: u64,
    /// Per entity class.
    pub per_class: BTreeMap<String, ErrorCounts>,
    /// Target-word counts.
    pub targets: PrfCounts,
    /// Keyword counts per phrase of each utterance's list (NeMo's keyword F-score, module
    /// `metrics::keywords`), where the caller scored them.
    pub keywords: Option<PrfCounts>,
}

impl ScoreTotals {
    /// Adds one utterance's measures.
    pub fn add(&mut self, u: &UttScore) {
        self.utterances += 1;
        self.all.add(&u.all);
        self.ne.add(&u.ne);
        self.unbiased.add(&u.unbiased);
        self.entities += u.entities;
        self.entities_correct += u.entities_correct;
        for (c, e) in &u.per_class {
            self.per_class.entry(c.clone()).or_default().add(e);
        }
        self.targets.add(&u.targets);
    }

    /// NE-A in percent (`None` without entities).
    pub fn ne_acc(&self) -> Option<f64> {
        (self.entities > 0).then(|| 100.0 * self.entities_correct as f64 / self.entities as f64)
    }
}

impl UttScore {
    /// NE-A in percent (`None` without entities).
    pub fn ne_acc(&self) -> Option<f64> {
        (self.entities > 0).then(|| 100.0 * self.entities_correct as f64 / self.entities as f64)
    }
}

fn token_at<'a>(r: &'a ScoringRef, s: &Step) -> Option<&'a RefToken> {
    s.reference.map(|p| r.token(p))
}

/// Aligns `hyp` to `reference` and measures everything [`ScoreOptions`] asks for.
pub fn score_utterance<T: AsRef<str>>(
    reference: &ScoringRef,
    hyp: &[T],
    opts: &ScoreOptions,
) -> UttScore {
    let steps = align_reference(reference, hyp);
    let is_ne = |e: u32| {
        opts.ne_classes
            .as_ref()
            .is_none_or(|set| set.contains(&reference.entities[e as usize].class))
    };
    let is_target = |w: &str| opts.targets.as_ref().is_some_and(|t| t.contains(w));
    let mut u = UttScore {
        id: reference.id.clone(),
        ..UttScore::default()
    };
    let n_ent = reference.entities.len();
    let (mut seen, mut wrong) = (vec![false; n_ent], vec![false; n_ent]);

    // Nearest reference word before and after each step, for the insertion policy.
    let toks: Vec<Option<&RefToken>> = steps.iter().map(|s| token_at(reference, s)).collect();
    let mut next_tok: Vec<Option<&RefToken>> = vec![None; steps.len()];
    let mut after = None;
    for i in (0..steps.len()).rev() {
        next_tok[i] = after;
        if toks[i].is_some() {
            after = toks[i];
        }
    }
    let mut prev: Option<&RefToken> = None;
    for (i, s) in steps.iter().enumerate() {
        u.all.record(s.op);
        match toks[i] {
            Some(t) => {
                let ne = t.entities.iter().any(|&e| is_ne(e));
                if ne {
                    u.ne.record(s.op);
                } else {
                    u.unbiased.record(s.op);
                }
                let classes: BTreeSet<&str> = t
                    .entities
                    .iter()
                    .map(|&e| reference.entities[e as usize].class.as_str())
                    .collect();
                for c in classes {
                    u.per_class.entry(c.to_owned()).or_default().record(s.op);
                }
                for &e in &t.entities {
                    seen[e as usize] = true;
                    wrong[e as usize] |= s.op != EditOp::Match;
                }
                if is_target(&t.word) {
                    if s.op == EditOp::Match {
                        u.targets.true_pos += 1;
                    } else {
                        u.targets.false_neg += 1;
                    }
                }
                if s.op == EditOp::Sub
                    && is_target(hyp[s.hyp.expect("substitution has a hyp word")].as_ref())
                {
                    u.targets.false_pos += 1;
                }
                prev = Some(t);
            }
            None => {
                if is_target(hyp[s.hyp.expect("insertion has a hyp word")].as_ref()) {
                    u.targets.false_pos += 1;
                }
                let shared: Vec<u32> = match (opts.ne_insertions, prev, next_tok[i]) {
                    (NeInsertions::Inside, Some(a), Some(b)) => a
                        .entities
                        .iter()
                        .copied()
                        .filter(|e| b.entities.contains(e))
                        .collect(),
                    _ => Vec::new(),
                };
                if shared.iter().any(|&e| is_ne(e)) {
                    u.ne.record(EditOp::Ins);
                } else {
                    u.unbiased.record(EditOp::Ins);
                }
                let classes: BTreeSet<&str> = shared
                    .iter()
                    .map(|&e| reference.entities[e as usize].class.as_str())
                    .collect();
                for c in classes {
                    u.per_class
                        .entry(c.to_owned())
                        .or_default()
                        .record(EditOp::Ins);
                }
            }
        }
    }
    for e in 0..n_ent {
        if seen[e] && is_ne(e as u32) {
            u.entities += 1;
            if !wrong[e] {
                u.entities_correct += 1;
            }
        }
    }
    u.steps = steps;
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn entity_measures_on_a_hand_aligned_example() {
        // ref: contact lufthansa one two three on one two one decimal eight
        // entity: [callsign] lufthansa one two three (words 1..5)
        let r = words("contact lufthansa one two three on one two one decimal eight");
        let reference = ScoringRef::with_spans("u", &r, &[("callsign".into(), 1, 5)]).unwrap();
        // hyp: "contact lufthansa one uh two four on one two one decimal"
        //   callsign: M, M, I(uh, inside), M, S(three->four) -> 1 sub + 1 ins over 4 words
        //   rest: contact M; on one two one decimal M; eight D -> 1 del over 7 words
        let hyp = words("contact lufthansa one uh two four on one two one decimal");
        let u = score_utterance(&reference, &hyp, &ScoreOptions::default());
        assert_eq!(
            u.all,
            ErrorCounts {
                ref_words: 11,
                substitutions: 1,
                deletions: 1,
                insertions: 1
            }
        );
        assert_eq!(
            u.ne,
            ErrorCounts {
                ref_words: 4,
                substitutions: 1,
                deletions: 0,
                insertions: 1
            }
        );
        assert_eq!(
            u.unbiased,
            ErrorCounts {
                ref_words: 7,
                substitutions: 0,
                deletions: 1,
                insertions: 0
            }
        );
        assert_eq!((u.entities, u.entities_correct), (1, 0));
        assert_eq!(u.ne.rate(), Some(50.0));
        assert_eq!(u.per_class["callsign"].errors(), 2);

        // Under fstalign's policy the inserted "uh" goes to U-WER instead.
        let opts = ScoreOptions {
            ne_insertions: NeInsertions::Never,
            ..Default::default()
        };
        let u = score_utterance(&reference, &hyp, &opts);
        assert_eq!((u.ne.insertions, u.unbiased.insertions), (0, 1));

        // An insertion at the entity's edge is never inside it.
        let hyp = words("contact uh lufthansa one two three on one two one decimal eight");
        let u = score_utterance(&reference, &hyp, &ScoreOptions::default());
        assert_eq!(
            (u.ne.errors(), u.unbiased.insertions, u.entities_correct),
            (0, 1, 1)
        );
    }

    #[test]
    fn target_precision_recall() {
        let reference = ScoringRef::plain("u", &words("speedbird five climb level two"));
        let targets: HashSet<String> = ["speedbird", "hansa"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let opts = ScoreOptions {
            targets: Some(targets),
            ..Default::default()
        };
        // speedbird M (tp); five -> hansa S (fp); "hansa" inserted (fp)
        let u = score_utterance(
            &reference,
            &words("speedbird hansa climb level two hansa"),
            &opts,
        );
        assert_eq!(
            u.targets,
            PrfCounts {
                true_pos: 1,
                false_pos: 2,
                false_neg: 0
            }
        );
        assert!((u.targets.precision().unwrap() - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(u.targets.recall(), Some(100.0));
        assert!((u.targets.f1().unwrap() - 50.0).abs() < 1e-9);
        let u = score_utterance(&reference, &words("five climb level two"), &opts);
        assert_eq!(
            u.targets,
            PrfCounts {
                true_pos: 0,
                false_pos: 0,
                false_neg: 1
            }
        );
        assert_eq!(u.targets.precision(), None);
    }

    #[test]
    fn ne_classes_filter_and_phrase_location() {
        let r = words("thanks john smith of acme corp and john");
        let ents = vec![
            ("PERSON".to_string(), words("john smith")),
            ("ORG".to_string(), words("acme corp")),
            ("PERSON".to_string(), words("john")),
        ];
        let reference = ScoringRef::with_entity_phrases("u", &r, &ents).unwrap();
        let opts = ScoreOptions {
            ne_classes: Some(["PERSON".to_string()].into()),
            ..Default::default()
        };
        let u = score_utterance(
            &reference,
            &words("thanks jon smith of acne corp and john"),
            &opts,
        );
        // PERSON words: john smith john (3), one sub; ORG is outside NE here.
        assert_eq!((u.ne.ref_words, u.ne.errors()), (3, 1));
        assert_eq!((u.unbiased.ref_words, u.unbiased.errors()), (5, 1));
        assert_eq!((u.entities, u.entities_correct), (2, 1));
        assert_eq!(u.per_class["ORG"].substitutions, 1);
        let e =
            ScoringRef::with_entity_phrases("u9", &r, &[("NE".into(), words("bob"))]).unwrap_err();
        assert!(e.to_string().contains("u9"));
    }
}

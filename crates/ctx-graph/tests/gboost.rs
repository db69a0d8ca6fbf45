//! G-boosting (003 §3.1.3) on a hand-made trigram LM: which n-grams are discounted, which are
//! added (with their back-off cost), what a phrase then costs through G, and that an empty edit
//! leaves G unchanged.

use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_graph::gboost::{gboost_edit, GBoost};
use ctx_graph::grammar::{build_grammar_fst, build_grammar_fst_with, MissingWords};
use ctx_graph::lexicon_fst::{build_lexicon_fst, LexiconFst};
use ctx_graph::rustfst::prelude::*;
use ctx_graph::StdFst;
use std::collections::HashMap;

const LN10: f32 = std::f32::consts::LN_10;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|w| w.to_string()).collect()
}

/// Trigram LM over a b c d x (log10 probabilities / back-offs). Every back-off costs something,
/// so G's best path for a sequence is the ARPA rule's path.
fn lm() -> ArpaLm {
    let uni = |w: &str, p: f32, bo: f32| (s(&[w]), p, bo);
    ArpaLm::from_entries(vec![
        vec![
            uni("</s>", -1.0, 0.0),
            uni("<s>", -99.0, -0.3),
            uni("a", -1.0, -0.3),
            uni("b", -1.0, -0.3),
            uni("c", -1.0, -0.3),
            uni("d", -1.0, -0.3),
            uni("x", -1.0, -0.3),
        ],
        vec![
            (s(&["<s>", "a"]), -0.5, 0.0),
            (s(&["a", "b"]), -0.2, -0.2),
            (s(&["b", "c"]), -0.4, -0.1),
        ],
        vec![(s(&["a", "b", "c"]), -0.1, 0.0)],
    ])
    .unwrap()
}

/// One-phone pronunciations: the lexicon only supplies the word table here.
fn l() -> LexiconFst {
    let mut lex = Lexicon::new();
    for (w, p) in [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D"), ("x", "X")] {
        lex.push(LexiconEntry {
            word: w.into(),
            prob: 1.0,
            phones: vec![p.into()],
        });
    }
    build_lexicon_fst(&lex, &s(&["A", "B", "C", "D", "X"]), None).unwrap()
}

/// The cheapest path reading `words` from G's start (back-off arcs as ε moves, no final cost).
fn seq_cost(g: &StdFst, backoff: u32, words: &[u32]) -> f32 {
    let mut dist: HashMap<StateId, f32> = HashMap::from([(g.start().unwrap(), 0.0)]);
    let close = |dist: &mut HashMap<StateId, f32>| loop {
        let mut changed = false;
        for (st, c) in dist.clone() {
            for tr in g.get_trs(st).unwrap().trs() {
                if tr.ilabel == backoff {
                    let n = c + *tr.weight.value();
                    let e = dist.entry(tr.nextstate).or_insert(f32::INFINITY);
                    if n < *e - 1e-6 {
                        *e = n;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    };
    for &w in words {
        close(&mut dist);
        let mut next: HashMap<StateId, f32> = HashMap::new();
        for (st, c) in &dist {
            for tr in g.get_trs(*st).unwrap().trs() {
                if tr.ilabel == w {
                    let n = c + *tr.weight.value();
                    let e = next.entry(tr.nextstate).or_insert(f32::INFINITY);
                    *e = e.min(n);
                }
            }
        }
        dist = next;
    }
    dist.values().copied().fold(f32::INFINITY, f32::min)
}

#[test]
fn phrase_ngrams_are_discounted_and_missing_prefixes_added() {
    let lm = lm();
    let l = l();
    let words = &l.symbols.words;
    let id = |w: &str| words.id(w).unwrap();
    let bo = l.symbols.word_disambig;
    let d = -1.5f32;
    let boost = GBoost {
        phrases: vec![s(&["a", "b", "c", "d"])],
        discount: d,
    };
    let (edit, report) = gboost_edit(&lm, words, &boost).unwrap();
    // Discounted: every listed n-gram ending in a prefix: a, <s> a, a b, a b c (not b c, d).
    assert_eq!((report.kept, report.discounted, report.added), (1, 4, 1));
    let lid = |w: &str| lm.word_id(w).unwrap();
    for g in [&["a"][..], &["<s>", "a"], &["a", "b"], &["a", "b", "c"]] {
        let key: Vec<u32> = g.iter().map(|w| lid(w)).collect();
        assert_eq!(edit.deltas.get(&key), Some(&d), "{g:?}");
    }
    assert!(!edit.deltas.contains_key(&vec![lid("b"), lid("c")]));
    // Added: the 4-gram a b c d with the back-off cost bo(b c) + bo(c) + p(d) = 1.4, plus d.
    assert_eq!(edit.added.len(), 1);
    assert_eq!(
        edit.added[0].0,
        vec![lid("a"), lid("b"), lid("c"), lid("d")]
    );
    assert!((edit.added[0].1 - (1.4 * LN10 + d)).abs() < 1e-4);

    let (g0, _) = build_grammar_fst(&lm, words, bo, MissingWords::Error).unwrap();
    let (g1, r1) = build_grammar_fst_with(&lm, words, bo, MissingWords::Error, &edit).unwrap();
    // One new state: the history a b c.
    assert_eq!(r1.states, g0.num_states() + 1);
    let phrase = [id("a"), id("b"), id("c"), id("d")];
    // <s> a (0.5) + back-off of <s> a (0) + a b (0.2) + a b c (0.1) + d after a b c (1.4).
    let base = seq_cost(&g0, bo, &phrase);
    assert!((base - 2.2 * LN10).abs() < 1e-4, "{base}");
    let boosted = seq_cost(&g1, bo, &phrase);
    assert!((boosted - (2.2 * LN10 + 4.0 * d)).abs() < 1e-4, "{boosted}");
    // The first word is boosted after any history (x a backs off to the unigram a) …
    let xa = [id("x"), id("a")];
    assert!((seq_cost(&g1, bo, &xa) - (seq_cost(&g0, bo, &xa) + d)).abs() < 1e-4);
    // … later words only after the phrase's own words, and other words not at all.
    for seq in [
        &[id("x"), id("b")][..],
        &[id("b"), id("c")],
        &[id("c"), id("d")],
    ] {
        assert!((seq_cost(&g1, bo, seq) - seq_cost(&g0, bo, seq)).abs() < 1e-4);
    }
}

#[test]
fn an_empty_edit_leaves_g_unchanged_and_oov_phrases_are_counted() {
    let lm = lm();
    let l = l();
    let words = &l.symbols.words;
    let bo = l.symbols.word_disambig;
    // Every prefix listed and no discount: nothing to change.
    let boost = GBoost {
        phrases: vec![s(&["a", "b", "c"]), s(&["zzz", "a"]), s(&["<s>"]), vec![]],
        discount: 0.0,
    };
    let (edit, report) = gboost_edit(&lm, words, &boost).unwrap();
    assert_eq!((report.phrases, report.kept, report.dropped), (3, 1, 2));
    assert!(edit.deltas.is_empty() && edit.added.is_empty());
    let (g0, _) = build_grammar_fst(&lm, words, bo, MissingWords::Error).unwrap();
    let (g1, _) = build_grammar_fst_with(&lm, words, bo, MissingWords::Error, &edit).unwrap();
    assert_eq!(g0, g1);
    // A non-finite discount is refused.
    let bad = GBoost {
        phrases: vec![s(&["a"])],
        discount: f32::NAN,
    };
    assert!(gboost_edit(&lm, words, &bad).is_err());
}

//! On-the-fly LM composition: the deterministic back-off view of G against the ARPA rule, the
//! difference G_boosted − G against two independent walks and against G-boosting's discounts,
//! and decoding with the automaton against brute force over the graph's paths.

mod common;

use common::{brute_force, random_graph, Rng};
use ctx_core::arpa::ArpaLm;
use ctx_core::scores::ScoreMatrix;
use ctx_core::symbols::SymbolTable;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::gboost::{gboost_edit, GBoost};
use ctx_graph::grammar::{build_grammar_fst, build_grammar_fst_with, MissingWords};
use ctx_graph::StdFst;
use std::collections::BTreeMap;
use wfst_search::{
    decode_utterance, BackoffLm, Booster, DecodeError, Decoder, DecoderConfig, LmDelta,
    PhraseAutomaton, Stream,
};

const LN10: f32 = std::f32::consts::LN_10;

fn w(i: u32) -> String {
    format!("w{i}")
}

/// A random trigram LM over `w1..=wV` (+ `<s>`, `</s>`); every listed trigram's two bigrams are
/// listed too. Returns it with the word table (`w{i}` = id i, `#0` = V + 1).
fn random_lm(rng: &mut Rng, v: u32) -> (ArpaLm, SymbolTable) {
    let lp = |rng: &mut Rng| -0.2 - 1.8 * rng.unit();
    let bo = |rng: &mut Rng| -0.6 * rng.unit();
    let mut uni = vec![
        (vec!["<s>".to_string()], -99.0, bo(rng)),
        (vec!["</s>".to_string()], lp(rng), 0.0),
    ];
    for i in 1..=v {
        uni.push((vec![w(i)], lp(rng), bo(rng)));
    }
    let tok = |i: u32| if i == 0 { "<s>".to_string() } else { w(i) };
    let mut bi: BTreeMap<(u32, u32), ()> = BTreeMap::new();
    for _ in 0..3 * v {
        let a = rng.below(v as u64 + 1) as u32; // 0 = <s>
        let b = 1 + rng.below(v as u64) as u32;
        bi.insert((a, b), ());
    }
    let mut bigrams: Vec<(Vec<String>, f32, f32)> = bi
        .keys()
        .map(|&(a, b)| (vec![tok(a), w(b)], lp(rng), bo(rng)))
        .collect();
    for a in 1..=v {
        if rng.below(3) == 0 {
            bigrams.push((vec![w(a), "</s>".to_string()], lp(rng), 0.0));
        }
    }
    let mut tri: Vec<(Vec<String>, f32, f32)> = Vec::new();
    let keys: Vec<(u32, u32)> = bi.keys().copied().collect();
    for &(a, b) in &keys {
        for &(b2, c) in &keys {
            if b2 == b && rng.below(3) == 0 {
                tri.push((vec![tok(a), w(b), w(c)], lp(rng), 0.0));
            }
        }
    }
    let lm = ArpaLm::from_entries(vec![uni, bigrams, tri]).unwrap();
    let mut words = SymbolTable::with_epsilon();
    for i in 1..=v {
        words.add(&w(i));
    }
    words.add("#0");
    (lm, words)
}

/// −ln p of a sentence by the ARPA back-off rule (`<s>` history, `</s>` included).
fn arpa_cost(lm: &ArpaLm, ids: &[u32]) -> f32 {
    let mut hist = vec![lm.word_id("<s>").unwrap()];
    let mut cost = 0.0;
    for &i in ids {
        let x = lm.word_id(&w(i)).unwrap();
        cost -= lm.log10_prob(&hist, x).unwrap() * LN10;
        hist.push(x);
    }
    cost - lm.log10_prob(&hist, lm.word_id("</s>").unwrap()).unwrap() * LN10
}

/// G and G_boosted (phrases `w1 w2 w3 w4` and `w5`, discount `d`) of a random LM.
fn grammars(rng: &mut Rng, v: u32, d: f32) -> (ArpaLm, StdFst, StdFst) {
    let (lm, words) = random_lm(rng, v);
    let bo = v + 1;
    let (g, _) = build_grammar_fst(&lm, &words, bo, MissingWords::Error).unwrap();
    let boost = GBoost {
        phrases: vec![(1..=4).map(w).collect(), vec![w(5)]],
        discount: d,
    };
    let (edit, report) = gboost_edit(&lm, &words, &boost).unwrap();
    assert_eq!(report.kept, 2);
    let (gb, _) = build_grammar_fst_with(&lm, &words, bo, MissingWords::Error, &edit).unwrap();
    (lm, g, gb)
}

fn random_words(rng: &mut Rng, v: u32) -> Vec<u32> {
    (0..rng.below(7))
        .map(|_| 1 + rng.below(v as u64) as u32)
        .collect()
}

#[test]
fn backoff_view_follows_the_arpa_rule_and_the_delta_two_walks() {
    let mut rng = Rng(11);
    for case in 0..20 {
        let (lm, g, gb) = grammars(&mut rng, 6, -1.5);
        let small = BackoffLm::from_fst(&g, 7).unwrap();
        let big = BackoffLm::from_fst(&gb, 7).unwrap();
        assert!(big.num_states() > small.num_states(), "case {case}");
        let delta = LmDelta::new(big.clone(), Some(std::sync::Arc::new(small.clone()))).unwrap();
        let alone = LmDelta::new(small.clone(), None).unwrap();
        for _ in 0..50 {
            let ws = random_words(&mut rng, 6);
            let truth = arpa_cost(&lm, &ws);
            let c = small.sentence_cost(&ws);
            assert!(
                (c - truth).abs() < 1e-3,
                "case {case} {ws:?}: {c} vs {truth}"
            );
            assert!((alone.sentence_cost(&ws) - truth).abs() < 1e-3);
            // The delta (big's walk + small's state through the map) equals two walks.
            let two = big.sentence_cost(&ws) - c;
            let d = delta.sentence_cost(&ws);
            assert!((d - two).abs() < 1e-3, "case {case} {ws:?}: {d} vs {two}");
        }
        // G-boosting's discount, once per word that continues a phrase prefix.
        for (ws, n) in [
            (vec![1, 2, 3, 4], 4.0),
            (vec![5], 1.0),
            (vec![2, 3], 0.0),
            (vec![3, 1, 2], 2.0),
            (vec![1, 2, 5, 6], 3.0),
        ] {
            let d = delta.sentence_cost(&ws);
            assert!(
                (d - n * -1.5).abs() < 1e-3,
                "case {case} {ws:?}: delta {d}, expected {n} discounts"
            );
        }
    }
}

#[test]
fn the_phrase_prefix_automaton_equals_g_boosted_minus_g() {
    let mut rng = Rng(23);
    let mut nonzero = 0;
    for case in 0..40 {
        let (lm, words) = random_lm(&mut rng, 6);
        let (g, _) = build_grammar_fst(&lm, &words, 7, MissingWords::Error).unwrap();
        // Random lists: 1–4 phrases of 1–5 words (longer than the LM's order included).
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(4))
            .map(|_| {
                (0..1 + rng.below(5))
                    .map(|_| 1 + rng.below(6) as u32)
                    .collect()
            })
            .collect();
        let d = -0.5 - 2.0 * rng.unit();
        let boost = GBoost {
            phrases: phrases
                .iter()
                .map(|p| p.iter().map(|&i| w(i)).collect())
                .collect(),
            discount: d,
        };
        let (edit, _) = gboost_edit(&lm, &words, &boost).unwrap();
        let (gb, _) = build_grammar_fst_with(&lm, &words, 7, MissingWords::Error, &edit).unwrap();
        let delta = LmDelta::new(
            BackoffLm::from_fst(&gb, 7).unwrap(),
            Some(std::sync::Arc::new(BackoffLm::from_fst(&g, 7).unwrap())),
        )
        .unwrap();
        let trie = PhraseAutomaton::new(&phrases, d).unwrap();
        for k in 0..60 {
            // Half the sentences are built around a phrase, so prefixes occur often.
            let mut ws = random_words(&mut rng, 6);
            if k % 2 == 0 {
                let p = &phrases[rng.below(phrases.len() as u64) as usize];
                let at = rng.below(ws.len() as u64 + 1) as usize;
                let cut = 1 + rng.below(p.len() as u64) as usize;
                ws.splice(at..at, p[..cut].iter().copied());
            }
            let exact = delta.sentence_cost(&ws);
            let fast = trie.sentence_cost(&ws);
            assert!(
                (exact - fast).abs() < 1e-3,
                "case {case} phrases {phrases:?} d {d} words {ws:?}: G_boosted − G {exact}, trie {fast}"
            );
            if fast != 0.0 {
                nonzero += 1;
            }
        }
    }
    assert!(nonzero > 500, "only {nonzero} sentences were boosted");
}

#[test]
fn mismatched_grammars_are_refused() {
    let mut rng = Rng(3);
    let (_, g, gb) = grammars(&mut rng, 6, -1.0);
    let small = BackoffLm::from_fst(&g, 7).unwrap();
    let big = BackoffLm::from_fst(&gb, 7).unwrap();
    assert!(LmDelta::new(small, Some(std::sync::Arc::new(big))).is_err());
    // A back-off label that is not G's: its back-off arcs read as non-word arcs.
    assert!(BackoffLm::from_fst(&g, 99).is_err());
}

/// A word automaton's cost of a whole word sequence.
type SentenceCost = Box<dyn Fn(&[u32]) -> f32>;

#[test]
fn decoding_with_the_automaton_equals_brute_force_over_graph_plus_lm() {
    let mut rng = Rng(5);
    let cfg = DecoderConfig {
        beam: 1000.0,
        max_active: 1_000_000,
        lattice_beam: 2.0,
        acoustic_scale: 0.8,
        prune_interval: 2,
        lattice: true,
    };
    let (mut checked, mut changed) = (0, 0);
    for case in 0..150 {
        let (_, g, gb) = grammars(&mut rng, 6, -2.0);
        let small = BackoffLm::from_fst(&g, 7).unwrap();
        let big = BackoffLm::from_fst(&gb, 7).unwrap();
        // Alternate: the difference G_boosted − G, a whole LM composed on the fly, and the
        // phrase-prefix automaton.
        let trie = PhraseAutomaton::new(&[vec![1, 2, 3, 4], vec![5]], -2.0).unwrap();
        let auto = if case % 3 == 0 {
            LmDelta::new(big, Some(std::sync::Arc::new(small))).unwrap()
        } else {
            LmDelta::new(small, None).unwrap()
        };
        // Every other phrase-automaton case in completion form: a cost per completed phrase
        // (positive, as a negative open-vocabulary weight gives, and one negative).
        let trie = if case % 6 == 5 {
            PhraseAutomaton::completions(&[(vec![1, 2], 1.5), (vec![2], 0.5), (vec![3, 1], -1.0)])
                .unwrap()
        } else {
            trie
        };
        let (booster, lm_cost): (Booster, SentenceCost) = if case % 3 == 2 {
            let t = trie.clone();
            (
                Booster::Phrases(trie),
                Box::new(move |ws| t.sentence_cost(ws)),
            )
        } else {
            let a = auto.clone();
            (Booster::Lm(auto), Box::new(move |ws| a.sentence_cost(ws)))
        };
        let fst = random_graph(&mut rng, 3 + (case % 4) as u32, 6, 2);
        let rows = 2 + case % 5;
        let data = (0..rows * 3).map(|_| -4.0 * rng.unit()).collect();
        let scores = ScoreMatrix::new(rows, 3, data).unwrap();
        let truth = brute_force(&fst, &scores, cfg.acoustic_scale, &*lm_cost);
        let plain = brute_force(&fst, &scores, cfg.acoustic_scale, &|_| 0.0);
        if truth.is_empty() {
            continue;
        }
        let graph = DecodingGraph::from_fst(&fst, None).unwrap();
        let dec = Decoder::new(&graph, cfg.clone()).unwrap();
        let mut stream = Stream::new(format!("case{case}"), booster.clone());
        let res = match decode_utterance(&dec, &mut stream, &scores, 2, None) {
            Ok(r) => r,
            Err(DecodeError::NoSurvivors { .. }) => continue,
            Err(e) => panic!("case {case}: {e}"),
        };
        let seg = &res.segments[0];
        let (best, cost) = truth
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(w, c)| (w.clone(), *c))
            .unwrap();
        let alt = truth
            .iter()
            .filter(|(w, c)| **w != best && (**c - cost).abs() < 1e-4)
            .count();
        if alt == 0 {
            assert_eq!(seg.best.words, best, "case {case}");
        }
        assert!(
            (seg.best.cost() - cost).abs() < 1e-3,
            "case {case}: {} vs {cost}",
            seg.best.cost()
        );
        // The lattice holds every sequence within the lattice beam with its composed cost.
        let seqs = seg.lattice.as_ref().unwrap().word_sequences();
        for (ws, &c) in &truth {
            if c <= cost + cfg.lattice_beam - 1e-3 {
                let got = seqs.get(ws).copied();
                assert!(
                    got.is_some_and(|x| (x - c).abs() < 1e-3),
                    "case {case}: {ws:?} {c} -> {got:?}"
                );
            }
        }
        // Chunking does not change the answer.
        let mut s1 = Stream::new(format!("case{case}"), booster.clone());
        let r1 = decode_utterance(&dec, &mut s1, &scores, 1, None).unwrap();
        assert_eq!(r1.segments[0].best.words, seg.best.words, "case {case}");
        assert_eq!(r1.segments[0].best.cost(), seg.best.cost(), "case {case}");
        let plain_best = plain.iter().min_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
        if *plain_best != best {
            changed += 1;
        }
        checked += 1;
    }
    assert!(checked > 50, "only {checked} cases decoded");
    assert!(changed > 5, "the automaton changed only {changed} answers");
}

/// The completion form against counting: a sentence costs the sum, over every position, of the
/// costs of the listed phrases that end there.
#[test]
fn completions_cost_each_phrase_occurrence_once_at_its_end() {
    let mut rng = Rng(11);
    let mut nonzero = 0;
    for case in 0..200 {
        let phrases: Vec<(Vec<u32>, f32)> = (0..1 + rng.below(5))
            .map(|_| {
                let len = 1 + rng.below(3) as usize;
                let p = (0..len).map(|_| 1 + rng.below(4) as u32).collect();
                (p, (4.0 * rng.unit() - 1.0).round())
            })
            .collect();
        let auto = PhraseAutomaton::completions(&phrases).unwrap();
        for _ in 0..20 {
            let ws: Vec<u32> = (0..rng.below(9)).map(|_| 1 + rng.below(4) as u32).collect();
            let mut counted = 0.0f32;
            for end in 1..=ws.len() {
                for (p, c) in &phrases {
                    if ws[..end].ends_with(p) {
                        counted += c;
                    }
                }
            }
            let got = auto.sentence_cost(&ws);
            assert!(
                (got - counted).abs() < 1e-4,
                "case {case} phrases {phrases:?} words {ws:?}: {got} vs {counted}"
            );
            if got != 0.0 {
                nonzero += 1;
            }
        }
    }
    assert!(nonzero > 1000, "{nonzero}");
    assert!(PhraseAutomaton::completions(&[(vec![1], f32::NAN)]).is_err());
}

/// `fst` composed with a phrase automaton by hand: states (graph state, automaton state), each
/// word arc moving the automaton and adding its cost. Decoded without a booster, no two tokens
/// share a state: the search with the automaton must give the same best path and cost at any
/// beam (the tokens of one graph state expanded together must each be relaxed).
fn composed(fst: &StdFst, trie: &PhraseAutomaton) -> StdFst {
    use rustfst::prelude::*;
    let mut out = StdFst::new();
    let mut ids: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut queue = vec![(fst.start().unwrap(), 0u32)];
    ids.insert(queue[0], out.add_state());
    out.set_start(0).unwrap();
    while let Some((s, q)) = queue.pop() {
        let me = ids[&(s, q)];
        if let Some(f) = fst.final_weight(s).unwrap() {
            out.set_final(me, *f.value()).unwrap();
        }
        for tr in fst.get_trs(s).unwrap().iter() {
            let (q2, c) = match tr.olabel {
                0 => (q, 0.0),
                w => trie.word(q, w),
            };
            let key = (tr.nextstate, q2);
            let next = match ids.get(&key) {
                Some(&n) => n,
                None => {
                    let n = out.add_state();
                    ids.insert(key, n);
                    queue.push(key);
                    n
                }
            };
            let w = *tr.weight.value() + c;
            out.add_tr(me, Tr::new(tr.ilabel, tr.olabel, w, next))
                .unwrap();
        }
    }
    out
}

#[test]
fn the_automaton_at_narrow_beams_equals_the_composed_graph() {
    let mut rng = Rng(41);
    let mut compared = 0;
    for case in 0..200 {
        let fst = random_graph(&mut rng, 4 + (case % 5) as u32, 6, 2);
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(4))
            .map(|_| {
                (0..1 + rng.below(3))
                    .map(|_| 1 + rng.below(6) as u32)
                    .collect()
            })
            .collect();
        let trie = PhraseAutomaton::new(&phrases, -1.5).unwrap();
        let graph = DecodingGraph::from_fst(&fst, None).unwrap();
        let both = composed(&fst, &trie);
        let product = DecodingGraph::from_fst(&both, None).unwrap();
        let rows = 4 + case % 6;
        let data = (0..rows * 3).map(|_| -4.0 * rng.unit()).collect();
        let scores = ScoreMatrix::new(rows, 3, data).unwrap();
        for beam in [1.0, 2.5, 6.0] {
            let cfg = DecoderConfig {
                beam,
                lattice_beam: 1.0,
                ..DecoderConfig::default()
            };
            let decode = |g: &DecodingGraph, b: Booster| {
                let dec = Decoder::new(g, cfg.clone()).unwrap();
                let mut s = Stream::new(format!("case{case}"), b);
                decode_utterance(&dec, &mut s, &scores, 2, None)
                    .ok()
                    .map(|r| (r.segments[0].best.words.clone(), r.segments[0].best.cost()))
            };
            let (Some(a), Some(b)) = (
                decode(&graph, Booster::Phrases(trie.clone())),
                decode(&product, Booster::None),
            ) else {
                continue;
            };
            if !a.1.is_finite() || !b.1.is_finite() {
                // No final state reached: the best partial path, as words.
                assert_eq!(a.0, b.0, "case {case} beam {beam}");
                continue;
            }
            assert!(
                (a.1 - b.1).abs() < 1e-3,
                "case {case} beam {beam}: {a:?} vs {b:?}"
            );
            compared += 1;
        }
    }
    assert!(compared > 300, "only {compared} decodes compared");
}

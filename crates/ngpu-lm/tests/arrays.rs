//! The arrays answer exactly what the ARPA back-off rule gives (`ctx_core::arpa`), on random LMs
//! of orders 2–6, listed with all prefixes or pruned (prefixes missing, NeMo issue 15715), and on
//! Kneser-Ney LMs estimated here (word and BPE-token level).

mod common;

use common::random_lm;
use ctx_core::arpa::ArpaLm;
use ctx_data::rng::Rng;
use ngpu_lm::{NgpuError, NgramLm};

const LN_10: f32 = std::f32::consts::LN_10;

/// Walks random label sequences from `<s>` and checks every query against the ARPA rule.
fn check_against_arpa(lm: &ArpaLm, seed: u64, steps: usize) {
    let (arr, report, labels) = NgramLm::from_arpa_words(lm).unwrap();
    assert_eq!(arr.vocab_size(), labels.len());
    assert_eq!(report.arcs, arr.num_arcs());
    let ids: Vec<u32> = labels.iter().map(|l| lm.word_id(l).unwrap()).collect();
    let bos = lm.word_id("<s>").unwrap();
    let eos = lm.word_id("</s>").unwrap();
    let v = arr.vocab_size();
    let mut rng = Rng::new(seed);
    let (mut scores, mut next) = (vec![0f32; v], vec![0u32; v]);
    for walk in 0..4 {
        let mut hist = vec![bos];
        let mut state = arr.bos_state();
        for step in 0..steps {
            arr.advance_row(state, &mut scores, &mut next);
            for (l, &id) in ids.iter().enumerate() {
                let want = lm.log10_prob(&hist, id).unwrap() * LN_10;
                assert!(
                    (scores[l] - want).abs() <= 1e-4 * want.abs().max(1.0),
                    "walk {walk} step {step} label {} after {:?}: arrays {} ARPA {want}",
                    labels[l],
                    hist.iter()
                        .map(|&i| lm.word(i).unwrap())
                        .collect::<Vec<_>>(),
                    scores[l]
                );
                assert_eq!(arr.score(state, l as u32), (scores[l], next[l]));
            }
            let fw = arr.final_weight(state);
            let want = lm.log10_prob(&hist, eos).unwrap() * LN_10;
            assert!(
                (fw - want).abs() <= 1e-4 * want.abs().max(1.0),
                "final {fw} vs {want}"
            );
            let l = rng.below(v);
            hist.push(ids[l]);
            state = next[l];
        }
    }
}

#[test]
fn arrays_equal_arpa_back_off_on_random_lms_with_all_prefixes() {
    for order in 2..=6 {
        let lm = random_lm(order as u64, 12, order, false);
        check_against_arpa(&lm, 100 + order as u64, 12);
    }
}

#[test]
fn arrays_equal_arpa_back_off_on_pruned_lms_that_lack_prefixes() {
    for order in 2..=6 {
        let lm = random_lm(1000 + order as u64, 6, order, true);
        let (_, report, _) = NgramLm::from_arpa_words(&lm).unwrap();
        if order > 2 {
            assert!(
                report.added_prefixes > 0,
                "order {order}: the random pruned LM should lack prefixes"
            );
        }
        check_against_arpa(&lm, 200 + order as u64, 12);
    }
}

#[test]
fn arrays_equal_arpa_on_kneser_ney_word_and_token_lms() {
    let text = "the cat sat on the mat . the dog sat on the log . a cat and a dog met on a mat";
    let sentences: Vec<Vec<&str>> = text
        .split(" . ")
        .map(|s| s.split_whitespace().collect())
        .collect();
    for order in [2, 3, 5] {
        for prune in [vec![], vec![0, 1, 1, 1]] {
            let opts = ctx_data::kneser_ney::KnOptions {
                order,
                prune: prune.clone(),
                ..Default::default()
            };
            let (lm, _) = ctx_data::kneser_ney::estimate(&sentences, &opts).unwrap();
            check_against_arpa(&lm, order as u64, 10);
        }
    }
    // BPE pieces as tokens (a token-level LM, NGPU-LM's use).
    let bpe = ctx_data::bpe::Bpe::train(&[text], 30).unwrap();
    let pieces: Vec<Vec<String>> = sentences
        .iter()
        .map(|s| s.iter().flat_map(|w| bpe.encode_word(w)).collect())
        .collect();
    let opts = ctx_data::kneser_ney::KnOptions {
        order: 6,
        ..Default::default()
    };
    let (lm, _) = ctx_data::kneser_ney::estimate(&pieces, &opts).unwrap();
    check_against_arpa(&lm, 6, 16);
}

#[test]
fn batched_and_sparse_queries_equal_single_queries() {
    let lm = random_lm(77, 20, 4, true);
    let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
    let v = arr.vocab_size();
    let states: Vec<u32> = (0..arr.num_states() as u32).step_by(3).collect();
    let b = states.len();
    let (mut scores, mut next) = (vec![0f32; b * v], vec![0u32; b * v]);
    arr.advance(&states, &mut scores, &mut next).unwrap();
    let mut rng = Rng::new(5);
    let k = 7;
    let labels: Vec<u32> = (0..b * k).map(|_| rng.below(v) as u32).collect();
    let (mut ss, mut sn) = (vec![0f32; b * k], vec![0u32; b * k]);
    arr.advance_sparse(&states, &labels, &mut ss, &mut sn)
        .unwrap();
    for (r, &s) in states.iter().enumerate() {
        for l in 0..v {
            assert_eq!((scores[r * v + l], next[r * v + l]), arr.score(s, l as u32));
        }
        for j in 0..k {
            let l = labels[r * k + j] as usize;
            assert_eq!(ss[r * k + j], scores[r * v + l]);
            assert_eq!(sn[r * k + j], next[r * v + l]);
        }
    }
    let mut fw = vec![0f32; b];
    arr.final_weights(&states, &mut fw).unwrap();
    assert_eq!(fw[1], arr.final_weight(states[1]));
}

#[test]
fn a_token_vocabulary_the_lm_does_not_cover_is_named() {
    let lm = random_lm(3, 5, 2, false);
    let labels: Vec<String> = ["w0", "w1", "w2"].iter().map(|s| s.to_string()).collect();
    let err = NgramLm::from_arpa(&lm, &labels).unwrap_err();
    assert!(
        matches!(err, NgpuError::VocabMismatch { count: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("\"w3\""), "{err}");
    // Extra model labels are fine: they score as <unk> at the unigram level.
    let mut labels = NgramLm::labels_of(&lm);
    labels.push("zz".into());
    let (arr, report) = NgramLm::from_arpa(&lm, &labels).unwrap();
    assert_eq!(report.missing_labels, 1);
    let unk = lm.log10_prob(&[], lm.word_id("<unk>").unwrap()).unwrap() * LN_10;
    let (w, next) = arr.score(arr.unigram_state(), labels.len() as u32 - 1);
    assert!((w - unk).abs() < 1e-5);
    assert_eq!(next, 0);
}

#[test]
fn bad_queries_are_errors_not_panics() {
    let lm = random_lm(4, 5, 3, false);
    let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
    let v = arr.vocab_size();
    let big = arr.num_states() as u32;
    let (mut s, mut n) = (vec![0f32; v], vec![0u32; v]);
    assert!(arr.advance(&[big], &mut s, &mut n).is_err());
    assert!(arr.advance(&[0, 0], &mut s, &mut n).is_err());
    let (mut s1, mut n1) = (vec![0f32; 1], vec![0u32; 1]);
    assert!(arr
        .advance_sparse(&[0], &[v as u32], &mut s1, &mut n1)
        .is_err());
}

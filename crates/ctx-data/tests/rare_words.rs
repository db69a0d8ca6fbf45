//! Frequency-aware errors: every simulator misrecognises a word absent from its training text
//! more often than a frequent one at the same settings (`rare_confusion`), and nothing changes
//! with `rare_confusion` 0. The simulators see only words: no entity tag or biasing list can
//! reach them (their inputs are the utterance id, words and duration).

use ctx_data::acoustic::{CtcSim, HybridSim};
use ctx_data::bpe::Bpe;
use ctx_data::e2e::{AedSim, TransducerSim};
use ctx_data::pronounce::Pronouncer;
use ctx_data::registry::{AcousticSpec, CtcAcousticSpec};
use std::path::Path;

/// The training text: "alpha" 500 times, "zulu" never; near words of both exist (the
/// end-to-end models' confusions pick a known word near in spelling).
fn training_text() -> Vec<String> {
    let mut t = vec!["alpha bravo charlie".to_string(); 500];
    t.extend(vec!["alphas zulus zulo bravo".to_string(); 5]);
    t
}

fn e2e_knobs(rare: f64) -> CtcAcousticSpec {
    CtcAcousticSpec {
        noise: 0.3,
        noise_spread: 0.0,
        confusion: 0.0,
        margin: 6.0,
        acoustic_scale: 1.0,
        confusion_gap: 1.5,
        rare_confusion: rare,
        rare_count: 1.0,
        low_resource_confusion: None,
        in_domain_confusion: None,
        internal_lm: 0.0,
        in_domain: false,
        seed: 11,
    }
}

fn w(s: &str) -> Vec<String> {
    vec![s.to_string()]
}

/// Out of `n` utterances of the one word `word`, how many the model heard as something else.
fn e2e_misheard(heard: impl Fn(&str, &[String]) -> Vec<u32>, bpe: &Bpe, word: &str) -> usize {
    let truth: Vec<u32> = bpe
        .encode_word(word)
        .iter()
        .map(|p| bpe.id(p).unwrap())
        .collect();
    (0..300)
        .filter(|i| heard(&format!("u{i}"), &w(word)) != truth)
        .count()
}

#[test]
fn end_to_end_models_mishear_unseen_words_more_than_frequent_ones() {
    let text = training_text();
    let bpe = Bpe::train(&text, 40).unwrap();
    let vocab = || text.iter().flat_map(|l| l.split_whitespace());
    for rare in [0.0, 0.6] {
        let ctc = CtcSim::new(e2e_knobs(rare), bpe.clone()).with_vocabulary(vocab());
        let rnnt = TransducerSim::new(e2e_knobs(rare), bpe.clone(), false).with_vocabulary(vocab());
        let tdt = TransducerSim::new(e2e_knobs(rare), bpe.clone(), true).with_vocabulary(vocab());
        let aed = AedSim::new(e2e_knobs(rare), bpe.clone()).with_vocabulary(vocab());
        // CTC: the heard pieces are its spikes (blanks between, a piece on one or two frames).
        let ctc_heard = |u: &str, ws: &[String]| -> Vec<u32> {
            let (_, aligned) = ctc.simulate(u, ws, 2.0).unwrap();
            let mut v: Vec<u32> = Vec::new();
            let mut prev = 0;
            for &a in &aligned {
                if a != 0 && a != prev {
                    v.push(a);
                }
                prev = a;
            }
            v
        };
        let counts: Vec<(usize, usize)> = vec![
            (
                e2e_misheard(ctc_heard, &bpe, "zulu"),
                e2e_misheard(ctc_heard, &bpe, "alpha"),
            ),
            (
                e2e_misheard(
                    |u, ws| rnnt.simulate(u, ws, 2.0).unwrap().heard(),
                    &bpe,
                    "zulu",
                ),
                e2e_misheard(
                    |u, ws| rnnt.simulate(u, ws, 2.0).unwrap().heard(),
                    &bpe,
                    "alpha",
                ),
            ),
            (
                e2e_misheard(
                    |u, ws| tdt.simulate(u, ws, 2.0).unwrap().heard(),
                    &bpe,
                    "zulu",
                ),
                e2e_misheard(
                    |u, ws| tdt.simulate(u, ws, 2.0).unwrap().heard(),
                    &bpe,
                    "alpha",
                ),
            ),
            (
                e2e_misheard(|u, ws| aed.simulate(u, ws).unwrap().heard(), &bpe, "zulu"),
                e2e_misheard(|u, ws| aed.simulate(u, ws).unwrap().heard(), &bpe, "alpha"),
            ),
        ];
        for (k, (zulu, alpha)) in counts.into_iter().enumerate() {
            let model = ["ctc", "rnnt", "tdt", "aed"][k];
            if rare == 0.0 {
                assert_eq!(
                    (zulu, alpha),
                    (0, 0),
                    "{model}: no confusions at all without rare_confusion"
                );
            } else {
                // Expected: zulu 0.6 · 300 = 180, alpha 0.6/501 · 300 < 1.
                assert!(
                    (140..=220).contains(&zulu),
                    "{model}: zulu misheard {zulu} of 300"
                );
                assert!(alpha <= 3, "{model}: alpha misheard {alpha} of 300");
            }
        }
    }
}

#[test]
fn the_hybrid_model_confuses_the_phones_of_unseen_words_more() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let pron = Pronouncer::from_cmudict(&root.join("cmudict/cmudict.dict.gz")).unwrap();
    let text = training_text();
    let knobs = |rare: f64| AcousticSpec {
        noise: 0.3,
        noise_spread: 0.0,
        noise_corr: 0.0,
        confusion: 0.0,
        rare_confusion: rare,
        rare_count: 1.0,
        seed: 5,
    };
    // Frames whose best pdf is not the true one, over 100 utterances of one word.
    let wrong = |sim: &HybridSim, word: &str| -> f64 {
        let (mut bad, mut all) = (0, 0);
        for i in 0..100 {
            let (m, truth) = sim
                .simulate(&format!("u{i}"), &w(word), 1.5, &pron)
                .unwrap();
            for (t, &tr) in truth.iter().enumerate() {
                let row = m.row(t);
                let best = (0..row.len())
                    .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                    .unwrap();
                bad += (best as u32 != tr) as usize;
                all += 1;
            }
        }
        bad as f64 / all as f64
    };
    let plain = HybridSim::new(knobs(0.0), 3)
        .with_training_text(text.iter().flat_map(|l| l.split_whitespace()));
    let rare = HybridSim::new(knobs(0.6), 3)
        .with_training_text(text.iter().flat_map(|l| l.split_whitespace()));
    let (z0, a0) = (wrong(&plain, "zulu"), wrong(&plain, "alpha"));
    let (z, a) = (wrong(&rare, "zulu"), wrong(&rare, "alpha"));
    assert!(z0 < 0.05 && a0 < 0.05, "low noise, no confusion: {z0} {a0}");
    assert!(z > 0.25, "zulu's phones confused: {z} of frames wrong");
    assert!(a < 0.05, "alpha (500 in training) barely: {a}");
    // The same scores as before for a word when rare_confusion is 0 (one draw per phone either way).
    let (m1, _) = plain.simulate("x", &w("alpha"), 1.5, &pron).unwrap();
    let (m2, _) = HybridSim::new(knobs(0.0), 3)
        .simulate("x", &w("alpha"), 1.5, &pron)
        .unwrap();
    assert_eq!(m1.data(), m2.data());
    // rare_confusion without a training text is an error, not every word made rare.
    let e = HybridSim::new(knobs(0.6), 3)
        .simulate("x", &w("alpha"), 1.5, &pron)
        .unwrap_err();
    assert!(e.to_string().contains("no training text"), "{e}");
}

/// A confused word keeps its reference pieces as close competitors (`confusion_gap` below
/// the heard ones), so context can bring it back; with a huge gap they fall to the floor.
#[test]
fn a_confused_word_keeps_its_reference_pieces_close() {
    let text = training_text();
    let bpe = Bpe::train(&text, 40).unwrap();
    let vocab = || text.iter().flat_map(|l| l.split_whitespace());
    let zulu: Vec<usize> = bpe
        .encode_word("zulu")
        .iter()
        .map(|p| bpe.id(p).unwrap() as usize)
        .collect();
    // Per utterance: the best log-prob each reference piece of "zulu" reaches on the frames
    // where the model heard something else, minimised over pieces and utterances.
    let worst_reference = |gap: f64| -> (usize, f32) {
        let sim = CtcSim::new(
            CtcAcousticSpec {
                confusion_gap: gap,
                ..e2e_knobs(1.0)
            },
            bpe.clone(),
        )
        .with_vocabulary(vocab());
        let (mut confused, mut worst) = (0, f32::INFINITY);
        for i in 0..50 {
            let (m, aligned) = sim.simulate(&format!("u{i}"), &w("zulu"), 2.0).unwrap();
            let spikes: Vec<u32> = aligned.iter().copied().filter(|&a| a != 0).collect();
            if spikes.iter().all(|&a| zulu.contains(&(a as usize))) {
                continue;
            }
            confused += 1;
            for &z in &zulu {
                let best = (0..m.rows())
                    .map(|t| m.row(t)[z])
                    .fold(f32::NEG_INFINITY, f32::max);
                worst = worst.min(best);
            }
        }
        (confused, worst)
    };
    let (n, close) = worst_reference(1.5);
    assert!(n >= 45, "rare_confusion 1: zulu confused in {n} of 50");
    // log-softmax: the heard piece near 0, the reference 1.5 below it, noise σ 0.3.
    assert!(close > -3.5, "reference pieces within reach: worst {close}");
    let (_, far) = worst_reference(40.0);
    // At the floor of the row (logit 0 against ln V + margin).
    assert!(far < -7.0, "a 40-nat gap buries them: {far}");
}

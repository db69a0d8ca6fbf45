//! Random ARPA LMs for the tests, and the simulated models' setup of the fusion tests.
#![allow(dead_code)]

use ctx_core::arpa::ArpaLm;
use ctx_data::bpe::Bpe;
use ctx_data::registry::CtcAcousticSpec;
use ctx_data::rng::Rng;
use ngpu_lm::NgramLm;

/// A random LM over `v` words: n-grams of every order up to `order`, each extending a listed
/// (n−1)-gram (`pruned` = false) or drawn freely so that prefixes are often missing.
pub fn random_lm(seed: u64, v: usize, order: usize, pruned: bool) -> ArpaLm {
    let mut rng = Rng::new(seed);
    let mut words: Vec<String> = vec!["<s>".into(), "</s>".into(), "<unk>".into()];
    words.extend((0..v).map(|i| format!("w{i}")));
    let w = |rng: &mut Rng, min: f64| -> f32 { (min * rng.uniform()) as f32 };
    let mut orders: Vec<Vec<(Vec<String>, f32, f32)>> = Vec::new();
    orders.push(
        words
            .iter()
            .map(|x| {
                let p = if x == "<s>" { -99.0 } else { w(&mut rng, -3.0) };
                let bo = if x == "</s>" { 0.0 } else { w(&mut rng, -1.0) };
                (vec![x.clone()], p, bo)
            })
            .collect(),
    );
    let mut listed: std::collections::HashSet<Vec<String>> =
        orders[0].iter().map(|e| e.0.clone()).collect();
    for n in 2..=order {
        let mut entries = Vec::new();
        for _ in 0..(6 * v) {
            let ng: Vec<String> = if pruned {
                (0..n)
                    .map(|i| {
                        if i == 0 && rng.chance(0.3) {
                            "<s>".to_string()
                        } else {
                            words[3 + rng.below(v)].clone()
                        }
                    })
                    .collect()
            } else {
                let prev: Vec<&(Vec<String>, f32, f32)> = orders[n - 2]
                    .iter()
                    .filter(|e| e.0.last().unwrap() != "</s>")
                    .collect();
                let base = &prev[rng.below(prev.len())].0;
                let mut g = base.clone();
                g.push(words[3 + rng.below(v)].clone());
                g
            };
            let mut ng = ng;
            if rng.chance(0.15) {
                *ng.last_mut().unwrap() = "</s>".into();
            }
            if ng[1..].iter().any(|x| x == "<s>") || listed.contains(&ng) {
                continue;
            }
            listed.insert(ng.clone());
            let bo = if n < order && ng.last().unwrap() != "</s>" {
                w(&mut rng, -1.0)
            } else {
                0.0
            };
            entries.push((ng, w(&mut rng, -2.5), bo));
        }
        orders.push(entries);
    }
    ArpaLm::from_entries(orders).unwrap()
}

/// Simulator knobs of the fusion tests: noisy enough that the LM changes the greedy output.
pub fn knobs() -> CtcAcousticSpec {
    CtcAcousticSpec {
        noise: 1.5,
        noise_spread: 0.3,
        confusion: 0.2,
        margin: 6.0,
        acoustic_scale: 1.0,
        confusion_gap: 1.5,
        rare_confusion: 0.0,
        rare_count: 1.0,
        low_resource_confusion: None,
        in_domain_confusion: None,
        internal_lm: 0.0,
        in_domain: false,
        seed: 3,
    }
}

/// Sentences over a small vocabulary, a BPE model on them and a token LM of its pieces.
pub fn sim_setup() -> (Vec<Vec<String>>, Bpe, NgramLm) {
    let lm_words = random_lm(9, 40, 2, false);
    let vocab: Vec<String> = NgramLm::labels_of(&lm_words)
        .into_iter()
        .filter(|w| w != "<unk>")
        .map(|w| format!("{w}x{}", w.len()))
        .collect();
    let mut rng = ctx_data::rng::Rng::new(4);
    let sents: Vec<Vec<String>> = (0..60)
        .map(|_| {
            (0..3 + rng.below(8))
                .map(|_| vocab[rng.below(vocab.len())].clone())
                .collect()
        })
        .collect();
    let lines: Vec<String> = sents.iter().map(|s| s.join(" ")).collect();
    let bpe = Bpe::train(&lines, 60).unwrap();
    let pieces = ctx_data::bpe::encode_sentences(&bpe, &lines);
    let (arpa, _) = ctx_data::kneser_ney::estimate(
        &pieces,
        &ctx_data::kneser_ney::KnOptions {
            order: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let (lm, _) = NgramLm::from_arpa(&arpa, bpe.pieces()).unwrap();
    (sents, bpe, lm)
}

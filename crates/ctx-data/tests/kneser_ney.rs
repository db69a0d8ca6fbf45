//! The Kneser-Ney estimator against a hand-worked corpus, the discount formula, and the
//! sum-to-one property of every context (with and without pruning).

use ctx_core::arpa::ArpaLm;
use ctx_data::kneser_ney::{discounts_from_counts, estimate, Discounts, KnOptions};

fn sents(text: &[&str]) -> Vec<Vec<String>> {
    text.iter()
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn p(lm: &ArpaLm, hist: &[&str], w: &str) -> f64 {
    let h: Vec<u32> = hist.iter().map(|x| lm.word_id(x).unwrap()).collect();
    10f64.powf(lm.log10_prob(&h, lm.word_id(w).unwrap()).unwrap() as f64)
}

#[test]
fn hand_worked_bigram_model() {
    // Corpus "a b" and "a"; fixed discounts (0.5, 1.0, 1.5).
    // Unigram continuation counts: a 1 ({<s>}), b 1 ({a}), </s> 2 ({a, b}), <unk> 0; total 4.
    // gamma() = (0.5·2 + 1.0·1)/4 = 0.5, uniform 1/4 over {a, b, </s>, <unk>}.
    //   p(a) = p(b) = 0.5/4 + 0.5/4 = 0.25, p(</s>) = 1/4 + 0.125 = 0.375, p(<unk>) = 0.125.
    // Bigrams (raw): <s> a 2 | a b 1, a </s> 1 | b </s> 1.
    //   p(a|<s>) = (2−1)/2 + 0.5·0.25 = 0.625; p(b|a) = 0.5/2 + 0.5·0.25 = 0.375;
    //   p(</s>|a) = 0.25 + 0.5·0.375 = 0.4375; p(</s>|b) = 0.5 + 0.5·0.375 = 0.6875;
    //   unseen: p(a|a) = 0.5·0.25 = 0.125.
    let opts = KnOptions {
        order: 2,
        discounts: Discounts::Fixed([0.5, 1.0, 1.5]),
        prune: vec![],
    };
    let (lm, rep) = estimate(&sents(&["a b", "a"]), &opts).unwrap();
    assert_eq!(rep.counts, vec![5, 4]);
    let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
    assert!(close(p(&lm, &[], "a"), 0.25));
    assert!(close(p(&lm, &[], "</s>"), 0.375));
    assert!(close(p(&lm, &[], "<unk>"), 0.125));
    assert!(close(p(&lm, &["<s>"], "a"), 0.625));
    assert!(close(p(&lm, &["a"], "b"), 0.375));
    assert!(close(p(&lm, &["a"], "</s>"), 0.4375));
    assert!(close(p(&lm, &["b"], "</s>"), 0.6875));
    assert!(close(p(&lm, &["a"], "a"), 0.125));
    assert_eq!(
        lm.entry(&[lm.word_id("<s>").unwrap()]).unwrap().log10_prob,
        -99.0
    );
}

#[test]
fn discount_formula() {
    // t = (10, 5, 3, 2): Y = 0.5, D1 = 0.5, D2 = 2 − 1.5·0.6 = 1.1, D3+ = 3 − 2·2/3.
    let d = discounts_from_counts([10, 5, 3, 2]).unwrap();
    assert!(
        (d[0] - 0.5).abs() < 1e-12
            && (d[1] - 1.1).abs() < 1e-12
            && (d[2] - (3.0 - 4.0 / 3.0)).abs() < 1e-12
    );
    assert_eq!(discounts_from_counts([3, 0, 1, 1]), None);
}

/// A deterministic pseudo-random corpus with Zipf-like word choice.
fn corpus(n: usize, seed: u64) -> Vec<Vec<String>> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|_| {
            let len = 1 + (next() % 8) as usize;
            (0..len)
                .map(|_| {
                    let r = (next() % 1000) as f64 / 1000.0;
                    format!("w{}", (r * r * 40.0) as u32)
                })
                .collect()
        })
        .collect()
}

fn assert_sums_to_one(lm: &ArpaLm) {
    let vocab: Vec<u32> = (0..lm.vocab().len() as u32)
        .filter(|&i| lm.word(i) != Some("<s>"))
        .collect();
    let mut contexts: Vec<Vec<u32>> = vec![vec![]];
    for n in 1..lm.order() {
        contexts.extend(
            lm.entries(n)
                .iter()
                .map(|e| e.words.clone())
                .filter(|h| h.last() != lm.word_id("</s>").as_ref()),
        );
    }
    for h in contexts {
        let total: f64 = vocab
            .iter()
            .map(|&w| 10f64.powf(lm.log10_prob(&h, w).unwrap() as f64))
            .sum();
        assert!(
            (total - 1.0).abs() < 2e-4,
            "context {:?} sums to {total}",
            h.iter().map(|&i| lm.word(i).unwrap()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_context_sums_to_one() {
    let text = corpus(3000, 7);
    for order in [1, 2, 3, 4] {
        let (lm, rep) = estimate(
            &text,
            &KnOptions {
                order,
                ..Default::default()
            },
        )
        .unwrap();
        // 40 frequent words leave no unigram seen once (raw or continuation count), so the
        // unigram order falls back; every higher order has enough counts-of-counts.
        assert_eq!(rep.fallback_orders, vec![1], "order {order}: {rep:?}");
        assert_sums_to_one(&lm);
    }
}

#[test]
fn pruned_models_still_sum_to_one_and_are_smaller() {
    let text = corpus(3000, 11);
    let (full, _) = estimate(&text, &KnOptions::default()).unwrap();
    let (lm, rep) = estimate(
        &text,
        &KnOptions {
            prune: vec![0, 1],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(rep.pruned[2] > 0);
    assert_eq!(lm.count(3) + rep.pruned[2], full.count(3));
    assert_sums_to_one(&lm);
}

#[test]
fn written_arpa_reads_back_and_bad_input_is_refused() {
    let (lm, _) = estimate(&corpus(200, 3), &KnOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lm.arpa");
    lm.write(&path).unwrap();
    let back = ArpaLm::read(&path).unwrap();
    for n in 1..=3 {
        assert_eq!(back.entries(n), lm.entries(n));
    }
    let e = estimate(&sents(&["a </s> b"]), &KnOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("sentence 0") && e.contains("</s>"), "{e}");
    assert!(estimate::<String>(&[], &KnOptions::default()).is_err());
    assert!(estimate(
        &sents(&["a"]),
        &KnOptions {
            order: 0,
            ..Default::default()
        }
    )
    .is_err());
}

#[test]
fn token_level_lms_over_bpe_pieces_up_to_order_ten_sum_to_one() {
    use ctx_data::bpe::{encode_sentences, Bpe};
    let text: Vec<String> = corpus(600, 11).iter().map(|s| s.join(" ")).collect();
    let bpe = Bpe::train(&text, 30).unwrap();
    let pieces = encode_sentences(&bpe, &text);
    assert!(pieces.iter().all(|s| s.iter().all(|p| bpe.id(p).is_some())));
    for order in [6, 10] {
        let (lm, _) = estimate(
            &pieces,
            &KnOptions {
                order,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(lm.order(), order);
        assert!(lm.count(order) > 0, "order {order} has {order}-grams");
        assert_sums_to_one(&lm);
    }
}

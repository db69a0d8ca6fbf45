//! The Aho-Corasick boosting tree as NGPU-LM arrays: icefall's golden vectors (strict and
//! non-strict) reproduced through the arrays' back-off queries, the arrays equal to a direct
//! trie walk (icefall's `forward_one_step` rules, written out here independently) on random
//! phrase sets, and no sequence earning more than the phrases it completes.

use ctx_data::rng::Rng;
use ngpu_lm::boost::{boosting_tree, BoostOptions, Matching, Phrase};
use ngpu_lm::NgramLm;
use std::collections::HashMap;

fn letters(s: &str) -> Vec<u32> {
    s.bytes().map(|b| (b - b'A') as u32).collect()
}

/// Total bonus of a label sequence from the root, final weight included.
fn total(lm: &NgramLm, seq: &[u32]) -> f32 {
    let mut s = lm.bos_state();
    let mut t = 0.0;
    for &l in seq {
        let (w, n) = lm.score(s, l);
        t += w;
        s = n;
    }
    t + lm.final_weight(s)
}

fn icefall_tree(matching: Matching) -> NgramLm {
    let phrases: Vec<Phrase> = [
        "S", "HE", "SHE", "SHELL", "HIS", "HERS", "HELLO", "THIS", "THEM",
    ]
    .iter()
    .map(|p| Phrase::keyword(letters(p), None))
    .collect();
    let opts = BoostOptions {
        unk_score: 0.0,
        default_score: 1.0,
        matching,
        depth_scaling: None,
    };
    boosting_tree(&phrases, 26, &opts).unwrap().0
}

#[test]
fn icefall_golden_vectors_strict_and_non_strict() {
    let queries = [
        ("HEHERSHE", 14.0, 7.0),
        ("HERSHE", 12.0, 5.0),
        ("HISHE", 9.0, 5.0),
        ("SHED", 6.0, 3.0),
        ("SHELF", 6.0, 3.0),
        ("HELL", 2.0, 2.0),
        ("HELLO", 7.0, 2.0),
        ("DHRHISQ", 4.0, 3.0),
        ("THEN", 2.0, 2.0),
    ];
    let (strict, loose) = (
        icefall_tree(Matching::Strict),
        icefall_tree(Matching::NonStrict),
    );
    for (q, s, n) in queries {
        assert_eq!(total(&strict, &letters(q)), s, "strict {q}");
        assert_eq!(total(&loose, &letters(q)), n, "non-strict {q}");
    }
    // The batched full-vocabulary query gives the same steps.
    let v = strict.vocab_size();
    let (mut sc, mut nx) = (vec![0f32; v], vec![0u32; v]);
    strict
        .advance(&[strict.bos_state()], &mut sc, &mut nx)
        .unwrap();
    assert_eq!(sc[letters("H")[0] as usize], 1.0);
    assert_eq!(
        sc[letters("S")[0] as usize],
        2.0,
        "S: token 1 + the phrase S"
    );
    assert_eq!(sc[letters("Q")[0] as usize], 0.0);
}

/// icefall's rules on a plain trie, independently of the arrays.
struct Walker {
    next: Vec<HashMap<u32, usize>>,
    token: Vec<f32>,
    node: Vec<f32>,
    end: Vec<bool>,
    fail: Vec<usize>,
    out: Vec<Option<usize>>,
    out_score: Vec<f32>,
}

impl Walker {
    fn new(phrases: &[(Vec<u32>, f32)]) -> Self {
        let mut w = Walker {
            next: vec![HashMap::new()],
            token: vec![0.0],
            node: vec![0.0],
            end: vec![false],
            fail: vec![0],
            out: vec![None],
            out_score: vec![0.0],
        };
        for (p, sc) in phrases {
            let mut n = 0;
            for (i, &l) in p.iter().enumerate() {
                let c = match w.next[n].get(&l) {
                    Some(&c) => {
                        w.token[c] = w.token[c].max(*sc);
                        c
                    }
                    None => {
                        w.next.push(HashMap::new());
                        w.token.push(*sc);
                        w.node.push(0.0);
                        w.end.push(false);
                        w.fail.push(0);
                        w.out.push(None);
                        w.out_score.push(0.0);
                        let c = w.next.len() - 1;
                        w.next[n].insert(l, c);
                        c
                    }
                };
                if i + 1 == p.len() {
                    w.end[c] = true;
                }
                n = c;
            }
        }
        let mut queue = std::collections::VecDeque::from([0usize]);
        while let Some(n) = queue.pop_front() {
            let mut kids: Vec<(u32, usize)> = w.next[n].iter().map(|(&l, &c)| (l, c)).collect();
            kids.sort();
            for (l, c) in kids {
                w.node[c] = w.node[n] + w.token[c];
                if n != 0 {
                    let mut f = w.fail[n];
                    w.fail[c] = loop {
                        if let Some(&t) = w.next[f].get(&l) {
                            break t;
                        }
                        if f == 0 {
                            break 0;
                        }
                        f = w.fail[f];
                    };
                }
                let mut o = w.fail[c];
                w.out[c] = loop {
                    if o == 0 {
                        break None;
                    }
                    if w.end[o] {
                        break Some(o);
                    }
                    o = w.fail[o];
                };
                w.out_score[c] = if w.end[c] { w.node[c] } else { 0.0 }
                    + w.out[c].map_or(0.0, |o| w.out_score[o]);
                queue.push_back(c);
            }
        }
        w
    }

    /// NeMo's GPU tree: token scores only; back-off from an end node costs nothing.
    fn step_nemo(&self, s: usize, l: u32) -> (f32, usize) {
        let (mut s, mut acc) = (s, 0.0);
        loop {
            if let Some(&c) = self.next[s].get(&l) {
                return (acc + self.token[c], c);
            }
            if s == 0 {
                return (acc, 0);
            }
            let f = self.fail[s];
            acc += if self.end[s] {
                0.0
            } else {
                self.node[f] - self.node[s]
            };
            s = f;
        }
    }

    /// NeMo's final weight: the back-off weights down to the root.
    fn final_nemo(&self, s: usize) -> f32 {
        let (mut s, mut acc) = (s, 0.0);
        while s != 0 {
            let f = self.fail[s];
            if !self.end[s] {
                acc += self.node[f] - self.node[s];
            }
            s = f;
        }
        acc
    }

    fn step(&self, s: usize, l: u32, m: Matching) -> (f32, usize) {
        if m == Matching::Nemo {
            return self.step_nemo(s, l);
        }
        let strict = m == Matching::Strict;
        let (node, score) = match self.next[s].get(&l) {
            Some(&c) => (c, self.token[c]),
            None => {
                let mut f = self.fail[s];
                let node = loop {
                    if let Some(&c) = self.next[f].get(&l) {
                        break c;
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = self.fail[f];
                };
                (node, self.node[node] - self.node[s])
            }
        };
        if !strict && self.out_score[node] != 0.0 {
            let kept = if self.end[node] {
                self.node[node]
            } else {
                self.out[node].map_or(self.node[node], |o| self.node[o])
            };
            return (score + kept - self.node[node], 0);
        }
        (score + self.out_score[node], node)
    }
}

#[test]
fn arrays_equal_a_direct_trie_walk_and_never_pay_more_than_completed_phrases() {
    let mut rng = Rng::new(17);
    for case in 0..60 {
        let v = 3 + rng.below(4);
        let phrases: Vec<(Vec<u32>, f32)> = (0..1 + rng.below(8))
            .map(|_| {
                let p: Vec<u32> = (0..1 + rng.below(4)).map(|_| rng.below(v) as u32).collect();
                (p, [1.0f32, 0.5, 2.0][rng.below(3)])
            })
            .collect();
        // Duplicates keep the larger score, as the arrays do.
        let mut best: HashMap<Vec<u32>, f32> = HashMap::new();
        for (p, s) in &phrases {
            let e = best.entry(p.clone()).or_insert(*s);
            *e = e.max(*s);
        }
        let mut uniq: Vec<(Vec<u32>, f32)> = best.into_iter().collect();
        uniq.sort_by(|a, b| a.0.cmp(&b.0));
        let walker = Walker::new(&uniq);
        let input: Vec<Phrase> = phrases
            .iter()
            .map(|(p, s)| Phrase::keyword(p.clone(), Some(*s)))
            .collect();
        for strict in [Matching::Strict, Matching::NonStrict, Matching::Nemo] {
            let opts = BoostOptions {
                unk_score: 0.0,
                default_score: 1.0,
                matching: strict,
                depth_scaling: None,
            };
            let (lm, rep) = boosting_tree(&input, v, &opts).unwrap();
            assert_eq!(rep.phrases, uniq.len());
            for _ in 0..20 {
                let seq: Vec<u32> = (0..rng.below(12)).map(|_| rng.below(v) as u32).collect();
                let (mut a, mut b) = (lm.bos_state(), 0usize);
                let (mut ta, mut tb) = (0.0f32, 0.0f32);
                for &l in &seq {
                    let (wa, na) = lm.score(a, l);
                    let (wb, nb) = walker.step(b, l, strict);
                    assert!(
                        (wa - wb).abs() < 1e-5,
                        "case {case} {strict:?} {seq:?}: {wa} vs {wb}"
                    );
                    ta += wa;
                    tb += wb;
                    a = na;
                    b = nb;
                }
                ta += lm.final_weight(a);
                tb += if strict == Matching::Nemo {
                    walker.final_nemo(b)
                } else {
                    -walker.node[b]
                };
                assert!((ta - tb).abs() < 1e-4, "case {case}: total {ta} vs {tb}");
                // Take-back: never more than every occurrence of every phrase, fully paid.
                let cap: f32 = uniq
                    .iter()
                    .map(|(p, _)| {
                        let occ = seq.windows(p.len()).filter(|w| *w == p.as_slice()).count();
                        let mut n = 0;
                        for &l in p {
                            n = walker.next[n][&l];
                        }
                        occ as f32 * walker.node[n]
                    })
                    .sum();
                assert!(
                    ta <= cap + 1e-4,
                    "case {case} {strict:?} {seq:?}: {ta} > {cap}"
                );
            }
        }
    }
}

#[test]
fn bad_phrases_are_errors() {
    let opts = BoostOptions::default();
    let p = |l: Vec<u32>| Phrase::keyword(l, None);
    assert!(boosting_tree(&[p(vec![])], 5, &opts)
        .unwrap_err()
        .to_string()
        .contains("empty"));
    assert!(boosting_tree(&[p(vec![7])], 5, &opts)
        .unwrap_err()
        .to_string()
        .contains("out of range"));
    let long = boosting_tree(&[p(vec![1; 64])], 5, &opts).unwrap_err();
    assert!(long.to_string().contains("at most 63 labels"), "{long}");
    let (_, rep) = boosting_tree(&[p(vec![1, 2]), p(vec![1, 2])], 5, &opts).unwrap();
    assert_eq!((rep.phrases, rep.duplicates), (1, 1));
}

#[test]
fn end_bonuses_are_paid_once_at_the_last_label_and_never_taken_back() {
    // A word-level n-gram entry "AB" (per-label score 0, bonus 0.7 at B) and a keyword "BC".
    let phrases = [
        Phrase {
            labels: letters("AB"),
            score: Some(0.0),
            end_bonus: 0.7,
        },
        Phrase::keyword(letters("BC"), Some(1.0)),
    ];
    for strict in [true, false] {
        let opts = BoostOptions {
            unk_score: 0.0,
            default_score: 1.0,
            matching: if strict {
                Matching::Strict
            } else {
                Matching::NonStrict
            },
            depth_scaling: None,
        };
        let (lm, _) = boosting_tree(&phrases, 26, &opts).unwrap();
        let step = |seq: &str| -> Vec<f32> {
            let mut s = lm.bos_state();
            letters(seq)
                .iter()
                .map(|&l| {
                    let (w, n) = lm.score(s, l);
                    s = n;
                    w
                })
                .collect()
        };
        // A: nothing yet; B: the entry's bonus (and B starts the keyword in strict mode).
        assert_eq!(total(&lm, &letters("AB")), 0.7, "strict {strict}");
        assert!(
            (total(&lm, &letters("ABAB")) - 1.4).abs() < 1e-6,
            "strict {strict}"
        );
        // A broken-off entry pays nothing and takes nothing.
        assert_eq!(total(&lm, &letters("AAX")), 0.0, "strict {strict}");
        if strict {
            // ABC: the entry's bonus at B; at C the failure link from AB to the keyword's B
            // credits B's score (+1) and BC completes (1 + its phrase score 2); the final
            // weight takes back BC's node score (2): 0.7 + 2 in all.
            assert_eq!(step("ABC"), vec![0.0, 0.7, 4.0]);
            assert!((total(&lm, &letters("ABC")) - 2.7).abs() < 1e-6);
        } else {
            // Non-strict: back to the root after AB, so BC does not complete.
            assert!((total(&lm, &letters("ABC")) - 0.7).abs() < 1e-6);
        }
    }
}

#[test]
fn the_unified_trie_gives_lm_ngrams_their_bias_score_and_keywords_alpha() {
    use ngpu_lm::boost::word_lm_phrases;
    let e = |w: &[&str], p: f32| {
        (
            w.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            p,
            0.0f32,
        )
    };
    let lm = ctx_core::arpa::ArpaLm::from_entries(vec![
        vec![
            e(&["<s>"], -99.0),
            e(&["</s>"], -1.0),
            e(&["AB"], -0.5),
            e(&["C"], -1.0),
        ],
        vec![e(&["AB", "C"], -0.2), e(&["<s>", "AB"], -0.3)],
    ])
    .unwrap();
    let spell = |w: &str| -> Option<Vec<u32>> {
        w.bytes()
            .map(|b| b.is_ascii_uppercase().then(|| (b - b'A') as u32))
            .collect()
    };
    let kw = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let (phrases, rep) = word_lm_phrases(&lm, spell, &[kw("AB C"), kw("D E"), kw("x")], 0.5, 1.5);
    // AB, C, "AB C" entered; <s>, </s> and "<s> AB" skipped; "AB C" in the LM, "D E" not,
    // "x" cannot be spelled.
    assert_eq!((rep.ngrams, rep.skipped), (3, 3));
    assert_eq!(
        (
            rep.keywords_in_lm,
            rep.keywords_out_lm,
            rep.keywords_unspelled
        ),
        (1, 1, 1)
    );
    let (trie, _) = boosting_tree(&phrases, 26, &BoostOptions::default()).unwrap();
    let t = |s: &str| total(&trie, &letters(s));
    let close = |a: f32, b: f32| (a - b).abs() < 1e-5;
    // "AB" alone: e^{-0.5}; "C": e^{-1}; "ABC" = AB, then C and "AB C" (+ α_inLM) complete.
    assert!(close(t("AB"), (-0.5f32).exp()));
    assert!(close(
        t("ABC"),
        (-0.5f32).exp() + (-1.0f32).exp() + (-0.2f32).exp() + 0.5
    ));
    // The keyword outside the LM: α_outLM once, at E.
    assert!(close(t("DE"), 1.5));
    assert!(close(t("DX"), 0.0));
    // Split: the n-grams alone (shared) + the keywords with α only (per utterance) sum to the
    // unified trie on every prefix.
    let keywords = [kw("AB C"), kw("D E"), kw("x")];
    let (ngrams, _) = word_lm_phrases(&lm, spell, &[], 0.5, 1.5);
    let (own, rep) = ngpu_lm::boost::lm_keyword_phrases(&lm, spell, &keywords, 0.5, 1.5);
    assert_eq!(
        (
            rep.keywords_in_lm,
            rep.keywords_out_lm,
            rep.keywords_unspelled
        ),
        (1, 1, 1)
    );
    let (a, _) = boosting_tree(&ngrams, 26, &BoostOptions::default()).unwrap();
    let (b, _) = boosting_tree(&own, 26, &BoostOptions::default()).unwrap();
    for q in ["ABC", "DE", "CABCDE", "ABAB", "DDEC"] {
        let l = letters(q);
        for k in 0..=l.len() {
            let sum = total(&a, &l[..k]) + total(&b, &l[..k]);
            assert!(
                close(sum, t(&q[..k])),
                "{q} prefix {k}: {sum} vs {}",
                t(&q[..k])
            );
        }
    }
}

/// NeMo's GPU boosting-tree test: phrases [1, 2, 3], [1, 2, 4], [3] with score 1 and depth
/// scaling 1 (labels 2 and 3 of a phrase earn 1 + ln 2 and 1 + ln 3); NeMo mode keeps completed
/// phrases. `abcba` -> [1, 1.6931, 2.0986, 0, 1]; `caba` -> [1, 1, 1.6931, -1.6931] (NeMo's
/// fifth value is the padding of the shorter sequence in its batch).
#[test]
fn nemo_golden_vectors_with_depth_scaling() {
    let phrases: Vec<Phrase> = [vec![1, 2, 3], vec![1, 2, 4], vec![3]]
        .into_iter()
        .map(|p| Phrase::keyword(p, None))
        .collect();
    let opts = BoostOptions {
        unk_score: 0.0,
        default_score: 1.0,
        matching: Matching::Nemo,
        depth_scaling: Some(1.0),
    };
    let (lm, rep) = boosting_tree(&phrases, 5, &opts).unwrap();
    assert_eq!(rep.nodes, 6, "root, 1, 12, 123, 124, 3");
    let steps = |seq: &[u32]| -> Vec<f32> {
        let mut s = lm.bos_state();
        seq.iter()
            .map(|&l| {
                let (w, n) = lm.score(s, l);
                s = n;
                w
            })
            .collect()
    };
    let close = |got: Vec<f32>, want: &[f32]| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-4, "{got:?} vs {want:?}");
        }
    };
    close(steps(&[1, 2, 3, 2, 1]), &[1.0, 1.6931, 2.0986, 0.0, 1.0]);
    close(steps(&[3, 1, 2, 1]), &[1.0, 1.0, 1.6931, -1.6931]);
    // The batched query gives the same first step for every label.
    let (mut sc, mut nx) = (vec![0f32; 5], vec![0u32; 5]);
    lm.advance(&[lm.bos_state()], &mut sc, &mut nx).unwrap();
    assert_eq!(sc, vec![0.0, 1.0, 0.0, 1.0, 0.0]);
    // icefall's strict mode on the same tree takes a completed phrase back once it breaks off
    // at a longer one's prefix: `abcba` pays 1 + 1.6931 + 2.0986 + [123] + [3] ... then −all.
    let strict = BoostOptions {
        matching: Matching::Strict,
        ..opts
    };
    let (st, _) = boosting_tree(&phrases, 5, &strict).unwrap();
    let total_strict = total(&st, &[1, 2, 3, 2, 1]);
    let total_nemo = total(&lm, &[1, 2, 3, 2, 1]);
    assert!(
        (total_nemo - (4.7917 + 1.0 - 1.0)).abs() < 1e-3,
        "NeMo keeps [1,2,3]; the trailing a is taken back at the end: {total_nemo}"
    );
    assert!(
        (total_strict - (4.7917 + 1.0)).abs() < 1e-3,
        "strict: [1,2,3] and [3] paid as outputs, the partial a taken back: {total_strict}"
    );
}

/// NeMo's `unk_score`: a label that starts no phrase earns it at the root, and a match that
/// breaks off pays its take-back and then earns it; a phrase's labels earn their own scores.
#[test]
fn unknown_labels_earn_the_unk_score() {
    let phrases = [Phrase::keyword(letters("HE"), None)];
    let tree = |unk: f32, matching: Matching| {
        let opts = BoostOptions {
            unk_score: unk,
            matching,
            ..BoostOptions::default()
        };
        boosting_tree(&phrases, 26, &opts).unwrap().0
    };
    for m in [Matching::Strict, Matching::Nemo] {
        let (zero, half) = (tree(0.0, m), tree(0.5, m));
        // Q starts nothing: 0.5 more per such label.
        assert_eq!(
            total(&half, &letters("QQ")) - total(&zero, &letters("QQ")),
            1.0
        );
        // H then Q: H is a phrase's label (no unk score), Q breaks off and earns it.
        assert_eq!(
            total(&half, &letters("HQ")) - total(&zero, &letters("HQ")),
            0.5
        );
        // The phrase itself earns what it did.
        assert_eq!(total(&half, &letters("HE")), total(&zero, &letters("HE")));
    }
    let bad = BoostOptions {
        unk_score: f32::NAN,
        ..BoostOptions::default()
    };
    assert!(boosting_tree(&phrases, 26, &bad).is_err());
}

//! Greedy LM fusion: each rule on hand-made posteriors (CTC's three groups, the transducer's
//! two stages, TDT durations, AED's end of sequence by final weight, the insertion bonus), α = 0
//! equal to plain greedy byte for byte and the pruned query equal to the full one on simulated
//! models of every type, and bad settings as errors.

mod common;

use common::{knobs, sim_setup};
use ctx_core::arpa::ArpaLm;
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use ctx_data::bpe::Bpe;
use ctx_data::e2e::{AedSim, TransducerSim};
use ngpu_lm::fusion::{greedy_aed, greedy_ctc, greedy_transducer, Fusion, LmQuery};
use ngpu_lm::{NgpuError, NgramLm};

/// Labels a, b, c (columns 1, 2, 3). After `a`, `b` is likely and `c` and `</s>` are not; after
/// `b` the sentence ends.
fn abc_lm() -> NgramLm {
    let e = |w: &[&str], p: f32, bo: f32| (w.iter().map(|x| x.to_string()).collect(), p, bo);
    let lm = ArpaLm::from_entries(vec![
        vec![
            e(&["<s>"], -99.0, 0.0),
            e(&["</s>"], -1.0, 0.0),
            e(&["a"], -0.5, 0.0),
            e(&["b"], -0.5, 0.0),
            e(&["c"], -0.5, 0.0),
        ],
        vec![
            e(&["<s>", "a"], -0.1, 0.0),
            e(&["a", "b"], -0.05, 0.0),
            e(&["a", "c"], -2.0, 0.0),
            e(&["a", "</s>"], -3.0, 0.0),
            e(&["b", "</s>"], -0.01, 0.0),
        ],
    ])
    .unwrap();
    let labels: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    NgramLm::from_arpa(&lm, &labels).unwrap().0
}

/// A row of log-probabilities over (blank/eos, a, b, c) from a few named values, the rest low.
fn row(vals: &[(usize, f32)]) -> Vec<f32> {
    let mut r = vec![-20.0f32; 4];
    for &(c, v) in vals {
        r[c] = v;
    }
    r
}

fn matrix(rows: &[Vec<f32>]) -> ScoreMatrix {
    let mut m = ScoreMatrix::zeros(rows.len(), 4);
    for (t, r) in rows.iter().enumerate() {
        m.row_mut(t).copy_from_slice(r);
    }
    m
}

#[test]
fn ctc_keeps_blank_and_repeats_and_rescores_other_labels() {
    let lm = abc_lm();
    let m = matrix(&[
        row(&[(1, -0.1)]),                       // a
        row(&[(1, -0.1), (2, -0.3)]),            // a again: a repeat, kept even though b is close
        row(&[(3, -0.5), (2, -0.9), (0, -1.0)]), // other: c acoustically, b with the LM
        row(&[(0, -0.01)]),                      // blank
        row(&[(2, -0.2)]),                       // b after b (through blank): a new b
    ]);
    let plain = greedy_ctc(&[&m], &Fusion::none()).unwrap();
    assert_eq!(plain, vec![vec![1, 3, 2]]);
    for query in [LmQuery::Full, LmQuery::Pruned] {
        let f = Fusion {
            query,
            ..Fusion::with_lm(&lm, 1.0)
        };
        assert_eq!(
            greedy_ctc(&[&m], &f).unwrap(),
            vec![vec![1, 2, 2]],
            "{query:?}"
        );
        // A huge weight still never turns the repeat or the blank into a label.
        let f = Fusion {
            query,
            ..Fusion::with_lm(&lm, 50.0)
        };
        assert_eq!(greedy_ctc(&[&m], &f).unwrap()[0].len(), 3);
    }
}

/// A transducer given as a table: joint by (frame, labels emitted so far).
struct Table {
    rows: Vec<Vec<Vec<f32>>>,
    durs: Vec<Vec<Vec<f32>>>,
    dvals: Vec<u32>,
}

impl Transducer for Table {
    fn frames(&self) -> usize {
        self.rows.len()
    }
    fn width(&self) -> usize {
        4
    }
    fn durations(&self) -> &[u32] {
        &self.dvals
    }
    fn start(&self) -> u32 {
        0
    }
    fn joint(&self, t: usize, state: u32, labels: &mut [f32], durations: &mut [f32]) {
        let s = (state as usize).min(self.rows[t].len() - 1);
        labels.copy_from_slice(&self.rows[t][s]);
        if !self.dvals.is_empty() {
            durations.copy_from_slice(&self.durs[t][s]);
        }
    }
    fn next(&self, _t: usize, state: u32, _label: u32) -> u32 {
        state + 1
    }
}

#[test]
fn transducer_decides_blank_first_then_the_label_with_the_lm() {
    let lm = abc_lm();
    // t0: a, then blank (the LM's strong b after a must not override the blank decision);
    // t1 (state 1): c acoustically, b with the LM, then blank; t2: blank.
    let rnnt = Table {
        rows: rnnt_rows(),
        durs: vec![],
        dvals: vec![],
    };
    assert_eq!(
        greedy_transducer(std::slice::from_ref(&rnnt), &Fusion::none(), 5).unwrap(),
        vec![vec![1, 3]]
    );
    for query in [LmQuery::Full, LmQuery::Pruned] {
        let f = Fusion {
            query,
            ..Fusion::with_lm(&lm, 1.0)
        };
        assert_eq!(
            greedy_transducer(std::slice::from_ref(&rnnt), &f, 5).unwrap(),
            vec![vec![1, 2]]
        );
        let f = Fusion {
            query,
            ..Fusion::with_lm(&lm, 100.0)
        };
        assert_eq!(
            greedy_transducer(std::slice::from_ref(&rnnt), &f, 5).unwrap()[0].len(),
            2,
            "the blank decisions stay acoustic"
        );
    }
}

/// Joint rows by (frame, state) for the RNN-T test.
fn rnnt_rows() -> Vec<Vec<Vec<f32>>> {
    let b = row(&[(0, -0.05), (2, -3.0)]);
    vec![
        vec![row(&[(1, -0.1)]), b.clone(), b.clone()],
        vec![b.clone(), row(&[(3, -0.5), (2, -0.9)]), b.clone()],
        vec![b.clone(), b.clone(), b.clone()],
    ]
}

#[test]
fn tdt_follows_the_duration_head() {
    let blank = row(&[(0, -0.05)]);
    let b = blank.clone();
    // t0: a with duration 2 -> frame 2 (frame 1's c is never seen); t2: b with duration 0, then
    // blank with duration 1.
    let rows = vec![
        vec![row(&[(1, -0.1)]), b.clone(), b.clone()],
        vec![row(&[(3, -0.1)]), row(&[(3, -0.1)]), b.clone()],
        vec![b.clone(), row(&[(2, -0.1)]), b.clone()],
    ];
    let d = |k: usize| {
        let mut v = vec![-9.0f32; 3];
        v[k] = -0.01;
        v
    };
    let durs = vec![
        vec![d(2), d(1), d(1)],
        vec![d(1), d(1), d(1)],
        vec![d(1), d(0), d(1)],
    ];
    let tdt = Table {
        rows,
        durs,
        dvals: vec![0, 1, 2],
    };
    assert_eq!(
        greedy_transducer(&[tdt], &Fusion::none(), 5).unwrap(),
        vec![vec![1, 2]]
    );
}

struct AedTable(Vec<Vec<f32>>);

impl Aed for AedTable {
    fn width(&self) -> usize {
        4
    }
    fn max_len(&self) -> usize {
        10
    }
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, state: u32, out: &mut [f32]) {
        out.copy_from_slice(&self.0[(state as usize).min(self.0.len() - 1)]);
    }
    fn next(&self, state: u32, _label: u32) -> u32 {
        state + 1
    }
}

#[test]
fn aed_ends_by_the_lm_final_weight_and_takes_the_bonus() {
    let lm = abc_lm();
    let aed = AedTable(vec![
        row(&[(1, -0.1)]),
        row(&[(0, -0.3), (2, -1.5)]),
        row(&[(0, -0.1)]),
    ]);
    assert_eq!(
        greedy_aed(std::slice::from_ref(&aed), &Fusion::none()).unwrap(),
        vec![vec![1]]
    );
    for query in [LmQuery::Full, LmQuery::Pruned] {
        // ln p(</s> | a) = −3 ln 10: the LM keeps the sentence going, with b.
        let f = Fusion {
            query,
            ..Fusion::with_lm(&lm, 1.0)
        };
        assert_eq!(
            greedy_aed(std::slice::from_ref(&aed), &f).unwrap(),
            vec![vec![1, 2]]
        );
        // α = 0 with a bonus of 2: b (−1.5 + 2) beats end of sequence (−0.3).
        let f = Fusion {
            query,
            bonus: 2.0,
            ..Fusion::with_lm(&lm, 0.0)
        };
        assert_eq!(
            greedy_aed(std::slice::from_ref(&aed), &f).unwrap(),
            vec![vec![1, 2]]
        );
    }
}

/// The four simulated models over the sentences' words; sentence `i` is utterance `u{i}`,
/// 0.4 s a word plus 0.3 s.
struct Sims {
    ctc: ctx_data::acoustic::CtcSim,
    rnnt: TransducerSim,
    tdt: TransducerSim,
    aed: AedSim,
}

impl Sims {
    fn new(sents: &[Vec<String>], bpe: &Bpe) -> Self {
        let all: Vec<&str> = sents
            .iter()
            .flat_map(|s| s.iter().map(String::as_str))
            .collect();
        Sims {
            ctc: ctx_data::acoustic::CtcSim::new(knobs(), bpe.clone()).with_vocabulary(all.clone()),
            rnnt: TransducerSim::new(knobs(), bpe.clone(), false).with_vocabulary(all.clone()),
            tdt: TransducerSim::new(knobs(), bpe.clone(), true).with_vocabulary(all.clone()),
            aed: AedSim::new(knobs(), bpe.clone()).with_vocabulary(all),
        }
    }

    fn dur(s: &[String]) -> f64 {
        0.4 * s.len() as f64 + 0.3
    }

    fn ctc(&self, sents: &[Vec<String>]) -> Vec<ScoreMatrix> {
        sents
            .iter()
            .enumerate()
            .map(|(i, s)| {
                self.ctc
                    .simulate(&format!("u{i}"), s, Self::dur(s))
                    .unwrap()
                    .0
            })
            .collect()
    }

    fn transducer(
        &self,
        sents: &[Vec<String>],
        tdt: bool,
    ) -> Vec<ctx_data::e2e::TransducerUtt<'_>> {
        let m = if tdt { &self.tdt } else { &self.rnnt };
        sents
            .iter()
            .enumerate()
            .map(|(i, s)| m.simulate(&format!("u{i}"), s, Self::dur(s)).unwrap())
            .collect()
    }

    fn aed(&self, sents: &[Vec<String>]) -> Vec<ctx_data::e2e::AedUtt<'_>> {
        sents
            .iter()
            .enumerate()
            .map(|(i, s)| self.aed.simulate(&format!("u{i}"), s).unwrap())
            .collect()
    }
}

/// Every model type's utterances of the sentences, decoded greedily by [`Self::run`].
struct AllModels<'s> {
    mats: Vec<ScoreMatrix>,
    rnnt: Vec<ctx_data::e2e::TransducerUtt<'s>>,
    tdt: Vec<ctx_data::e2e::TransducerUtt<'s>>,
    aed: Vec<ctx_data::e2e::AedUtt<'s>>,
}

/// Greedy hypotheses of (CTC, RNN-T, TDT, AED).
type AllHyps = (Vec<Vec<u32>>, Vec<Vec<u32>>, Vec<Vec<u32>>, Vec<Vec<u32>>);

impl<'s> AllModels<'s> {
    fn new(sims: &'s Sims, sents: &[Vec<String>]) -> Self {
        Self {
            mats: sims.ctc(sents),
            rnnt: sims.transducer(sents, false),
            tdt: sims.transducer(sents, true),
            aed: sims.aed(sents),
        }
    }

    fn run(&self, f: &Fusion) -> AllHyps {
        let refs: Vec<&ScoreMatrix> = self.mats.iter().collect();
        (
            greedy_ctc(&refs, f).unwrap(),
            greedy_transducer(&self.rnnt, f, 5).unwrap(),
            greedy_transducer(&self.tdt, f, 5).unwrap(),
            greedy_aed(&self.aed, f).unwrap(),
        )
    }
}

#[test]
fn alpha_zero_is_plain_greedy_and_pruned_equals_full_on_every_model_type() {
    let (sents, bpe, lm) = sim_setup();
    let sims = Sims::new(&sents, &bpe);
    let all = AllModels::new(&sims, &sents);
    let (r_utts, t_utts, a_utts) = (&all.rnnt, &all.tdt, &all.aed);
    let run = |f: &Fusion| all.run(f);
    let plain = run(&Fusion::none());
    // Plain greedy decodes something close to what the model heard (a sanity check of the sims).
    assert!(plain.0.iter().filter(|h| !h.is_empty()).count() > 50);
    // Plain greedy follows what each model heard (noisy: substitutions, few length changes).
    let same_len = |hyps: &[Vec<u32>], heard: Vec<Vec<u32>>| {
        hyps.iter()
            .zip(heard)
            .filter(|(h, u)| h.len() == u.len())
            .count()
    };
    assert!(same_len(&plain.1, r_utts.iter().map(|u| u.heard()).collect()) > 40);
    assert!(same_len(&plain.2, t_utts.iter().map(|u| u.heard()).collect()) > 40);
    assert!(same_len(&plain.3, a_utts.iter().map(|u| u.heard()).collect()) > 40);
    for query in [LmQuery::Full, LmQuery::Pruned] {
        for batch in [1, 7, 64] {
            let f = Fusion {
                query,
                batch,
                ..Fusion::with_lm(&lm, 0.0)
            };
            assert_eq!(run(&f), plain, "α = 0, {query:?}, batch {batch}");
        }
    }
    for alpha in [0.3f32, 1.0, 3.0] {
        let full = run(&Fusion {
            bonus: 0.5,
            ..Fusion::with_lm(&lm, alpha)
        });
        let pruned = run(&Fusion {
            bonus: 0.5,
            query: LmQuery::Pruned,
            batch: 5,
            ..Fusion::with_lm(&lm, alpha)
        });
        assert_eq!(full, pruned, "α = {alpha}");
        if alpha >= 1.0 {
            assert_ne!(full, plain, "the LM changes something at α = {alpha}");
        }
    }
}

#[test]
fn bad_fusion_settings_are_errors() {
    let lm = abc_lm();
    let m = matrix(&[row(&[(1, -0.1)])]);
    for alpha in [-0.5f32, f32::NAN, f32::INFINITY] {
        let e = greedy_ctc(&[&m], &Fusion::with_lm(&lm, alpha)).unwrap_err();
        assert!(e.to_string().contains("LM weight"), "{e}");
    }
    let f = Fusion {
        bonus: f32::NAN,
        ..Fusion::with_lm(&lm, 1.0)
    };
    assert!(greedy_ctc(&[&m], &f).is_err());
    // A zero batch is an error even with no utterances (it would be a chunk size of 0).
    let f = Fusion {
        batch: 0,
        ..Fusion::none()
    };
    assert!(greedy_ctc(&[], &f)
        .unwrap_err()
        .to_string()
        .contains("batch"));
    let none: [AedTable; 0] = [];
    assert!(greedy_aed(&none, &f).is_err());
    // A model with 5 columns and an LM over 3 labels.
    let wide = ScoreMatrix::zeros(2, 5);
    match greedy_ctc(&[&wide], &Fusion::with_lm(&lm, 1.0)) {
        Err(NgpuError::VocabMismatch { examples, .. }) => assert!(examples.contains("3 labels")),
        other => panic!("expected a vocabulary mismatch, got {other:?}"),
    }
}

#[test]
fn nan_log_probabilities_are_named_errors() {
    let lm = abc_lm();
    let mut bad = row(&[(1, -0.1)]);
    bad[2] = f32::NAN;
    let m = matrix(&[row(&[(0, -0.1)]), bad.clone()]);
    for f in [Fusion::none(), Fusion::with_lm(&lm, 1.0)] {
        let e = greedy_ctc(&[&m, &m], &f).unwrap_err();
        assert!(e.to_string().contains("utterance 0: frame 1"), "{e}");
        let e = ngpu_lm::beam::beam_ctc(&[&m], &f, 4).unwrap_err();
        assert!(e.to_string().contains("NaN"), "{e}");
    }
    let aed = AedTable(vec![row(&[(1, -0.1)]), bad.clone()]);
    let good = AedTable(vec![row(&[(0, -0.1)])]);
    let e = greedy_aed(&[good, aed], &Fusion::none()).unwrap_err();
    assert!(e.to_string().contains("utterance 1"), "{e}");
    let t = Table {
        rows: vec![vec![bad.clone(), bad.clone()]],
        durs: vec![],
        dvals: vec![],
    };
    let e = greedy_transducer(std::slice::from_ref(&t), &Fusion::none(), 5).unwrap_err();
    assert!(e.to_string().contains("joint"), "{e}");
    let e = ngpu_lm::beam::beam_transducer(&[t], &Fusion::none(), 4, 5).unwrap_err();
    assert!(e.to_string().contains("joint"), "{e}");
}

#[test]
fn a_context_tree_boosts_its_phrase_in_greedy_decoding() {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
    use ngpu_lm::fusion::Contexts;
    // Keyword "b" (column 2 = label 1) with bonus 1 per label: at t2 c (−0.5) loses to b
    // (−0.9 + 1); without the tree c wins.
    let (tree, _) = boosting_tree(
        &[Phrase::keyword(vec![1], Some(1.0))],
        3,
        &BoostOptions::default(),
    )
    .unwrap();
    let m = matrix(&[
        row(&[(1, -0.1)]),
        row(&[(0, -0.01)]),
        row(&[(3, -0.5), (2, -0.9)]),
    ]);
    assert_eq!(
        greedy_ctc(&[&m], &Fusion::none()).unwrap(),
        vec![vec![1, 3]]
    );
    for query in [LmQuery::Full, LmQuery::Pruned] {
        let f = Fusion {
            query,
            contexts: Contexts::Shared(&tree),
            ..Fusion::none()
        };
        assert_eq!(
            greedy_ctc(&[&m], &f).unwrap(),
            vec![vec![1, 2]],
            "{query:?}"
        );
    }
    // A wrong number of per-utterance trees is an error.
    let tree_refs = vec![&tree, &tree];
    let f = Fusion {
        contexts: Contexts::PerUtterance(&tree_refs),
        ..Fusion::none()
    };
    assert!(greedy_ctc(&[&m], &f)
        .unwrap_err()
        .to_string()
        .contains("2 context trees"));
}

#[test]
fn per_utterance_contexts_in_one_batch_equal_decoding_each_alone() {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
    use ngpu_lm::fusion::Contexts;
    let (sents, bpe, lm) = sim_setup();
    // Each utterance's context: its own second word and another utterance's first word.
    let v = bpe.len();
    let trees: Vec<NgramLm> = (0..sents.len())
        .map(|i| {
            let spell = |w: &str| -> Vec<u32> {
                bpe.encode_word(w)
                    .iter()
                    .map(|p| bpe.id(p).unwrap() - 1)
                    .collect()
            };
            let mut ph = vec![Phrase::keyword(
                spell(&sents[(i + 7) % sents.len()][0]),
                Some(1.5),
            )];
            if let Some(w) = sents[i].get(1) {
                ph.push(Phrase::keyword(spell(w), Some(1.5)));
            }
            boosting_tree(&ph, v, &BoostOptions::default()).unwrap().0
        })
        .collect();
    let tree_refs: Vec<&NgramLm> = trees.iter().collect();
    let sims = Sims::new(&sents, &bpe);
    let mats = sims.ctc(&sents);
    let refs: Vec<&ScoreMatrix> = mats.iter().collect();
    let r_utts = sims.transducer(&sents, false);
    let a_utts = sims.aed(&sents);
    let mut per_query = Vec::new();
    for query in [LmQuery::Full, LmQuery::Pruned] {
        let batched = Fusion {
            query,
            batch: 16,
            contexts: Contexts::PerUtterance(&tree_refs),
            ..Fusion::with_lm(&lm, 0.5)
        };
        let got = (
            greedy_ctc(&refs, &batched).unwrap(),
            greedy_transducer(&r_utts, &batched, 5).unwrap(),
            greedy_aed(&a_utts, &batched).unwrap(),
            ngpu_lm::beam::beam_ctc(&refs, &batched, 3).unwrap(),
            ngpu_lm::beam::beam_transducer(&r_utts, &batched, 3, 5).unwrap(),
            ngpu_lm::beam::beam_aed(&a_utts, &batched, 3).unwrap(),
        );
        let plain = Fusion {
            query,
            ..Fusion::with_lm(&lm, 0.5)
        };
        let mut changed = 0;
        for i in 0..sents.len() {
            let alone = Fusion {
                query,
                batch: 1,
                contexts: Contexts::Shared(&trees[i]),
                ..Fusion::with_lm(&lm, 0.5)
            };
            let one_r = std::slice::from_ref(&r_utts[i]);
            let one_a = std::slice::from_ref(&a_utts[i]);
            assert_eq!(
                got.0[i],
                greedy_ctc(&[refs[i]], &alone).unwrap()[0],
                "ctc {i}"
            );
            assert_eq!(
                got.1[i],
                greedy_transducer(one_r, &alone, 5).unwrap()[0],
                "rnnt {i}"
            );
            assert_eq!(got.2[i], greedy_aed(one_a, &alone).unwrap()[0], "aed {i}");
            assert_eq!(
                got.3[i],
                ngpu_lm::beam::beam_ctc(&[refs[i]], &alone, 3).unwrap()[0]
            );
            assert_eq!(
                got.4[i],
                ngpu_lm::beam::beam_transducer(one_r, &alone, 3, 5).unwrap()[0]
            );
            assert_eq!(
                got.5[i],
                ngpu_lm::beam::beam_aed(one_a, &alone, 3).unwrap()[0]
            );
            changed += (got.1[i] != greedy_transducer(one_r, &plain, 5).unwrap()[0]) as usize;
        }
        assert!(changed > 0, "the contexts change some outputs ({query:?})");
        // Decoding the utterances in slices, each with its slice of the contexts (how the
        // runner holds a large set's score matrices), gives the whole decode's outputs.
        let mut sliced = Vec::new();
        for (k, part) in refs.chunks(5).enumerate() {
            let f = Fusion {
                contexts: batched.contexts.slice(5 * k..5 * k + part.len()),
                ..batched
            };
            sliced.extend(greedy_ctc(part, &f).unwrap());
        }
        assert_eq!(sliced, got.0, "sliced contexts ({query:?})");
        per_query.push((got.0, got.1, got.2));
    }
    assert!(per_query[0] == per_query[1], "pruned == full with contexts");
}

/// 003's unified trie (word n-grams and keywords in one trie) equals a shared n-gram tree plus
/// each utterance's keyword tree, summed: with end bonuses only and strict matching, every
/// phrase ending at a label pays its bonus in whichever tree holds it. Bonuses are multiples of
/// 1/4 so both sums are exact and decoding must agree label for label.
#[test]
fn shared_plus_per_utterance_trees_equal_the_unified_trie() {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
    use ngpu_lm::fusion::Contexts;
    let (sents, bpe, lm) = sim_setup();
    let spell = |ws: &[String]| -> Vec<u32> {
        ws.iter()
            .flat_map(|w| bpe.encode_word(w))
            .map(|p| bpe.id(&p).unwrap() - 1)
            .collect()
    };
    let end = |labels: Vec<u32>, b: f32| Phrase {
        labels,
        score: Some(0.0),
        end_bonus: b,
    };
    // "LM n-grams": every word and every second word pair of the first sentences.
    let mut ngrams: Vec<(Vec<String>, f32)> = Vec::new();
    for (k, s) in sents.iter().take(6).enumerate() {
        for (j, w) in s.iter().enumerate() {
            ngrams.push((vec![w.clone()], [0.25, 0.5][(j + k) % 2]));
            if j % 2 == 1 {
                ngrams.push((s[j - 1..=j].to_vec(), 0.75));
            }
        }
    }
    ngrams.sort_by(|a, b| a.0.cmp(&b.0));
    ngrams.dedup_by(|a, b| a.0 == b.0);
    let v = bpe.len();
    let opts = BoostOptions::default();
    let shared_ph: Vec<Phrase> = ngrams.iter().map(|(w, b)| end(spell(w), *b)).collect();
    let (shared, _) = boosting_tree(&shared_ph, v, &opts).unwrap();
    // Keywords of utterance i: its second word (α_in 0.5 when an n-gram, else α_out 1.5).
    let (mut own, mut unified) = (Vec::new(), Vec::new());
    let mut in_lm = 0;
    for s in &sents {
        let kws: Vec<Vec<String>> = s.iter().skip(1).take(1).map(|w| vec![w.clone()]).collect();
        let mut own_ph = Vec::new();
        let mut uni: Vec<Phrase> = Vec::new();
        for (w, b) in &ngrams {
            let hit = kws.contains(w);
            uni.push(end(spell(w), if hit { b + 0.5 } else { *b }));
        }
        for k in &kws {
            let hit = ngrams.iter().any(|(w, _)| w == k);
            in_lm += hit as usize;
            own_ph.push(end(spell(k), if hit { 0.5 } else { 1.5 }));
            if !hit {
                uni.push(end(spell(k), 1.5));
            }
        }
        own.push(boosting_tree(&own_ph, v, &opts).unwrap().0);
        unified.push(boosting_tree(&uni, v, &opts).unwrap().0);
    }
    assert!(
        in_lm > 0 && in_lm < sents.len(),
        "keywords in and out of the LM"
    );
    let (own, unified): (Vec<&NgramLm>, Vec<&NgramLm>) =
        (own.iter().collect(), unified.iter().collect());
    let both = Contexts::SharedAndPerUtterance(&shared, &own);
    let one = Contexts::PerUtterance(&unified);
    // Step by step on label sequences: the sums are equal.
    let mut rng = ctx_data::rng::Rng::new(5);
    for i in 0..sents.len() {
        let (a, b) = (both.get(i), one.get(i));
        let (mut sa, mut sb) = (a.start(), b.start());
        let words = spell(&sents[(i + rng.below(3)) % sents.len()]);
        for &l in &words {
            let l = if rng.below(5) == 0 {
                rng.below(v) as u32
            } else {
                l
            };
            let ((wa, na), (wb, nb)) = (a.score(sa, l), b.score(sb, l));
            assert_eq!(wa, wb, "utterance {i} label {l}");
            (sa, sb) = (na, nb);
        }
        assert_eq!(a.final_weight(sa), b.final_weight(sb));
    }
    // Decoding: the same labels for CTC greedy and beam, RNN-T beam, AED greedy.
    let sims = Sims::new(&sents, &bpe);
    let mats = sims.ctc(&sents);
    let refs: Vec<&ScoreMatrix> = mats.iter().collect();
    let r_utts = sims.transducer(&sents, false);
    let a_utts = sims.aed(&sents);
    for query in [LmQuery::Full, LmQuery::Pruned] {
        let run = |contexts| {
            let f = Fusion {
                query,
                batch: 8,
                contexts,
                ..Fusion::with_lm(&lm, 0.3)
            };
            (
                greedy_ctc(&refs, &f).unwrap(),
                ngpu_lm::beam::beam_ctc(&refs, &f, 3).unwrap(),
                ngpu_lm::beam::beam_transducer(&r_utts, &f, 3, 5).unwrap(),
                greedy_aed(&a_utts, &f).unwrap(),
            )
        };
        let (x, y) = (run(both), run(one));
        assert!(x == y, "shared + own == unified ({query:?})");
        assert!(
            x != run(Contexts::None),
            "the trees change outputs ({query:?})"
        );
    }
}

/// The shim, and the GPU when one answers.
fn devices() -> Vec<Box<dyn ctx_cuda::Device>> {
    let mut v: Vec<Box<dyn ctx_cuda::Device>> = vec![Box::new(ctx_cuda::shim::ShimDevice::new())];
    match ctx_cuda::cuda::CudaDevice::open() {
        Ok(d) => v.push(Box::new(d)),
        Err(e) => eprintln!("GPU runs SKIPPED (shim only): {e}"),
    }
    v
}

#[test]
fn greedy_fusion_with_the_lm_on_a_device_equals_the_cpu_on_every_model_type() {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
    use ngpu_lm::fusion::Contexts;
    use std::sync::Mutex;
    let (sents, bpe, lm) = sim_setup();
    let sims = Sims::new(&sents, &bpe);
    let all = AllModels::new(&sims, &sents);
    // Per-utterance keyword trees (scored on the host either way) on top of the LM.
    let spell = |w: &str| -> Vec<u32> {
        bpe.encode_word(w)
            .iter()
            .map(|p| bpe.id(p).unwrap() - 1)
            .collect()
    };
    let trees: Vec<NgramLm> = sents
        .iter()
        .map(|s| {
            let ph = vec![Phrase::keyword(spell(&s[0]), Some(1.0))];
            boosting_tree(&ph, bpe.len(), &BoostOptions::default())
                .unwrap()
                .0
        })
        .collect();
    let tree_refs: Vec<&NgramLm> = trees.iter().collect();
    let run = |f: &Fusion| all.run(f);
    // A shared tree too: the first utterance's second keyword for every utterance.
    let shared = {
        let ph = vec![Phrase::keyword(spell(&sents[0][1]), Some(0.7))];
        boosting_tree(&ph, bpe.len(), &BoostOptions::default())
            .unwrap()
            .0
    };
    let plain = run(&Fusion::none());
    let mut compared = 0;
    for (k, dev) in devices().into_iter().enumerate() {
        let name = dev.name();
        let d = Mutex::new(ngpu_lm::DeviceLm::new(&lm, dev).unwrap());
        // (α, batch, contexts, LM on the device, trees on the device)
        let cases = [
            (1.0f32, 7, 0, true, false),
            (3.0, 64, 0, true, false),
            (1.0, 16, 1, true, false),
            (1.0, 16, 1, true, true),
            (1.0, 9, 2, false, true),
            (0.0, 32, 1, false, true),
        ];
        for (alpha, batch, ctx, lm_dev, ctx_dev) in cases {
            let contexts = match ctx {
                0 => Contexts::None,
                1 => Contexts::PerUtterance(&tree_refs),
                _ => Contexts::SharedAndPerUtterance(&shared, &tree_refs),
            };
            let cpu = Fusion {
                bonus: 0.5,
                batch,
                contexts,
                ..Fusion::with_lm(&lm, alpha)
            };
            // The trees on their own device: the shim reversed, or the GPU.
            let trees_dev = ctx_dev.then(|| {
                let dev: Box<dyn ctx_cuda::Device> = if k == 0 {
                    Box::new(ctx_cuda::shim::ShimDevice::with_schedule(1))
                } else {
                    Box::new(ctx_cuda::cuda::CudaDevice::open().unwrap())
                };
                Mutex::new(
                    ngpu_lm::fusion::DeviceContexts::new(&contexts, dev)
                        .unwrap()
                        .unwrap(),
                )
            });
            let on_device = Fusion {
                device: lm_dev.then_some(&d),
                device_contexts: trees_dev.as_ref(),
                ..cpu
            };
            let want = run(&cpu);
            assert_ne!(
                want, plain,
                "the LM or the trees change something (α = {alpha})"
            );
            assert_eq!(
                run(&on_device),
                want,
                "{name}: α {alpha}, batch {batch}, contexts {ctx}, LM on the device {lm_dev}, trees {ctx_dev}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 6);
}

#[test]
fn an_lm_on_a_device_is_refused_where_it_cannot_serve() {
    use std::sync::Mutex;
    let lm = abc_lm();
    // A unigram LM over the same labels: fewer states than the bigram one.
    let e = |w: &str, p: f32| (vec![w.to_string()], p, 0.0);
    let uni = ArpaLm::from_entries(vec![vec![
        e("<s>", -99.0),
        e("</s>", -1.0),
        e("a", -0.5),
        e("b", -0.5),
        e("c", -0.5),
    ]])
    .unwrap();
    let labels: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let other = NgramLm::from_arpa(&uni, &labels).unwrap().0;
    assert_ne!(other.num_states(), lm.num_states());
    let shim = || -> Box<dyn ctx_cuda::Device> { Box::new(ctx_cuda::shim::ShimDevice::new()) };
    let d = Mutex::new(ngpu_lm::DeviceLm::new(&lm, shim()).unwrap());
    let m = matrix(&[row(&[(1, -0.1)])]);
    let err = |f: &Fusion| greedy_ctc(&[&m], f).unwrap_err().to_string();
    let pruned = Fusion {
        query: LmQuery::Pruned,
        device: Some(&d),
        ..Fusion::with_lm(&lm, 1.0)
    };
    assert!(err(&pruned).contains("full-vocabulary"), "{}", err(&pruned));
    let no_lm = Fusion {
        device: Some(&d),
        ..Fusion::none()
    };
    assert!(err(&no_lm).contains("no LM to fuse"), "{}", err(&no_lm));
    let d2 = Mutex::new(ngpu_lm::DeviceLm::new(&other, shim()).unwrap());
    let mismatch = Fusion {
        device: Some(&d2),
        ..Fusion::with_lm(&lm, 1.0)
    };
    assert!(
        err(&mismatch).contains("is not the fused LM"),
        "{}",
        err(&mismatch)
    );
}

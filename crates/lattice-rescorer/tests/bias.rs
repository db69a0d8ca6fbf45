//! Lattice biasing against rustfst's own composition and shortest path on random cases.

use ctx_graph::biasing::build_biasing_fst;
use lattice_rescorer::{biased_best_path, prefix_biased_best_path};
use rustfst::algorithms::compose::compose;
use rustfst::algorithms::tr_compares::OLabelCompare;
use rustfst::algorithms::{shortest_path, tr_sort};
use rustfst::prelude::*;
use wfst_search::{PhraseAutomaton, WlArc, WordLattice};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn random_lattice(rng: &mut Rng, states: u32, vocab: u32) -> WordLattice {
    let mut arcs = Vec::new();
    for s in 0..states - 1 {
        for _ in 0..1 + rng.below(3) {
            let to = s + 1 + rng.below(((states - s - 1) as u64).min(3)) as u32;
            arcs.push(WlArc {
                from: s,
                to,
                word: 1 + rng.below(vocab as u64) as u32,
                graph: 3.0 * rng.unit(),
                ac: 5.0 * rng.unit(),
                row: s,
            });
        }
    }
    let finals = (0..states)
        .map(|s| {
            if s == states - 1 || rng.below(4) == 0 {
                (rng.unit(), 0.5 * rng.unit())
            } else {
                (f32::INFINITY, 0.0)
            }
        })
        .collect();
    WordLattice::from_parts(states, finals, arcs).unwrap()
}

fn path_words(fst: &VectorFst<TropicalWeight>) -> (Vec<u32>, f32) {
    let mut words = Vec::new();
    let mut cost = 0.0;
    let mut s = fst.start().unwrap();
    loop {
        let trs = fst.get_trs(s).unwrap();
        let Some(tr) = trs.trs().first() else { break };
        if tr.olabel != 0 {
            words.push(tr.olabel);
        }
        cost += *tr.weight.value();
        s = tr.nextstate;
    }
    cost += *fst.final_weight(s).unwrap().unwrap().value();
    (words, cost)
}

#[test]
fn equals_rustfst_composition() {
    let mut rng = Rng(42);
    for case in 0..300 {
        let vocab = 6;
        let lat = random_lattice(&mut rng, 3 + (case % 7) as u32, vocab);
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(4))
            .map(|_| {
                (0..1 + rng.below(3))
                    .map(|_| 1 + rng.below(vocab as u64) as u32)
                    .collect()
            })
            .collect();
        let discount = -(0.5 + 2.0 * rng.unit());
        let all: Vec<u32> = (1..=vocab).collect();
        let bias = build_biasing_fst(&all, &phrases, discount).unwrap();
        let ours = biased_best_path(&lat, &bias).expect("lattice has a final state");
        let mut lf = lat.to_fst();
        tr_sort(&mut lf, OLabelCompare {});
        let composed: VectorFst<TropicalWeight> = compose(lf, bias.clone()).unwrap();
        let best: VectorFst<TropicalWeight> = shortest_path(&composed).unwrap();
        let (words, cost) = path_words(&best);
        assert!(
            (ours.cost() - cost).abs() < 1e-3,
            "case {case}: ours {} rustfst {cost}",
            ours.cost()
        );
        assert_eq!(ours.path.words, words, "case {case}");
        // The lattice's own costs of the chosen path are kept apart from the bias.
        let plain = lat.best_path().unwrap();
        assert!(ours.path.cost() >= plain.cost() - 1e-4);
        assert!(ours.bias <= 0.0);
    }
}

#[test]
fn prefix_automaton_equals_the_biasing_fst() {
    // Small vocabularies and overlapping phrases, so that prefixes nest, repeat and restart.
    let mut rng = Rng(7);
    let mut differ = 0;
    for case in 0..400 {
        let vocab = 3 + (case % 4) as u32;
        let lat = random_lattice(&mut rng, 4 + (case % 9) as u32, vocab);
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(5))
            .map(|_| {
                (0..1 + rng.below(4))
                    .map(|_| 1 + rng.below(vocab as u64) as u32)
                    .collect()
            })
            .collect();
        let discount = -(0.2 + 3.0 * rng.unit());
        let all: Vec<u32> = (1..=vocab).collect();
        let fst = biased_best_path(&lat, &build_biasing_fst(&all, &phrases, discount).unwrap())
            .expect("lattice has a final state");
        let auto =
            prefix_biased_best_path(&lat, &PhraseAutomaton::new(&phrases, discount).unwrap())
                .expect("lattice has a final state");
        assert!(
            (fst.cost() - auto.cost()).abs() < 1e-4,
            "case {case}: FST {} automaton {}",
            fst.cost(),
            auto.cost()
        );
        assert!((fst.bias - auto.bias).abs() < 1e-4, "case {case}");
        assert_eq!(fst.path.words, auto.path.words, "case {case}");
        // The bias is the automaton's cost of the chosen words.
        let again = PhraseAutomaton::new(&phrases, discount)
            .unwrap()
            .sentence_cost(&auto.path.words);
        assert!((again - auto.bias).abs() < 1e-4, "case {case}");
        if auto.path.words != lat.best_path().unwrap().words {
            differ += 1;
        }
    }
    // The cases must exercise biasing: in many of them the biased path is not the plain one.
    assert!(differ > 40, "only {differ} cases changed the path");
}

#[test]
fn biasing_flips_to_the_phrase() {
    // Two competing paths: "ryanair one two" (cost 10) vs "ryan air one two" (cost 9).
    let (ryanair, ryan, air, one, two) = (1, 2, 3, 4, 5);
    let arcs = vec![
        WlArc {
            from: 0,
            to: 2,
            word: ryanair,
            graph: 4.0,
            ac: 2.0,
            row: 0,
        },
        WlArc {
            from: 0,
            to: 1,
            word: ryan,
            graph: 2.0,
            ac: 1.5,
            row: 0,
        },
        WlArc {
            from: 1,
            to: 2,
            word: air,
            graph: 1.0,
            ac: 0.5,
            row: 5,
        },
        WlArc {
            from: 2,
            to: 3,
            word: one,
            graph: 1.0,
            ac: 1.0,
            row: 9,
        },
        WlArc {
            from: 3,
            to: 4,
            word: two,
            graph: 1.0,
            ac: 1.0,
            row: 12,
        },
    ];
    let finals = vec![(f32::INFINITY, 0.0); 4]
        .into_iter()
        .chain([(0.0, 0.0)])
        .collect();
    let lat = WordLattice::from_parts(15, finals, arcs).unwrap();
    assert_eq!(lat.best_path().unwrap().words, vec![ryan, air, one, two]);
    let vocab = [1, 2, 3, 4, 5];
    // Discount −0.4 per word: the phrase path (10) earns −1.2 and beats the baseline (9).
    let b = build_biasing_fst(&vocab, &[vec![ryanair, one, two]], -0.4).unwrap();
    let r = biased_best_path(&lat, &b).unwrap();
    assert_eq!(r.path.words, vec![ryanair, one, two]);
    assert!((r.bias + 1.2).abs() < 1e-5);
    assert!((r.path.cost() - 10.0).abs() < 1e-5);
    // A smaller discount leaves the baseline; the unigram "one two" part matches in both.
    let b = build_biasing_fst(&vocab, &[vec![ryanair, one, two]], -0.2).unwrap();
    let r = biased_best_path(&lat, &b).unwrap();
    assert_eq!(r.path.words, vec![ryan, air, one, two]);
    assert!(r.bias.abs() < 1e-6);
}

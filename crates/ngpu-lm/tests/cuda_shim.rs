//! The kernels of `kernels/ngpu_lm.cu` on the CPU shim device give exactly the CPU queries'
//! scores (same bits) and next states, for full-vocabulary, sparse and final-weight queries on
//! random LMs, pruned and not; bad batches are errors. Where a GPU answers (the GPU bundle's run)
//! every check runs on it too, checking the device's own arithmetic.

mod common;

use common::random_lm;
use ctx_cuda::cuda::CudaDevice;
use ctx_cuda::shim::ShimDevice;
use ctx_cuda::Device;
use ctx_data::rng::Rng;
use ngpu_lm::{DeviceLm, NgramLm};

/// The shim (threads in order, reversed, and on two OS threads at once), and the GPU when one
/// answers (said once on stderr when none does).
fn devices() -> Vec<Box<dyn Device>> {
    let mut v: Vec<Box<dyn Device>> = vec![
        Box::new(ShimDevice::with_schedule(0)),
        Box::new(ShimDevice::with_schedule(1)),
        Box::new(ShimDevice::with_schedule(0).with_threads(2)),
    ];
    match CudaDevice::open() {
        Ok(d) => v.push(Box::new(d)),
        Err(e) => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("GPU parity SKIPPED (shim only): {e}"));
        }
    }
    v
}

/// Random reachable states: walks from `<s>` along random labels.
fn walk_states(arr: &NgramLm, rng: &mut Rng, n: usize) -> Vec<u32> {
    let v = arr.vocab_size();
    let mut out = vec![arr.bos_state(), arr.unigram_state()];
    let mut s = arr.bos_state();
    while out.len() < n {
        let (_, t) = arr.score(s, rng.below(v) as u32);
        s = if rng.chance(0.1) { arr.bos_state() } else { t };
        out.push(s);
    }
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn device_queries_equal_cpu_queries_bit_for_bit() {
    let mut rng = Rng::new(11);
    for (i, (order, pruned)) in [(2, false), (3, true), (4, false), (5, true), (6, true)]
        .into_iter()
        .enumerate()
    {
        let lm = random_lm(100 + i as u64, 9 + 3 * i, order, pruned);
        let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
        for d in devices() {
            let mut dev = DeviceLm::new(&arr, d).unwrap();
            let v = arr.vocab_size();
            let states = walk_states(&arr, &mut rng, 37);
            let b = states.len();

            let (mut cs, mut cn) = (vec![0f32; b * v], vec![0u32; b * v]);
            arr.advance(&states, &mut cs, &mut cn).unwrap();
            let (mut gs, mut gn) = (vec![1f32; b * v], vec![7u32; b * v]);
            dev.advance(&states, &mut gs, &mut gn).unwrap();
            assert_eq!(
                bits(&cs),
                bits(&gs),
                "order {order}: full-vocabulary scores"
            );
            assert_eq!(cn, gn, "order {order}: next states");

            let k = 5;
            let labels: Vec<u32> = (0..b * k).map(|_| rng.below(v) as u32).collect();
            let (mut cs, mut cn) = (vec![0f32; b * k], vec![0u32; b * k]);
            arr.advance_sparse(&states, &labels, &mut cs, &mut cn)
                .unwrap();
            let (mut gs, mut gn) = (vec![1f32; b * k], vec![7u32; b * k]);
            dev.advance_sparse(&states, &labels, &mut gs, &mut gn)
                .unwrap();
            assert_eq!(bits(&cs), bits(&gs), "order {order}: sparse scores");
            assert_eq!(cn, gn, "order {order}: sparse next states");

            let (mut cf, mut gf) = (vec![0f32; b], vec![1f32; b]);
            arr.final_weights(&states, &mut cf).unwrap();
            dev.final_weights(&states, &mut gf).unwrap();
            assert_eq!(bits(&cf), bits(&gf), "order {order}: final weights");

            // A smaller batch after a larger one reuses the buffers and still answers exactly.
            let few = &states[3..5];
            let (mut cs, mut cn) = (vec![0f32; 2 * v], vec![0u32; 2 * v]);
            arr.advance(few, &mut cs, &mut cn).unwrap();
            let (mut gs, mut gn) = (vec![0f32; 2 * v], vec![0u32; 2 * v]);
            dev.advance(few, &mut gs, &mut gn).unwrap();
            assert_eq!((bits(&cs), cn), (bits(&gs), gn));
        }
    }
}

#[test]
fn a_vocabulary_wider_than_the_grid_is_covered() {
    // V beyond 64 blocks × 256 threads: threads must stride over the rest of the row.
    let lm = random_lm(7, 17_000, 2, false);
    let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
    let v = arr.vocab_size();
    assert!(v > 64 * 256);
    let states = [arr.bos_state(), 5, arr.unigram_state()];
    let (mut cs, mut cn) = (vec![0f32; 3 * v], vec![0u32; 3 * v]);
    arr.advance(&states, &mut cs, &mut cn).unwrap();
    for d in devices() {
        let mut dev = DeviceLm::new(&arr, d).unwrap();
        let (mut gs, mut gn) = (vec![f32::NAN; 3 * v], vec![0u32; 3 * v]);
        dev.advance(&states, &mut gs, &mut gn).unwrap();
        assert_eq!(bits(&cs), bits(&gs), "{}", dev.device_name());
        assert_eq!(cn, gn);
    }
}

#[test]
fn bad_device_queries_are_errors() {
    let lm = random_lm(4, 5, 3, false);
    let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
    let mut dev = DeviceLm::new(&arr, Box::new(ShimDevice::new())).unwrap();
    let v = arr.vocab_size();
    let big = arr.num_states() as u32;
    let (mut s, mut n) = (vec![0f32; v], vec![0u32; v]);
    let e = dev.advance(&[big], &mut s, &mut n).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    assert!(dev.advance(&[0, 0], &mut s, &mut n).is_err());
    let (mut s1, mut n1) = (vec![0f32; 1], vec![0u32; 1]);
    assert!(dev
        .advance_sparse(&[0], &[v as u32], &mut s1, &mut n1)
        .is_err());
    let mut f = vec![0f32; 2];
    assert!(dev.final_weights(&[0], &mut f).is_err());
}

#[test]
fn batches_beyond_one_grid_launch_in_slices() {
    // More rows than a grid's y dimension holds (65,535): launched in slices, same answers.
    let lm = random_lm(9, 3, 3, false);
    let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
    let v = arr.vocab_size();
    let mut rng = Rng::new(2);
    let states: Vec<u32> = (0..70_000)
        .map(|_| rng.below(arr.num_states()) as u32)
        .collect();
    let b = states.len();
    let (mut cs, mut cn) = (vec![0f32; b * v], vec![0u32; b * v]);
    arr.advance(&states, &mut cs, &mut cn).unwrap();
    let mut dev = DeviceLm::new(&arr, Box::new(ShimDevice::new())).unwrap();
    let (mut gs, mut gn) = (vec![0f32; b * v], vec![0u32; b * v]);
    dev.advance(&states, &mut gs, &mut gn).unwrap();
    assert_eq!((bits(&cs), cn), (bits(&gs), gn));
    let labels: Vec<u32> = (0..b * 2).map(|_| rng.below(v) as u32).collect();
    let (mut cs, mut cn) = (vec![0f32; b * 2], vec![0u32; b * 2]);
    arr.advance_sparse(&states, &labels, &mut cs, &mut cn)
        .unwrap();
    let (mut gs, mut gn) = (vec![0f32; b * 2], vec![0u32; b * 2]);
    dev.advance_sparse(&states, &labels, &mut gs, &mut gn)
        .unwrap();
    assert_eq!((bits(&cs), cn), (bits(&gs), gn));
}

/// A boosting tree is queried by the same kernels: icefall's phrases under each matching rule
/// (NeMo's with depth scaling), full-vocabulary, sparse and final queries on the device equal the
/// CPU's bit for bit from every trie node (deep back-off chains included).
#[test]
fn boosting_trees_on_the_device_equal_the_cpu() {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Matching, Phrase};
    let phrases: Vec<Phrase> = [
        "S", "HE", "SHE", "SHELL", "HIS", "HERS", "HELLO", "THIS", "THEM",
    ]
    .iter()
    .map(|p| Phrase::keyword(p.bytes().map(|b| (b - b'A') as u32).collect(), None))
    .chain([Phrase {
        labels: vec![7, 4, 11, 11],
        score: Some(0.0),
        end_bonus: 0.7,
    }])
    .collect();
    for (matching, depth_scaling) in [
        (Matching::Strict, None),
        (Matching::NonStrict, None),
        (Matching::Nemo, Some(1.5)),
    ] {
        let opts = BoostOptions {
            unk_score: 0.0,
            default_score: 2.0,
            matching,
            depth_scaling,
        };
        let (tree, rep) = boosting_tree(&phrases, 26, &opts).unwrap();
        let states: Vec<u32> = (0..rep.nodes as u32).collect();
        let (b, v) = (states.len(), tree.vocab_size());
        for d in devices() {
            let mut dev = DeviceLm::new(&tree, d).unwrap();
            let (mut cs, mut cn) = (vec![0f32; b * v], vec![0u32; b * v]);
            tree.advance(&states, &mut cs, &mut cn).unwrap();
            let (mut gs, mut gn) = (vec![1f32; b * v], vec![7u32; b * v]);
            dev.advance(&states, &mut gs, &mut gn).unwrap();
            assert_eq!(bits(&cs), bits(&gs), "{matching:?}: scores");
            assert_eq!(cn, gn, "{matching:?}: next states");
            let labels: Vec<u32> = (0..b as u32).map(|i| (i * 7) % 26).collect();
            let (mut cs, mut cn) = (vec![0f32; b], vec![0u32; b]);
            tree.advance_sparse(&states, &labels, &mut cs, &mut cn)
                .unwrap();
            let (mut gs, mut gn) = (vec![1f32; b], vec![7u32; b]);
            dev.advance_sparse(&states, &labels, &mut gs, &mut gn)
                .unwrap();
            assert_eq!(bits(&cs), bits(&gs), "{matching:?}: sparse scores");
            assert_eq!(cn, gn, "{matching:?}: sparse next states");
            let mut cf = vec![0f32; b];
            tree.final_weights(&states, &mut cf).unwrap();
            let mut gf = vec![1f32; b];
            dev.final_weights(&states, &mut gf).unwrap();
            assert_eq!(bits(&cf), bits(&gf), "{matching:?}: final weights");
        }
    }
}

/// Two LMs and three keyword trees over one vocabulary of `v` labels.
fn mixed_trees(v: usize) -> Vec<NgramLm> {
    use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
    let lm_a = random_lm(201, v, 3, false);
    let labels = NgramLm::labels_of(&lm_a);
    assert_eq!(labels.len(), v + 1, "w0..w{{v-1}} and <unk>");
    let lm = |a: &ctx_core::arpa::ArpaLm| NgramLm::from_arpa(a, &labels).unwrap().0;
    let lm_b = random_lm(202, v, 4, true);
    let mut rng = Rng::new(5);
    let tree = |rng: &mut Rng| {
        let ph: Vec<Phrase> = (0..4)
            .map(|_| {
                let n = 1 + rng.below(4);
                let l: Vec<u32> = (0..n).map(|_| rng.below(v + 1) as u32).collect();
                Phrase::keyword(l, Some(0.5 + rng.below(4) as f32 * 0.5))
            })
            .collect();
        boosting_tree(&ph, v + 1, &BoostOptions::default())
            .unwrap()
            .0
    };
    vec![
        lm(&lm_a),
        tree(&mut rng),
        lm(&lm_b),
        tree(&mut rng),
        tree(&mut rng),
    ]
}

#[test]
fn a_forest_row_gives_its_trees_scores_on_the_cpu_and_on_devices() {
    use ngpu_lm::Forest;
    let v = 12;
    let trees = mixed_trees(v);
    let refs: Vec<&NgramLm> = trees.iter().collect();
    let forest = Forest::new(&refs).unwrap();
    let w = v + 1;
    let mut rng = Rng::new(9);
    // Rows from every tree, interleaved: (forest state, root) and the tree's own answer.
    let (mut states, mut roots, mut want_s, mut want_n) = (vec![], vec![], vec![], vec![]);
    for round in 0..3 {
        for (k, t) in trees.iter().enumerate() {
            let r = forest.roots()[k];
            for s in walk_states(t, &mut rng, 5 + round) {
                let (mut sc, mut nx) = (vec![0f32; w], vec![0u32; w]);
                t.advance(&[s], &mut sc, &mut nx).unwrap();
                states.push(s + r);
                roots.push(r);
                want_s.extend(bits(&sc));
                want_n.extend(nx.iter().map(|&x| x + r));
            }
        }
    }
    let b = states.len();
    let (mut cs, mut cn) = (vec![0f32; b * w], vec![0u32; b * w]);
    forest
        .advance_rooted(&states, &roots, &mut cs, &mut cn)
        .unwrap();
    assert_eq!(bits(&cs), want_s, "CPU forest scores");
    assert_eq!(cn, want_n, "CPU forest next states");
    for d in devices() {
        let name = d.name();
        let mut dev = DeviceLm::new_forest(&forest, d).unwrap();
        let (mut gs, mut gn) = (vec![1f32; b * w], vec![7u32; b * w]);
        dev.advance_rooted(&states, &roots, &mut gs, &mut gn)
            .unwrap();
        assert_eq!(bits(&gs), want_s, "{name}: forest scores");
        assert_eq!(gn, want_n, "{name}: forest next states");
        // Every row from the first tree's root is what the plain query gives.
        let first: Vec<u32> = states
            .iter()
            .zip(&roots)
            .filter(|(_, &r)| r == 0)
            .map(|(&s, _)| s)
            .collect();
        let n = first.len();
        let (mut ps, mut pn) = (vec![0f32; n * w], vec![0u32; n * w]);
        dev.advance(&first, &mut ps, &mut pn).unwrap();
        let (mut qs, mut qn) = (vec![0f32; n * w], vec![0u32; n * w]);
        trees[0].advance(&first, &mut qs, &mut qn).unwrap();
        assert_eq!((bits(&ps), pn), (bits(&qs), qn), "{name}: root-0 rows");
        // A root that is not one, and a state outside its row's tree, are named errors.
        let bad_root = roots[0] + 1;
        let e = dev
            .advance_rooted(&states[..1], &[bad_root], &mut gs[..w], &mut gn[..w])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a tree's root"), "{e}");
        let other = forest.roots()[1];
        let e = dev
            .advance_rooted(&[other], &[0], &mut gs[..w], &mut gn[..w])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not in the tree rooted at 0"), "{e}");
    }
    // Trees over different vocabularies do not make a forest.
    let small = mixed_trees(7);
    let e = Forest::new(&[&trees[0], &small[1]])
        .unwrap_err()
        .to_string();
    assert!(e.contains("share one vocabulary"), "{e}");
}

/// A walk whose steps never leave the device (`walk_resident`: advance, then each row to its
/// label's next state) picks exactly the scores and ends in exactly the states of the same walk
/// on the CPU, in two launches per step and two copies back in all; bad walks are errors.
#[test]
fn a_resident_walk_equals_the_cpu_walk() {
    let mut rng = Rng::new(21);
    for (i, order) in [2usize, 3, 5].into_iter().enumerate() {
        let lm = random_lm(300 + i as u64, 12 + 2 * i, order, i % 2 == 1);
        let (arr, _, _) = NgramLm::from_arpa_words(&lm).unwrap();
        let v = arr.vocab_size();
        let start = walk_states(&arr, &mut rng, 9);
        let b = start.len();
        let steps = 7;
        let labels: Vec<u32> = (0..steps * b).map(|_| rng.below(v) as u32).collect();
        // The CPU walk.
        let (mut states, mut picked) = (start.clone(), Vec::new());
        let (mut cs, mut cn) = (vec![0f32; b * v], vec![0u32; b * v]);
        for t in 0..steps {
            arr.advance(&states, &mut cs, &mut cn).unwrap();
            for (r, s) in states.iter_mut().enumerate() {
                let l = labels[t * b + r] as usize;
                picked.push(cs[r * v + l]);
                *s = cn[r * v + l];
            }
        }
        for d in devices() {
            let mut dev = DeviceLm::new(&arr, d).unwrap();
            let w = dev.walk_resident(&start, &labels).unwrap();
            assert_eq!(
                bits(&w.picked),
                bits(&picked),
                "order {order}: picked scores"
            );
            assert_eq!(w.states, states, "order {order}: last states");
            assert_eq!((w.launches, w.readbacks), (2 * steps, 2));
            // A partial step and a label outside the vocabulary are refused.
            let e = dev.walk_resident(&start, &labels[1..]).unwrap_err();
            assert!(e.to_string().contains("whole steps"), "{e}");
            let mut bad = labels.clone();
            bad[3] = v as u32;
            let e = dev.walk_resident(&start, &bad).unwrap_err();
            assert!(e.to_string().contains("outside the vocabulary"), "{e}");
        }
    }
}

//! Helpers shared by the engine's integration tests: a seeded generator, random graphs and the
//! brute-force search they are checked against.
#![allow(dead_code)]

use ctx_core::scores::ScoreMatrix;
use ctx_cuda::shim::ShimDevice;
use ctx_cuda::Device;
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeMap;

/// Tiny deterministic generator (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Random scores in [−4, 0): `rows` × `cols`.
pub fn random_scores(rng: &mut Rng, rows: usize, cols: usize) -> ScoreMatrix {
    let data = (0..rows * cols).map(|_| -4.0 * rng.unit()).collect();
    ScoreMatrix::new(rows, cols, data).unwrap()
}

/// Input labels of the random graphs (score columns).
pub const LABELS: u32 = 3;

/// A random graph: emitting arcs anywhere, ε arcs only forward (no ε cycles), an output word
/// `1..=words` on one emitting arc in `word_one_in`, word 5 on about half the ε arcs, a few
/// final states.
pub fn random_graph(rng: &mut Rng, states: u32, words: u32, word_one_in: u64) -> StdFst {
    let mut fst = StdFst::new();
    for _ in 0..states {
        fst.add_state();
    }
    fst.set_start(0).unwrap();
    for s in 0..states {
        for _ in 0..1 + rng.below(3) {
            let il = 1 + rng.below(LABELS as u64) as u32;
            let ol = if rng.below(word_one_in) == 0 {
                1 + rng.below(words as u64) as u32
            } else {
                0
            };
            let d = rng.below(states as u64) as u32;
            fst.add_tr(s, Tr::new(il, ol, 2.0 * rng.unit(), d)).unwrap();
        }
        if s + 1 < states && rng.below(2) == 0 {
            let d = s + 1 + rng.below((states - s - 1) as u64) as u32;
            let ol = if rng.below(2) == 0 { 5 } else { 0 };
            fst.add_tr(s, Tr::new(0, ol, rng.unit(), d)).unwrap();
        }
        if rng.below(3) == 0 {
            fst.set_final(s, rng.unit()).unwrap();
        }
    }
    fst
}

/// Every complete path (final states only): the best cost per word sequence, with `lm(words)`
/// added (sequences it makes infinite are left out).
pub fn brute_force(
    fst: &StdFst,
    scores: &ScoreMatrix,
    scale: f32,
    lm: &dyn Fn(&[u32]) -> f32,
) -> BTreeMap<Vec<u32>, f32> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(u32, usize, Vec<u32>, f32)> = vec![(0, 0, Vec::new(), 0.0)];
    while let Some((s, t, words, cost)) = stack.pop() {
        if t == scores.rows() {
            if let Some(f) = fst.final_weight(s).unwrap() {
                let c = cost + *f.value() + lm(&words);
                if c.is_finite() {
                    let e = out.entry(words.clone()).or_insert(f32::INFINITY);
                    *e = e.min(c);
                }
            }
        }
        for tr in fst.get_trs(s).unwrap().trs() {
            let mut ws = words.clone();
            if tr.olabel != 0 {
                ws.push(tr.olabel);
            }
            if tr.ilabel == 0 {
                stack.push((tr.nextstate, t, ws, cost + *tr.weight.value()));
            } else if t < scores.rows() {
                let ac = -scale * scores.row(t)[tr.ilabel as usize - 1];
                stack.push((tr.nextstate, t + 1, ws, cost + *tr.weight.value() + ac));
            }
        }
    }
    out
}

/// The shim with its threads in order, reversed and shuffled (a kernel whose output depends
/// on which thread runs first differs between them, as it would between GPU runs), each grid
/// also on three OS threads at once (the kernels' threads truly interleave: a race between
/// them can change the result), and the GPU when one answers (said once on stderr when none
/// does).
pub fn devices() -> Vec<(&'static str, Box<dyn Device>)> {
    let mut v: Vec<(&'static str, Box<dyn Device>)> = vec![
        ("threads in order", Box::new(ShimDevice::with_schedule(0))),
        ("threads reversed", Box::new(ShimDevice::with_schedule(1))),
        (
            "threads shuffled",
            Box::new(ShimDevice::with_schedule(0x5eed)),
        ),
        (
            "threads shuffled, 3 OS threads at once",
            Box::new(ShimDevice::with_schedule(0x5eed).with_threads(3)),
        ),
    ];
    match ctx_cuda::cuda::CudaDevice::open() {
        Ok(d) => v.push(("GPU", Box::new(d))),
        Err(e) => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("GPU parity SKIPPED (shim only): {e}"));
        }
    }
    v
}

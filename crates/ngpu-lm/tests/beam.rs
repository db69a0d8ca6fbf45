//! Beam-search baselines against brute force on tiny models: with a beam wide enough to keep
//! every hypothesis, CTC prefix beam search, RNN-T modified beam search and AED beam search find
//! the label sequence of highest total score (model probability summed over alignments, plus
//! α·LM + β per label and α·LM(</s>)), with and without an LM; the classic case where prefix
//! merging beats greedy; and a narrow beam stays deterministic.

mod common;

use common::random_lm;
use ctx_core::e2e::{Aed, Transducer};
use ctx_core::scores::ScoreMatrix;
use ctx_data::rng::Rng;
use ngpu_lm::beam::{beam_aed, beam_ctc, beam_ctc_nbest, beam_transducer};
use ngpu_lm::fusion::{greedy_ctc, Fusion};
use ngpu_lm::NgramLm;
use std::collections::HashMap;

fn log_add(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + (lo - hi).exp().ln_1p()
}

fn log_softmax(v: &mut [f32]) {
    let m = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let s = m + v.iter().map(|x| (x - m).exp()).sum::<f32>().ln();
    v.iter_mut().for_each(|x| *x -= s);
}

fn random_row(rng: &mut Rng, w: usize) -> Vec<f32> {
    let mut r: Vec<f32> = (0..w).map(|_| (3.0 * rng.normal()) as f32).collect();
    log_softmax(&mut r);
    r
}

/// An LM over labels w0, w1, w2 (columns 1..=3).
fn lm3(seed: u64) -> NgramLm {
    let arpa = random_lm(seed, 3, 3, false);
    let labels: Vec<String> = (0..3).map(|i| format!("w{i}")).collect();
    NgramLm::from_arpa(&arpa, &labels).unwrap().0
}

/// α·ln p_LM(labels </s>) + β·|labels|.
fn lm_total(f: &Fusion, labels: &[u32]) -> f64 {
    let Some(lm) = f.lm else { return 0.0 };
    let mut s = lm.bos_state();
    let mut total = 0.0f64;
    for &c in labels {
        let (w, t) = lm.score(s, c - 1);
        total += (f.alpha * w + f.bonus) as f64;
        s = t;
    }
    total + (f.alpha * lm.final_weight(s)) as f64
}

/// Every label sequence with its total score, best first.
fn ranked(scores: HashMap<Vec<u32>, f64>, f: &Fusion) -> Vec<(Vec<u32>, f64)> {
    let mut all: Vec<(Vec<u32>, f64)> = scores
        .into_iter()
        .map(|(l, s)| {
            let t = s + lm_total(f, &l);
            (l, t)
        })
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all
}

fn best_of(scores: HashMap<Vec<u32>, f64>, f: &Fusion) -> (Vec<u32>, f64) {
    ranked(scores, f).swap_remove(0)
}

fn fusions(lm: &NgramLm) -> Vec<Fusion<'_>> {
    vec![
        Fusion::none(),
        Fusion::with_lm(lm, 0.8),
        Fusion {
            bonus: -0.5,
            ..Fusion::with_lm(lm, 2.0)
        },
    ]
}

#[test]
fn prefix_merging_beats_greedy() {
    let (b, a) = (0.6f32.ln(), 0.4f32.ln());
    let mut m = ScoreMatrix::zeros(2, 2);
    m.row_mut(0).copy_from_slice(&[b, a]);
    m.row_mut(1).copy_from_slice(&[b, a]);
    // Greedy: blank, blank (0.36). The prefix "a" sums to 0.64 over its three alignments.
    let empty: Vec<Vec<u32>> = vec![vec![]];
    assert_eq!(greedy_ctc(&[&m], &Fusion::none()).unwrap(), empty);
    assert_eq!(beam_ctc(&[&m], &Fusion::none(), 4).unwrap(), vec![vec![1]]);
}

#[test]
fn ctc_prefix_beam_search_equals_brute_force() {
    let mut rng = Rng::new(3);
    for case in 0..40 {
        let lm = lm3(10 + case);
        let (t, w) = (4 + (case as usize % 2), 4);
        let mut m = ScoreMatrix::zeros(t, w);
        for i in 0..t {
            m.row_mut(i).copy_from_slice(&random_row(&mut rng, w));
        }
        // Every alignment, collapsed: repeats merged, blanks removed.
        let mut by_labels: HashMap<Vec<u32>, f64> = HashMap::new();
        for code in 0..w.pow(t as u32) {
            let (mut c, mut prev, mut labels, mut lp) = (code, 0u32, Vec::new(), 0.0f64);
            for i in 0..t {
                let k = (c % w) as u32;
                c /= w;
                lp += m.row(i)[k as usize] as f64;
                if k != 0 && k != prev {
                    labels.push(k);
                }
                prev = k;
            }
            let e = by_labels.entry(labels).or_insert(f64::NEG_INFINITY);
            *e = log_add(*e, lp);
        }
        for f in fusions(&lm) {
            let (want, _) = best_of(by_labels.clone(), &f);
            let got = beam_ctc(&[&m], &f, 1000).unwrap();
            assert_eq!(got[0], want, "case {case}, α {}", f.alpha);
            // The final beam is the ranking of every sequence (its first five; the n-best
            // oracle reads it).
            let nbest = beam_ctc_nbest(&[&m], &f, 1000).unwrap();
            let want: Vec<Vec<u32>> = ranked(by_labels.clone(), &f)
                .into_iter()
                .take(5)
                .map(|(l, _)| l)
                .collect();
            assert_eq!(nbest[0][..5], want[..], "case {case}, α {}", f.alpha);
            // A beam of 3 keeps at most 3, the best first.
            let narrow = beam_ctc_nbest(&[&m], &f, 3).unwrap();
            assert!(narrow[0].len() <= 3);
            assert_eq!(narrow[0][0], beam_ctc(&[&m], &f, 3).unwrap()[0]);
        }
    }
}

/// A transducer given by a table: joint by (frame, labels emitted); no durations.
struct TableT {
    rows: Vec<Vec<Vec<f32>>>,
}

impl Transducer for TableT {
    fn frames(&self) -> usize {
        self.rows.len()
    }
    fn width(&self) -> usize {
        4
    }
    fn durations(&self) -> &[u32] {
        &[]
    }
    fn start(&self) -> u32 {
        0
    }
    fn joint(&self, t: usize, state: u32, labels: &mut [f32], _d: &mut [f32]) {
        labels.copy_from_slice(&self.rows[t][state as usize]);
    }
    fn next(&self, _t: usize, state: u32, _label: u32) -> u32 {
        state + 1
    }
}

#[test]
fn rnnt_modified_beam_search_equals_brute_force() {
    let mut rng = Rng::new(5);
    for case in 0..30 {
        let lm = lm3(50 + case);
        let t = 4;
        let model = TableT {
            rows: (0..t)
                .map(|_| (0..=t).map(|_| random_row(&mut rng, 4)).collect())
                .collect(),
        };
        // Every path with at most one label per frame (blank or a label on each frame).
        let mut by_labels: HashMap<Vec<u32>, f64> = HashMap::new();
        for code in 0..4usize.pow(t as u32) {
            let (mut c, mut labels, mut lp) = (code, Vec::new(), 0.0f64);
            for i in 0..t {
                let k = c % 4;
                c /= 4;
                let row = &model.rows[i][labels.len()];
                lp += row[k] as f64;
                if k != 0 {
                    // Modified beam search: a label also moves on to the next frame.
                    labels.push(k as u32);
                }
            }
            let e = by_labels.entry(labels).or_insert(f64::NEG_INFINITY);
            *e = log_add(*e, lp);
        }
        for f in fusions(&lm) {
            let (want, _) = best_of(by_labels.clone(), &f);
            let got = beam_transducer(std::slice::from_ref(&model), &f, 1000, 5).unwrap();
            assert_eq!(got[0], want, "case {case}, α {}", f.alpha);
        }
    }
}

/// An AED given by a table: the step distribution by prefix length.
struct TableA(Vec<Vec<f32>>);

impl Aed for TableA {
    fn width(&self) -> usize {
        4
    }
    fn max_len(&self) -> usize {
        self.0.len() - 1
    }
    fn start(&self) -> u32 {
        0
    }
    fn step(&self, state: u32, out: &mut [f32]) {
        out.copy_from_slice(&self.0[state as usize]);
    }
    fn next(&self, state: u32, _label: u32) -> u32 {
        state + 1
    }
}

#[test]
fn aed_beam_search_equals_brute_force() {
    let mut rng = Rng::new(8);
    for case in 0..30 {
        let lm = lm3(80 + case);
        // Lengths 0..=3; at length 3 end of sequence is (almost) certain.
        let mut rows: Vec<Vec<f32>> = (0..3).map(|_| random_row(&mut rng, 4)).collect();
        let mut last = vec![0.0f32, -30.0, -30.0, -30.0];
        log_softmax(&mut last);
        rows.push(last.clone());
        rows.push(last);
        let model = TableA(rows);
        let mut by_labels: HashMap<Vec<u32>, f64> = HashMap::new();
        let mut seqs: Vec<Vec<u32>> = vec![vec![]];
        for len in 1..=3 {
            let prev: Vec<Vec<u32>> = seqs
                .iter()
                .filter(|s| s.len() == len - 1)
                .cloned()
                .collect();
            for p in prev {
                for c in 1..=3u32 {
                    let mut s = p.clone();
                    s.push(c);
                    seqs.push(s);
                }
            }
        }
        for s in seqs {
            let lp: f64 = s
                .iter()
                .enumerate()
                .map(|(i, &c)| model.0[i][c as usize] as f64)
                .sum::<f64>()
                + model.0[s.len()][0] as f64;
            by_labels.insert(s, lp);
        }
        for f in fusions(&lm) {
            // Ended hypotheses rank by total score per (label + end of sequence).
            let normalised: HashMap<Vec<u32>, f64> = by_labels
                .iter()
                .map(|(l, s)| (l.clone(), (s + lm_total(&f, l)) / (l.len() + 1) as f64))
                .collect();
            let (want, _) = best_of(normalised, &Fusion::none());
            let got = beam_aed(std::slice::from_ref(&model), &f, 1000).unwrap();
            assert_eq!(got[0], want, "case {case}, α {}", f.alpha);
        }
    }
}

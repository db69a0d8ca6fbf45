//! Simulated acoustics: documented shape, determinism, and accuracy falling with noise.

use ctx_data::acoustic::{phone_distance, CtcSim, HybridSim};
use ctx_data::bpe::Bpe;
use ctx_data::pronounce::Pronouncer;
use ctx_data::registry::{AcousticSpec, CtcAcousticSpec};
use std::path::Path;

fn pron() -> Pronouncer {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    Pronouncer::from_cmudict(&root.join("cmudict/cmudict.dict.gz")).unwrap()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn knobs(noise: f64) -> AcousticSpec {
    AcousticSpec {
        noise,
        noise_spread: 0.0,
        noise_corr: 0.0,
        confusion: 0.0,
        rare_confusion: 0.0,
        rare_count: 1.0,
        seed: 3,
    }
}

fn ctc_knobs(noise: f64) -> CtcAcousticSpec {
    CtcAcousticSpec {
        noise,
        noise_spread: 0.3,
        confusion: 0.05,
        margin: 6.0,
        acoustic_scale: 1.0,
        confusion_gap: 1.5,
        rare_confusion: 0.0,
        rare_count: 1.0,
        low_resource_confusion: None,
        in_domain_confusion: None,
        internal_lm: 0.0,
        in_domain: false,
        seed: 7,
    }
}

fn argmax(row: &[f32]) -> u32 {
    row.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0 as u32
}

fn accuracy(m: &ctx_core::scores::ScoreMatrix, truth: &[u32]) -> f64 {
    let ok = (0..m.rows())
        .filter(|&t| argmax(m.row(t)) == truth[t])
        .count();
    ok as f64 / m.rows() as f64
}

const UTTS: [&str; 3] = [
    "lufthansa five kilo x-ray descend flight level one two zero",
    "ryanair one romeo kilo contact zurich radar one three two decimal eight five",
    "good morning swiss two six eight nine cleared ils approach runway one four",
];

#[test]
fn phone_distance_follows_articulation() {
    assert_eq!(phone_distance("P", "P"), 0.0);
    assert!(phone_distance("P", "B") < phone_distance("P", "S"));
    assert!(phone_distance("IY", "IH") < phone_distance("IY", "AA"));
    assert_eq!(phone_distance("P", "AA"), 1.0, "consonant vs vowel");
    assert_eq!(phone_distance("SIL", "AA"), 1.0);
}

#[test]
fn hybrid_scores_have_the_documented_shape_and_degrade_with_noise() {
    let p = pron();
    let sim = HybridSim::new(knobs(0.5), 2);
    let (m, truth) = sim.simulate("u1", &words(UTTS[0]), 3.0, &p).unwrap();
    assert_eq!(m.cols(), 80, "40 units x 2 states");
    assert_eq!(m.rows(), 100, "3 s at 30 ms");
    assert_eq!(truth.len(), 100);
    // Frames start and end in silence (unit 0: pdfs 0 and 1).
    assert!(truth[0] < 2 && truth[99] < 2);
    // The same utterance id gives the same matrix; another id another one.
    let (m2, _) = sim.simulate("u1", &words(UTTS[0]), 3.0, &p).unwrap();
    assert_eq!(m.data(), m2.data());
    let (m3, _) = sim.simulate("u2", &words(UTTS[0]), 3.0, &p).unwrap();
    assert_ne!(m.data(), m3.data());
    // Accuracy of the frame-wise argmax: near perfect at low noise, falling as noise grows.
    let mut accs = Vec::new();
    for noise in [0.5, 2.0, 4.0, 8.0] {
        let sim = HybridSim::new(knobs(noise), 2);
        let mut acc = 0.0;
        for (i, u) in UTTS.iter().enumerate() {
            let (m, t) = sim.simulate(&format!("n{i}"), &words(u), 4.0, &p).unwrap();
            acc += accuracy(&m, &t) / UTTS.len() as f64;
        }
        accs.push(acc);
    }
    println!("hybrid frame accuracy by noise 0.5/2/4/8: {accs:?}");
    assert!(accs[0] > 0.99, "{accs:?}");
    assert!(accs.windows(2).all(|w| w[1] < w[0]), "{accs:?}");
    assert!(accs[3] < 0.5, "{accs:?}");
    // Confusions move frames to a near phone: with confusion = 1 every phone is replaced.
    let conf = HybridSim::new(
        AcousticSpec {
            confusion: 1.0,
            ..knobs(0.5)
        },
        1,
    );
    let (m, t) = conf.simulate("c", &words(UTTS[1]), 4.0, &p).unwrap();
    assert!(accuracy(&m, &t) < 0.5);
    // A token without letters or digits (a transcript's `*`) is not spoken at all.
    assert_eq!(
        sim.simulate("star", &words("hello * world"), 2.0, &p)
            .unwrap(),
        sim.simulate("star", &words("hello world"), 2.0, &p)
            .unwrap()
    );
    // Unpronounceable words are errors naming the utterance.
    let e = sim
        .simulate("bad-utt", &words("hello x☃y"), 1.0, &p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad-utt"), "{e}");
}

#[test]
fn ctc_scores_are_peaky_log_softmax_rows() {
    let text: Vec<String> = UTTS.iter().map(|s| s.to_string()).collect();
    let bpe = Bpe::train(&text, 60).unwrap();
    // No confusion events: the aligned tokens are the reference's pieces.
    let sim = CtcSim::new(
        CtcAcousticSpec {
            confusion: 0.0,
            ..ctc_knobs(0.3)
        },
        bpe.clone(),
    );
    let (m, truth) = sim.simulate("c1", &words(UTTS[2]), 8.0).unwrap();
    assert_eq!(m.cols(), 61, "blank + 60 pieces");
    assert_eq!(m.rows(), 200, "8 s at 40 ms");
    for t in 0..m.rows() {
        let lse: f64 = m.row(t).iter().map(|&x| (x as f64).exp()).sum::<f64>().ln();
        assert!(lse.abs() < 1e-4, "row {t} is not log-softmax: {lse}");
    }
    // Mostly blank; the non-blank frames spell the utterance (repeats collapsed, blanks removed).
    let blanks = truth.iter().filter(|&&x| x == 0).count();
    assert!(blanks * 2 > truth.len());
    let mut seq = Vec::new();
    for (i, &x) in truth.iter().enumerate() {
        if x != 0 && (i == 0 || truth[i - 1] != x) {
            seq.push(x);
        }
    }
    assert_eq!(bpe.decode(&seq), UTTS[2]);
    let mut accs = Vec::new();
    for noise in [0.3, 2.0, 4.0] {
        let sim = CtcSim::new(ctc_knobs(noise), bpe.clone());
        let (m, t) = sim.simulate("c2", &words(UTTS[0]), 8.0).unwrap();
        accs.push(accuracy(&m, &t));
    }
    println!("ctc frame accuracy by noise 0.3/2/4: {accs:?}");
    assert!(
        accs[0] > 0.99 && accs[1] < accs[0] && accs[2] < accs[1],
        "{accs:?}"
    );
}

/// The lag-1 autocorrelation and the standard deviation of one pdf's score noise: pdf 2 (unit
/// 1, AA, never said in these utterances), its value minus its mean over the frames of the same
/// true pdf (its gap depends only on that), consecutive frames paired within a true pdf.
fn noise_stats(m: &ctx_core::scores::ScoreMatrix, truth: &[u32]) -> (f64, f64) {
    let col = 2usize;
    let mut by_truth: std::collections::HashMap<u32, (f64, f64)> = Default::default();
    for (t, &u) in truth.iter().enumerate() {
        let e = by_truth.entry(u).or_default();
        e.0 += m.row(t)[col] as f64;
        e.1 += 1.0;
    }
    let dev = |t: usize| {
        let (sum, n) = by_truth[&truth[t]];
        m.row(t)[col] as f64 - sum / n
    };
    let mut pairs = Vec::new();
    for t in 1..m.rows() {
        if truth[t] == truth[t - 1] {
            pairs.push((dev(t - 1), dev(t)));
        }
    }
    let n = pairs.len() as f64;
    let cov = pairs.iter().map(|(x, y)| x * y).sum::<f64>() / n;
    let var = pairs.iter().map(|(x, _)| x * x).sum::<f64>() / n;
    (cov / var, var.sqrt())
}

#[test]
fn correlated_noise_drifts_from_frame_to_frame_at_the_same_level() {
    let p = pron();
    // One long utterance so the estimates are tight; the gap of AA's pdf differs between true
    // units, so only frames with the same true pdf are paired.
    let text = UTTS.join(" ");
    let stats = |rho: f64| {
        let sim = HybridSim::new(
            AcousticSpec {
                noise_corr: rho,
                ..knobs(2.0)
            },
            1,
        );
        let (m, t) = sim.simulate("corr", &words(&text), 60.0, &p).unwrap();
        noise_stats(&m, &t)
    };
    let (c0, s0) = stats(0.0);
    let (c9, s9) = stats(0.9);
    assert!(c0.abs() < 0.1, "white noise: lag-1 correlation {c0}");
    assert!((c9 - 0.9).abs() < 0.06, "AR(1) 0.9: lag-1 correlation {c9}");
    // The level σ = 2 is kept.
    assert!(
        (s0 - 2.0).abs() < 0.3 && (s9 - 2.0).abs() < 0.6,
        "sd {s0} / {s9}"
    );
    // At 0 the knob changes nothing: the matrix is the white-noise one, draw for draw.
    let white = HybridSim::new(knobs(2.0), 1);
    let zero = HybridSim::new(
        AcousticSpec {
            noise_corr: 0.0,
            ..knobs(2.0)
        },
        1,
    );
    let (a, _) = white.simulate("same", &words(UTTS[0]), 4.0, &p).unwrap();
    let (b, _) = zero.simulate("same", &words(UTTS[0]), 4.0, &p).unwrap();
    assert_eq!(a.data(), b.data());
}

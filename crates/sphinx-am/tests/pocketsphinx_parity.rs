//! Against pocketsphinx 5.1.1 itself on real recordings (issue 41): the cepstra are its cepstra
//! bit for bit, and every senone score of every frame is its score (the reference holds each
//! frame's best senone and a hash of all 5,126 scores; `scripts/sphinx_reference.py` made it).

use sphinx_am::features::utterance_features;
use sphinx_am::frontend::{Frontend, FrontendConfig};
use sphinx_am::ptm::PtmScorer;
use sphinx_am::Model;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn samples(name: &str) -> Vec<i16> {
    let wav = root().join(format!("datasets/pocketsphinx-test/cards/{name}.wav"));
    sphinx_am::audio::read_wav(&wav, 16_000).unwrap()
}

fn reference(name: &str, ext: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/reference/{name}.{ext}"))
}

fn fnv1a64(scores: &[i16]) -> u64 {
    let mut h = ctx_core::hash::Fnv1a::new();
    for s in scores {
        h.write(&s.to_le_bytes());
    }
    h.finish()
}

const CARDS: [&str; 5] = ["001", "002", "003", "004", "005"];

#[test]
fn cepstra_are_pocketsphinx_cepstra() {
    let m = Model::load(&root().join("datasets/sphinx-en-us")).unwrap();
    let fe = Frontend::new(FrontendConfig::from_params(&m.feat).unwrap()).unwrap();
    for name in CARDS {
        let b = std::fs::read(reference(name, "mfc")).unwrap();
        let n = i32::from_be_bytes(b[..4].try_into().unwrap()) as usize;
        let theirs: Vec<f32> = b[4..]
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(theirs.len(), n);
        let ours: Vec<f32> = fe.cepstra(&samples(name)).concat();
        assert_eq!(ours.len(), n, "{name}: frames × 13");
        let worst = ours
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst <= 1e-4, "{name}: cepstra differ by up to {worst}");
        assert_eq!(
            ours, theirs,
            "{name}: not bit-identical (largest difference {worst})"
        );
    }
}

#[test]
fn senone_scores_are_pocketsphinx_scores() {
    let m = Model::load(&root().join("datasets/sphinx-en-us")).unwrap();
    let fe = Frontend::new(FrontendConfig::from_params(&m.feat).unwrap()).unwrap();
    let scorer = PtmScorer::new(&m);
    let (mut frames, mut same) = (0, 0);
    for name in CARDS {
        let reference = std::fs::read_to_string(reference(name, "sen.txt")).unwrap();
        let scores = scorer.score(&utterance_features(fe.cepstra(&samples(name))));
        let lines: Vec<&str> = reference.lines().collect();
        assert_eq!(scores.len(), lines.len(), "{name}: frames");
        for (t, (ours, line)) in scores.iter().zip(lines).enumerate() {
            let (best, hash) = line.split_once(' ').unwrap();
            let our_best = (0..ours.len()).min_by_key(|&i| (ours[i], i)).unwrap();
            assert_eq!(our_best.to_string(), best, "{name} frame {t}: best senone");
            assert_eq!(ours[our_best], 0, "{name} frame {t}: the best scores 0");
            frames += 1;
            same += (format!("{:016x}", fnv1a64(ours)) == hash) as usize;
        }
    }
    assert_eq!(frames, 108 + 195 + 153 + 154 + 349);
    assert_eq!(
        same, frames,
        "frames whose 5,126 scores all equal pocketsphinx's"
    );
}

/// Audio the model cannot take is refused by name, never resampled behind the user's back.
#[test]
fn wavs_of_another_rate_or_width_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, rate: u32, channels: u16, bits: u16| {
        let path = t.path().join(name);
        let spec = hound::WavSpec {
            channels,
            sample_rate: rate,
            bits_per_sample: bits,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for i in 0..1600 {
            if bits == 16 {
                w.write_sample((i % 100) as i16).unwrap();
            } else {
                w.write_sample(i % 100).unwrap();
            }
        }
        w.finalize().unwrap();
        path
    };
    let ok = write("ok.wav", 16_000, 1, 16);
    assert_eq!(sphinx_am::audio::read_wav(&ok, 16_000).unwrap().len(), 1600);
    for (name, rate, ch, bits, says) in [
        ("8k.wav", 8_000, 1, 16, "8000 Hz"),
        ("stereo.wav", 16_000, 2, 16, "2 channel(s)"),
        ("24bit.wav", 16_000, 1, 24, "24-bit"),
    ] {
        let p = write(name, rate, ch, bits);
        let e = sphinx_am::audio::read_wav(&p, 16_000)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(name) && e.contains(says) && e.contains("sox"),
            "{e}"
        );
    }
    let junk = t.path().join("junk.wav");
    std::fs::write(&junk, b"RIFF....not a wav").unwrap();
    let e = sphinx_am::audio::read_wav(&junk, 16_000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("junk.wav") && e.contains("not a WAV"), "{e}");
}

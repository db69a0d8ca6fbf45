//! Compares this crate's senone scores for a 16 kHz mono WAV with pocketsphinx's `senlogdir`
//! dump of the same file (all senones, `compallsen`): prints frames, values and mismatches.
//! `cargo run --release -p sphinx-am --example sendump_cmp -- <model dir> <wav> <dump.sen>`.
use sphinx_am::features::utterance_features;
use sphinx_am::frontend::{Frontend, FrontendConfig};
use sphinx_am::ptm::PtmScorer;
use sphinx_am::Model;
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, model, wav, dump] = args.as_slice() else {
        return Err("usage: sendump_cmp <model dir> <wav> <dump.sen>".into());
    };
    let m = Model::load(Path::new(model))?;
    let fe = Frontend::new(FrontendConfig::from_params(&m.feat)?)?;
    let s = sphinx_am::audio::read_wav(Path::new(wav), 16_000)?;
    let scores = PtmScorer::new(&m).score(&utterance_features(fe.cepstra(&s)));
    let b = std::fs::read(dump)?;
    let start = b
        .windows(7)
        .position(|w| w == b"endhdr\n")
        .ok_or("no endhdr")?
        + 7
        + 4;
    let mut pos = start;
    let (mut frames, mut values, mut diff, mut best_diff) = (0, 0, 0, 0);
    let mut worst = 0i32;
    while pos + 2 <= b.len() {
        let n = i16::from_le_bytes([b[pos], b[pos + 1]]) as usize;
        pos += 2;
        let theirs: Vec<i16> = (0..n)
            .map(|i| i16::from_le_bytes([b[pos + 2 * i], b[pos + 2 * i + 1]]))
            .collect();
        pos += 2 * n;
        let ours = &scores[frames];
        for (a, t) in ours.iter().zip(&theirs) {
            values += 1;
            if a != t {
                diff += 1;
                worst = worst.max((*a as i32 - *t as i32).abs());
            }
        }
        let argmin = |v: &[i16]| (0..v.len()).min_by_key(|&i| (v[i], i)).unwrap();
        best_diff += (argmin(ours) != argmin(&theirs)) as usize;
        frames += 1;
    }
    println!(
        "frames {frames} (ours {}), values {values}, different {diff} ({:.4}%), largest difference {worst}, best senone differs on {best_diff} frames",
        scores.len(),
        100.0 * diff as f64 / values.max(1) as f64
    );
    Ok(())
}

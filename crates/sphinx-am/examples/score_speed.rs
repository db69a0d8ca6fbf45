//! Times the front end and senone scoring (all 5,126 senones, pocketsphinx's arithmetic) on
//! WAVs, one thread: `cargo run --profile ci -p sphinx-am --example score_speed -- [reps] WAV...`
//! (default: pocketsphinx-test's ten recordings, 5 repetitions). Prints the best repetition's
//! seconds and RTFx, as the best of several runs is the least disturbed by other load.

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let reps: usize = match args.first().and_then(|a| a.parse().ok()) {
        Some(n) => {
            args.remove(0);
            n
        }
        None => 5,
    };
    let wavs: Vec<PathBuf> = if args.is_empty() {
        let mut v: Vec<PathBuf> = ["cards", "librivox"]
            .iter()
            .flat_map(|d| {
                std::fs::read_dir(root.join("datasets/pocketsphinx-test").join(d)).unwrap()
            })
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "wav"))
            .collect();
        v.sort();
        v
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    let model = sphinx_am::Model::load(&root.join("datasets/sphinx-en-us")).unwrap();
    let scorer = sphinx_am::AudioScorer::new(&model).unwrap();
    let audio: Vec<Vec<i16>> = wavs
        .iter()
        .map(|w| sphinx_am::audio::read_wav(w, scorer.sample_rate()).unwrap())
        .collect();
    let secs: f64 = audio.iter().map(|a| a.len() as f64).sum::<f64>() / scorer.sample_rate() as f64;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        for a in &audio {
            std::hint::black_box(scorer.score_samples(a).unwrap());
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{} WAVs, {secs:.1} s of audio: front end + scores {best:.3} s (best of {reps}), RTFx {:.1}",
        wavs.len(),
        secs / best
    );
}

//! What a list of 1,000 to 20,000 phrases per stream costs the CTC WFST search, per frame
//! (`make bench-scale`): the first utterances of Earnings-21 (normal-topology TLG, the
//! simulated CTC model, beam 15, one thread, each utterance decoded whole) with the seeded
//! in-vocabulary phrase lists of `datasets/scale-lists/` as word boosting and as phrase
//! boosting (the phrase automaton), each list built once and shared by every utterance.
//!
//! Rounds are interleaved (every variant once per round, in order) and timed on the CPU
//! (`/proc/thread-self/schedstat`), so the shared machine's drift falls on every variant alike;
//! each figure is the median over rounds of the variant's time against the same round's
//! unbiased decode, with the quartiles. ROUNDS=N (default 7), UTTS=N utterances (default 8),
//! ONLY=text to run the variants whose name contains it.

mod common;

use common::{now, quartiles};
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctx_graph::compile::GraphKind;
use ctxbench::pipeline::{Setup, SetupOptions};
use std::path::Path;
use std::time::Instant;
use wfst_search::{decode_utterance, Booster, DecoderConfig, Stream};

/// The phrases of a gzipped list, one per line.
fn read_list(path: &Path) -> Vec<Vec<String>> {
    ctx_core::io::read_text(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .filter(|p: &Vec<String>| !p.is_empty())
        .collect()
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: one round, two utterances.
    let benching = std::env::args().any(|a| a == "--bench");
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (rounds, utts) = match benching {
        true => (env("ROUNDS", 7), env("UTTS", 8)),
        false => (1, 2),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reg = Registry::read(&root.join("datasets.toml")).expect("registry");
    let cache = root.join("cache/graphs");
    let opts = SetupOptions {
        kind: GraphKind::parse("tlg-normal").expect("a graph kind"),
        ..SetupOptions::hclg(Subset::Full, &cache)
    };
    let mut setup = Setup::load(&reg, "earnings21", &opts).expect("setup");
    setup.dataset.utterances.truncate(utts);
    let mats: Vec<_> = setup
        .dataset
        .utterances
        .iter()
        .map(|u| setup.scores(u).unwrap())
        .collect();
    let frames: usize = mats.iter().map(|m| m.rows()).sum();
    let blank = setup.ctc_blank.expect("a CTC setup");
    let dec = ctc_wfst::CtcDecoder::new(
        &setup.csr,
        ctc_wfst::CtcConfig {
            search: DecoderConfig {
                acoustic_scale: setup.acoustic_scale,
                ..DecoderConfig::default()
            },
            blank,
            ..ctc_wfst::CtcConfig::default()
        },
    )
    .unwrap();
    let engine = dec.engine().unwrap();
    let words = &setup.graph.symbols.words;
    let lists = root.join("datasets/scale-lists");
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut variants: Vec<(String, Booster)> =
        vec![("unbiased again (control)".into(), Booster::None)];
    for n in [1000, 5000, 20000] {
        let phrases = read_list(&lists.join(format!("vocab-phrases-{n}.txt.gz")));
        let distinct: std::collections::BTreeSet<&String> = phrases.iter().flatten().collect();
        let entries: Vec<(String, f32)> = distinct.iter().map(|w| (w.to_string(), 3.0)).collect();
        let w = ctc_wfst::ContextBoost::words_indexed(setup.word_index(), words, &entries, 15.0)
            .unwrap();
        variants.push((format!("word boosting, {n} phrases"), w.booster));
        let p = ctc_wfst::ContextBoost::phrases(words, &phrases, 3.0).unwrap();
        variants.push((format!("phrase boosting, {n} phrases"), p.booster));
    }
    variants.retain(|(name, _)| name.contains(&only) || name.starts_with("unbiased"));
    let t0 = Instant::now();
    let mut stream = Stream::new("", Booster::None);
    let mut run = |b: &Booster| -> (f64, usize) {
        let start = now(t0);
        let mut n_words = 0;
        for (u, m) in setup.dataset.utterances.iter().zip(&mats) {
            stream.reset(u.id.clone(), b.clone());
            let r = decode_utterance(&engine, &mut stream, m, 50, None).unwrap();
            n_words += r.segments.iter().map(|s| s.best.words.len()).sum::<usize>();
        }
        (now(t0) - start, n_words)
    };
    let base_words = run(&Booster::None).1;
    let mut ratios = vec![Vec::new(); variants.len()];
    let mut base_s = Vec::new();
    for _ in 0..rounds {
        let (b, _) = run(&Booster::None);
        base_s.push(b);
        for (k, (_, booster)) in variants.iter().enumerate() {
            ratios[k].push(run(booster).0 / b);
        }
    }
    let (_, med, _) = quartiles(&base_s);
    println!(
        "Earnings-21, first {utts} utterances ({frames} frames, {base_words} words unbiased): unbiased decode {:.3} s on the CPU ({:.1} µs per frame), median of {rounds} rounds",
        med,
        1e6 * med / frames as f64
    );
    println!();
    println!("| variant | time against unbiased (median) | quartiles |");
    println!("|---|---|---|");
    for ((name, _), r) in variants.iter().zip(&ratios) {
        let (q1, m, q3) = quartiles(r);
        println!("| {name} | {m:.3}× | {q1:.3}× – {q3:.3}× |");
    }
}

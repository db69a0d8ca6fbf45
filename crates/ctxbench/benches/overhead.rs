//! What biasing adds to decoding time, as ratios measured in one run (the speed
//! targets: lattice biasing under 5% of decoding time, the arc-index booster with 1,000 phrases
//! under 2% of RTFx).
//!
//! Criterion's groups time one variant after another, and on a shared 2-core machine the clock
//! drifts by more than the effects measured here (seen: the same 1-thread decode at 384 ms and
//! then 480 ms within one `cargo bench`). So this bench interleaves: each round decodes the quick
//! ATCO2-1h set with every variant in an order that alternates between rounds (ABC, CBA, ...),
//! and a variant's figure is the median over rounds of its time divided by the same round's
//! unbiased time. The scores are simulated once up front and every decode runs on this thread,
//! timed by the thread's on-CPU time (`/proc/thread-self/schedstat`, which leaves out time the
//! thread waited for a core; wall time where that file is missing). Lattice biasing is timed on
//! the unbiased round's own lattices, so its ratio needs no pairing.
//!
//! `cargo bench -p ctxbench --bench overhead` (ROUNDS=N to change the 15 rounds; ONLY=text keeps
//! the variants whose name contains `text`, e.g. to profile one of them with `perf record`).

mod common;

use common::{now, on_cpu_s, quartiles};
use ctx_core::scores::ScoreMatrix;
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctx_graph::phrase_arcs::phrase_arcs;
use ctxbench::pipeline::{lattice_bias, static_list, DecodeRun, ListKind, Setup, SetupOptions};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;
use wfst_search::{
    decode_utterance, ArcSetBooster, Booster, Decoder, DecoderConfig, EndpointConfig,
    PhraseAutomaton, Stream,
};

/// Seconds this thread has run on a CPU (`None` where the kernel does not say).
fn decode_all(setup: &Setup, mats: &[ScoreMatrix], booster: &Booster, t0: Instant) -> DecodeRun {
    let dec = Decoder::new(
        &setup.csr,
        DecoderConfig {
            acoustic_scale: setup.acoustic_scale,
            ..DecoderConfig::default()
        },
    )
    .unwrap()
    .with_silence(&setup.silence);
    let chunk = ((0.5 / setup.frame_s).round() as usize).max(1);
    let endpoint = EndpointConfig::kaldi(setup.frame_s as f32);
    let mut stream = Stream::new("", Booster::None);
    let start = now(t0);
    let results = setup
        .dataset
        .utterances
        .iter()
        .zip(mats)
        .map(|(u, m)| {
            stream.reset(u.id.clone(), booster.clone());
            decode_utterance(&dec, &mut stream, m, chunk, Some(&endpoint)).unwrap()
        })
        .collect();
    DecodeRun {
        results,
        audio_s: setup.dataset.utterances.iter().map(|u| u.duration_s).sum(),
        decode_s: now(t0) - start,
        sim_s: 0.0,
        check_s: 0.0,
        threads: 1,
        backend: "cpu".into(),
        device: String::new(),
        open_words: Vec::new(),
    }
}

/// Quartiles of a sample (sorted copy; linear interpolation).
fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this with no such flag: keep
    // that to one round so the test run stays quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds: usize = if benching {
        std::env::var("ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(15)
    } else {
        1
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reg = Registry::read(&root.join("datasets.toml")).expect("registry");
    let setup = Setup::load(
        &reg,
        "atco2-sim-1h",
        &SetupOptions::hclg(Subset::Quick, &root.join("cache/graphs")),
    )
    .expect("setup");
    let mats: Vec<ScoreMatrix> = setup
        .dataset
        .utterances
        .iter()
        .map(|u| setup.scores(u).unwrap())
        .collect();
    // 1,000 phrases: the first 1,000 (sorted, distinct) radar-list phrases of the full
    // ATCO2-1h and ATCO2-4h sets (the 1-h set alone has 556) whose words the graph knows.
    let mut pool = BTreeSet::new();
    for name in ["atco2-sim-1h", "atco2-sim-4h"] {
        let full = ctx_data::dataset::Dataset::load(&reg, name, Subset::Full).unwrap();
        pool.extend(static_list(&full, "sequences").unwrap());
    }
    let words_of = |p: &Vec<String>| {
        p.iter()
            .map(|w| setup.graph.symbols.words.id(w))
            .collect::<Option<Vec<u32>>>()
    };
    let phrases: Vec<Vec<String>> = pool
        .into_iter()
        .filter(|p| words_of(p).is_some())
        .take(1000)
        .collect();
    let ids: Vec<Vec<u32>> = phrases.iter().filter_map(words_of).collect();
    // The arcs Algorithm 1 of 000 boosts (first words everywhere, later words along the
    // phrase), and the worst case: every arc whose output word occurs in a phrase.
    let t = Instant::now();
    let found = phrase_arcs(&setup.csr, &ids);
    let search_s = t.elapsed().as_secs_f64();
    let words: BTreeSet<u32> = ids.iter().flatten().copied().collect();
    let every: Vec<u32> = (0..setup.csr.num_arcs() as u32)
        .filter(|&a| words.contains(&setup.csr.olabel[a as usize]))
        .collect();
    // States with a boosted arc, and the list's heap size in kB.
    let touched = |arcs: &[u32]| {
        let gate = ArcSetBooster::new(&setup.csr, arcs.to_vec(), -2.0).unwrap();
        let states = (0..setup.csr.num_states() as u32)
            .filter(|&s| gate.touches(s))
            .count();
        (states, gate.heap_bytes() as f64 / 1e3)
    };
    let set = |arcs: &[u32], d: f32| {
        Booster::ArcSet(ArcSetBooster::new(&setup.csr, arcs.to_vec(), d).unwrap())
    };
    let only = std::env::var("ONLY").unwrap_or_default();
    let mut variants: Vec<(&str, Booster)> = vec![
        // The control: its spread is the bench's noise floor.
        ("unbiased again (control)", Booster::None),
        (
            "arc booster, Algorithm 1 arcs of 1,000 phrases, discount -2",
            set(&found.arcs, -2.0),
        ),
        (
            "arc booster, Algorithm 1 arcs, discount 0 (lookups only)",
            set(&found.arcs, 0.0),
        ),
        (
            "arc booster, every arc of a phrase word (worst case), discount -2",
            set(&every, -2.0),
        ),
        (
            "phrase automaton (on-the-fly G-boosting), 1,000 phrases",
            Booster::Phrases(PhraseAutomaton::new(&ids, -2.0).unwrap()),
        ),
    ];
    variants.retain(|(name, _)| name.contains(&only));
    let (alg1, worst) = (touched(&found.arcs), touched(&every));
    println!(
        "overhead on quick ATCO2-1h ({} utterances; graph of {} arcs, {} states), 1 thread, {rounds} rounds",
        setup.dataset.utterances.len(),
        setup.csr.num_arcs(),
        setup.csr.num_states()
    );
    println!(
        "{} phrases ({} spelled by the graph): Algorithm 1 boosts {} arcs ({} of them non-emitting; {} states have one; found in {:.2} s; the list takes {:.0} kB), the worst case {} arcs ({} states, {:.0} kB)",
        ids.len(),
        found.spelled,
        found.arcs.len(),
        found
            .arcs
            .iter()
            .filter(|&&a| a as usize >= setup.csr.num_emitting())
            .count(),
        alg1.0,
        search_s,
        alg1.1,
        every.len(),
        worst.0,
        worst.1
    );
    let mut base_s = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut lattice = Vec::new();
    // Active tokens per frame of each variant (the same every round: the search is
    // deterministic), 0 = unbiased.
    let mut active = vec![0.0; variants.len() + 1];
    let per_frame = |run: &DecodeRun| {
        let seg = run.results.iter().flat_map(|r| &r.segments);
        let (rows, toks) = seg.fold((0u64, 0u64), |(r, t), s| (r + s.rows, t + s.tokens));
        toks as f64 / rows.max(1) as f64
    };
    let t0 = Instant::now();
    for r in 0..rounds {
        // 0 = unbiased, 1.. = the variants; the order reverses every other round.
        let mut order: Vec<usize> = (0..=variants.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        let mut secs = vec![0.0; order.len()];
        for &v in &order {
            if v == 0 {
                let run = decode_all(&setup, &mats, &Booster::None, t0);
                let t = now(t0);
                lattice_bias(&setup, &run, &ListKind::Sequences, -2.0).unwrap();
                lattice.push((now(t0) - t) / run.decode_s);
                secs[0] = run.decode_s;
                active[0] = per_frame(&run);
            } else {
                let b = &variants[v - 1].1;
                let run = decode_all(&setup, &mats, b, t0);
                secs[v] = run.decode_s;
                active[v] = per_frame(&run);
            }
        }
        base_s.push(secs[0]);
        for v in 1..secs.len() {
            ratios[v - 1].push(secs[v] / secs[0]);
        }
    }
    let (lo, med, hi) = quartiles(&base_s);
    println!(
        "| variant | added decode time, median | quartiles | active tokens / frame |\n|---|---|---|---|\n| unbiased (decode s, {}) | {med:.3} s | {lo:.3}–{hi:.3} s | {:.0} |", if on_cpu_s().is_some() { "on CPU" } else { "wall" }, active[0]
    );
    let pct = |x: f64| 100.0 * (x - 1.0);
    for (((name, _), r), act) in variants.iter().zip(&ratios).zip(&active[1..]) {
        let (lo, med, hi) = quartiles(r);
        println!(
            "| {name} | {:+.1}% | {:+.1}% – {:+.1}% | {act:.0} |",
            pct(med),
            pct(lo),
            pct(hi)
        );
    }
    let (lo, med, hi) = quartiles(&lattice);
    println!(
        "| lattice biasing (radar lists), after decoding | {:+.1}% | {:+.1}% – {:+.1}% | |",
        100.0 * med,
        100.0 * lo,
        100.0 * hi
    );
}

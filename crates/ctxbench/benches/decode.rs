//! Decoding speed on the quick ATCO2-1h set (simulated hybrid scores, HCLG): frames per second
//! with 1 and 2 threads, the cost of the arc-index booster with 1,000 phrases, and the cost of
//! lattice biasing on top of decoding. Compare the figures as ratios within one run.

use criterion::{criterion_group, criterion_main, Criterion};
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctxbench::pipeline::{decode, lattice_bias, DecodeSettings, ListKind, Setup, SetupOptions};
use std::collections::BTreeSet;
use std::path::Path;
use wfst_search::{ArcSetBooster, Booster, DecoderConfig};

fn setup() -> Setup {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let reg = Registry::read(&root.join("datasets.toml")).expect("registry");
    Setup::load(
        &reg,
        "atco2-sim-1h",
        &SetupOptions::hclg(Subset::Quick, &root.join("cache/graphs")),
    )
    .expect("setup")
}

fn settings(setup: &Setup, threads: usize) -> DecodeSettings {
    DecodeSettings {
        config: DecoderConfig {
            acoustic_scale: setup.acoustic_scale,
            ..DecoderConfig::default()
        },
        threads,
        ..DecodeSettings::default()
    }
}

fn bench(c: &mut Criterion) {
    let setup = setup();
    // 1,000 phrases: the first distinct radar-list phrases of the set; every arc whose output
    // word occurs in them is boosted (a superset of Algorithm 1's arcs: the worst case).
    let mut phrases = BTreeSet::new();
    for list in setup.dataset.lists.values() {
        for p in &list.phrases {
            if phrases.len() < 1000 {
                phrases.insert(p.clone());
            }
        }
    }
    let words: BTreeSet<u32> = phrases
        .iter()
        .flatten()
        .filter_map(|w| setup.graph.symbols.words.id(w))
        .collect();
    let arcs: Vec<u32> = (0..setup.csr.num_arcs() as u32)
        .filter(|&a| words.contains(&setup.csr.olabel[a as usize]))
        .collect();
    let booster = Booster::ArcSet(ArcSetBooster::new(&setup.csr, arcs.clone(), -2.0).unwrap());
    // The same set with discount 0: the lookups alone, search unchanged.
    let lookup_only = Booster::ArcSet(ArcSetBooster::new(&setup.csr, arcs, 0.0).unwrap());
    let mut g = c.benchmark_group("decode-atco2-1h-quick");
    g.sample_size(10);
    for threads in [1, 2] {
        let s = settings(&setup, threads);
        g.bench_function(format!("{threads}-thread"), |b| {
            b.iter(|| decode(&setup, &s, &|_| Booster::None).unwrap())
        });
    }
    let s = settings(&setup, 1);
    g.bench_function("1-thread-arc-booster-1000-phrases", |b| {
        b.iter(|| decode(&setup, &s, &|_| booster.clone()).unwrap())
    });
    g.bench_function("1-thread-arc-lookups-only-1000-phrases", |b| {
        b.iter(|| decode(&setup, &s, &|_| lookup_only.clone()).unwrap())
    });
    g.bench_function("1-thread-plus-lattice-biasing", |b| {
        b.iter(|| {
            let run = decode(&setup, &s, &|_| Booster::None).unwrap();
            lattice_bias(&setup, &run, &ListKind::Sequences, -2.0).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

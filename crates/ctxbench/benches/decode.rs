//! Decoding speed on the quick ATCO2-1h set (simulated hybrid scores, HCLG, score simulation
//! included): time per pass with 1 and 2 threads. What boosters and lattice biasing add is
//! `benches/overhead.rs` (interleaved rounds: criterion's back-to-back groups drift here by more
//! than those effects).

use criterion::{criterion_group, criterion_main, Criterion};
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctxbench::pipeline::{decode, DecodeSettings, Setup, SetupOptions};
use std::path::Path;
use wfst_search::{Booster, DecoderConfig};

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
    let mut g = c.benchmark_group("decode-atco2-1h-quick");
    g.sample_size(10);
    for threads in [1, 2] {
        let s = settings(&setup, threads);
        g.bench_function(format!("{threads}-thread"), |b| {
            b.iter(|| decode(&setup, &s, &|_| Booster::None).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

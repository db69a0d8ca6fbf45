//! Scoring speed on the real Earnings-21 references (`make bench-score`, or
//! `cargo bench -p ctxbench --bench score`): one whole call aligned against itself and against a
//! hypothesis with about 15% errors, and the full 44-call set through `ctxbench score`.

use criterion::{criterion_group, criterion_main, Criterion};
use ctx_core::corpus::EarningsDoc;
use ctx_core::metrics::{score_utterance, NeInsertions, ScoreOptions, ScoringRef, TextNorm};
use ctxbench::score::{run_score, ScoreArgs};
use std::path::{Path, PathBuf};

fn refs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/earnings21/nlp_references")
}

fn bench(c: &mut Criterion) {
    // 4341191 (General Electric, 96 minutes) is the longest call.
    let doc = EarningsDoc::load(&refs().join("4341191.nlp.gz")).unwrap();
    let reference = ScoringRef::from_earnings(&doc, TextNorm::Fstalign);
    let words: Vec<String> = reference
        .words_as_written()
        .iter()
        .map(|w| w.to_string())
        .collect();
    let mut noisy = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        match i % 40 {
            0..=2 => noisy.push(format!("x{i}")),
            3 => {}
            4 => {
                noisy.push(w.clone());
                noisy.push("uh".into());
            }
            _ => noisy.push(w.clone()),
        }
    }
    // Worst case: a hypothesis unrelated to the reference (its words reversed, ~98% WER).
    let unrelated: Vec<String> = words.iter().rev().cloned().collect();
    let opts = ScoreOptions {
        ne_classes: Some(["PERSON".to_string(), "ORG".to_string()].into()),
        ne_insertions: NeInsertions::Never,
        targets: None,
    };
    let mut g = c.benchmark_group("score");
    g.sample_size(10);
    g.bench_function("earnings21-longest-call-self", |b| {
        b.iter(|| score_utterance(&reference, &words, &opts))
    });
    g.bench_function("earnings21-longest-call-15pct-errors", |b| {
        b.iter(|| score_utterance(&reference, &noisy, &opts))
    });
    g.bench_function("earnings21-longest-call-unrelated", |b| {
        b.iter(|| score_utterance(&reference, &unrelated, &opts))
    });
    let args = ScoreArgs::new(&refs(), &refs());
    g.bench_function("earnings21-all-44-calls-self", |b| {
        b.iter(|| run_score(&args).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! `ctxbench decode --backend`: the CUDA kernels on the CPU shim give byte-identical hypotheses
//! (baseline and lattice-biased, so the lattices agree too) to the CPU backend on the quick sets
//! of both ATCO2 sets and Earnings-21, on HCLG and TLG; a GPU asked for where none answers is
//! one clear error. Graphs come from the repository's cache (`cache/graphs`, keyed by their
//! inputs and written atomically), shared with the other CLI tests.

mod common;
use common::*;

fn decode(dataset: &str, kind: &str, limit: &str, backend: &str, dir: &std::path::Path) -> String {
    let hyps = dir.join(format!("{dataset}-{kind}-{backend}"));
    let points = dir.join(format!("{dataset}-{kind}-{backend}.csv"));
    let out = ctxbench(&[
        "decode",
        "--dataset",
        dataset,
        "--quick",
        "--limit",
        limit,
        "--kind",
        kind,
        "--methods",
        "none,sequences",
        "--backend",
        backend,
        "--gpu-batch",
        "7",
        "--hyp-dir",
        hyps.to_str().unwrap(),
        "--points-out",
        points.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{dataset} {kind} {backend}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let none = std::fs::read_to_string(hyps.join("none.txt")).unwrap();
    let seqs = std::fs::read_to_string(hyps.join("sequences.txt")).unwrap();
    let csv = std::fs::read_to_string(points).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| row[head.iter().position(|c| *c == n).unwrap()];
    assert_eq!(col("backend"), backend);
    assert_eq!(
        col("device"),
        if backend == "shim" { "cpu-shim" } else { "" }
    );
    format!("{none}\n---\n{seqs}")
}

#[test]
fn shim_backend_equals_cpu_on_quick_sets() {
    let dir = tempfile::tempdir().unwrap();
    for (dataset, kind, limit) in [
        ("atco2-sim-1h", "hclg", "30"),
        ("atco2-sim-4h", "hclg", "12"),
        ("earnings21", "hclg", "3"),
        ("atco2-sim-1h", "tlg-compact", "6"),
    ] {
        let cpu = decode(dataset, kind, limit, "cpu", dir.path());
        let shim = decode(dataset, kind, limit, "shim", dir.path());
        assert!(cpu.lines().count() > 4, "{dataset}: {cpu}");
        assert_eq!(
            cpu, shim,
            "{dataset} {kind}: CPU and shim hypotheses differ"
        );
    }
}

#[test]
fn cuda_without_a_gpu_is_one_clear_error() {
    if ctx_cuda::cuda::probe().is_ok() {
        eprintln!("a GPU answers here; nothing to check");
        return;
    }
    fails_with(
        &[
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--limit",
            "1",
            "--backend",
            "cuda",
        ],
        "CUDA",
    );
    // A misspelt backend is a usage error (clap's exit code 2) naming the choices.
    let out = ctxbench(&["decode", "--dataset", "atco2-sim-1h", "--backend", "tpu"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("expected cpu, cuda, auto or shim"), "{err}");
}

/// The device's frame step, counted by the backend itself on the shim (as it counts on a GPU):
/// on HCLG and TLG, with and without lattices, a step is five kernel launches and one copy
/// back (issue 54's bounds: at most 20 and 4; replays after the first steps' buffer growth
/// and a second copy when a step's output outgrows the last one's are all the rest).
#[test]
fn the_device_step_is_five_launches_and_one_copy_back() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("throughput.csv");
    for kind in ["hclg", "tlg-normal"] {
        for lattice in ["true", "false"] {
            let out = ctxbench(&[
                "throughput",
                "--dataset",
                "atco2-sim-1h",
                "--kind",
                kind,
                "--backend",
                "shim",
                "--streams",
                "8",
                "--lattice",
                lattice,
                "--csv",
                csv.to_str().unwrap(),
            ]);
            assert!(
                out.status.success(),
                "{kind} lattice {lattice}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = |row: &[&str], n: &str| -> f64 {
        row[head.iter().position(|c| *c == n).unwrap()]
            .parse()
            .unwrap()
    };
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    for row in &rows {
        let (launches, readbacks) = (
            col(row, "launches_per_step"),
            col(row, "readbacks_per_step"),
        );
        assert!(
            (5.0..=5.5).contains(&launches) && (1.0..=1.5).contains(&readbacks),
            "{}: {launches} launches and {readbacks} readbacks per step",
            row.join(",")
        );
    }
}

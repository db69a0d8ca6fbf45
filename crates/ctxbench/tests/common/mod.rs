//! Helpers shared by the CLI test binaries (each binary uses a subset, hence the allow).
#![allow(dead_code)]

pub mod runner;

use std::path::Path;
use std::process::{Command, Output};

/// The repository root (the CLI finds datasets.toml there).
pub fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Runs the `ctxbench` binary from the repository root.
pub fn ctxbench(a: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .current_dir(root())
        .args(a)
        .output()
        .unwrap()
}

/// Runs `ctxbench` expecting exit code 1 with `needle` in the error message.
pub fn fails_with(a: &[&str], needle: &str) {
    let out = ctxbench(a);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{a:?}: {err}");
    assert!(err.contains(needle), "{a:?}: expected '{needle}' in: {err}");
}

/// `ctxbench export` of the first `limit` utterances of quick ATCO2-1h into `out` (graph,
/// scores, data folder, registry entry), `extra` flags added; panics with stderr on failure.
pub fn export_quick(out: &Path, limit: usize, extra: &[&str]) {
    let limit = limit.to_string();
    let mut a = vec![
        "export",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        &limit,
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    let o = ctxbench(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

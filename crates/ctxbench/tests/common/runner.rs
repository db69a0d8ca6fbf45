//! Helpers of the runner's test binaries (run_cli.rs, run_families.rs): a small experiment
//! file and readers of what `ctxbench run` writes.

use std::path::{Path, PathBuf};

/// A small experiment in `dir/experiments/<name>.toml`: two outputs of one decode at `beams`.
pub fn small(dir: &Path, name: &str, beams: &str, extra: &str) -> PathBuf {
    let p = dir.join("experiments").join(format!("{name}.toml"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        format!(
            r#"
title = "small"
regress = true
[settings]
dataset = "atco2-sim-1h"
subset = "quick"
limit = 12
threads = 1
[sweep]
beam = [{beams}]
[table]
measures = ["wer", "ne_wer"]
[[rows]]
row = "No biasing"
method = "baseline"
[[rows]]
row = "Sequences"
method = "lattice-biasing"
bias_list = "sequences"
{extra}
"#
        ),
    )
    .unwrap();
    p
}

/// A path as text (paths here are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The finished points in a results folder's store.
pub fn points_in(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("points"))
        .map(|r| {
            r.filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
        })
        .unwrap_or(0)
}

/// A command's stderr as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A points.csv as a lookup: `get(row, column)` is that row's cell (the first row so named).
pub fn cell_of(csv: &Path) -> impl Fn(&str, &str) -> String {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    move |row, c| {
        let col = |n: &str| head.iter().position(|h| h == n).unwrap();
        let r = rows.iter().find(|r| r[col("row")] == row).unwrap();
        r[col(c)].clone()
    }
}

/// (row, beam, wer) of a points.csv, in file order.
pub fn figures(csv: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (r, b, w) = (col("row"), col("beam"), col("wer"));
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[r].to_string(), c[b].to_string(), c[w].to_string())
        })
        .collect()
}

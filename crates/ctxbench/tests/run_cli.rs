//! End-to-end tests of `ctxbench run`, `merge`, `table` and `regress` on small experiments
//! (the first utterances of the quick ATCO2-1h subset). The method families through the
//! runner: run_families.rs.

mod common;

use common::runner::*;
use common::{ctxbench, export_quick, fails_with};

#[test]
fn an_interrupted_run_finishes_only_the_missing_points() {
    let d = tempfile::tempdir().unwrap();
    let exp = small(d.path(), "resume", "9, 10, 11, 12, 13", "");
    let out = d.path().join("results");
    let res = out.join("resume");
    // Start a run and kill it once the first points are stored.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .current_dir(common::root())
        .args(["run", s(&exp), "--out", s(&out)])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while points_in(&res) == 0 && t.elapsed().as_secs() < 300 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = points_in(&res);
    assert!(before >= 1);
    let o = ctxbench(&["run", s(&exp), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "resume: {} points run, {before} reused, 0 missing",
            10 - before
        )),
        "{before} stored before: {err}"
    );
    assert_eq!(points_in(&res), 10);
    let first = figures(&res.join("points.csv"));
    assert_eq!(first.len(), 10);
    assert_eq!(first[0].0, "No biasing");
    assert_eq!(
        first[9],
        ("Sequences".into(), "13.0".into(), first[9].2.clone())
    );
    // A decode group half stored (a kill between its two points): the group decodes again,
    // only the missing point is stored, and the stored one is counted once.
    let victim = std::fs::read_dir(res.join("points"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .min()
        .unwrap();
    std::fs::remove_file(&victim).unwrap();
    let o = ctxbench(&["run", s(&exp), "--out", s(&out)]);
    assert!(
        stderr(&o).contains("resume: 1 points run, 9 reused, 0 missing"),
        "{}",
        stderr(&o)
    );
    assert_eq!(figures(&res.join("points.csv")), first);
    // Everything stored: nothing runs, the results are the same.
    let o = ctxbench(&["run", s(&exp), "--out", s(&out)]);
    assert!(
        stderr(&o).contains("resume: 0 points run, 10 reused"),
        "{}",
        stderr(&o)
    );
    assert_eq!(figures(&res.join("points.csv")), first);
    for f in ["points.parquet", "table.md", "table.tex", "run.json"] {
        assert!(res.join(f).exists(), "{f}");
    }
    // A fresh run of the same grid from scratch gives the same figures (determinism).
    let o = ctxbench(&["run", s(&exp), "--out", s(&d.path().join("again"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(figures(&d.path().join("again/resume/points.csv")), first);
    // Re-rendering reads points.csv back.
    let o = ctxbench(&["table", s(&exp), "--out", s(&out)]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| Sequences, beam = 13.0 |"), "{md}");
}

#[test]
fn shards_merge_into_the_unsharded_results() {
    let d = tempfile::tempdir().unwrap();
    let exp = small(d.path(), "shard", "10, 12", "");
    let (a, b, m, whole) = (
        d.path().join("a"),
        d.path().join("b"),
        d.path().join("m"),
        d.path().join("whole"),
    );
    let o = ctxbench(&["run", s(&exp), "--out", s(&a), "--shard", "1/2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 points run, 0 reused, 2 missing"),
        "{}",
        stderr(&o)
    );
    assert!(!a.join("shard/points.csv").exists());
    let o = ctxbench(&["run", s(&exp), "--out", s(&b), "--shard", "2/2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Merging one shard only names the missing points.
    fails_with(
        &["merge", s(&exp), "--from", s(&a), "--out", s(&m)],
        "2 of 4 points have no result yet",
    );
    let o = ctxbench(&[
        "merge",
        s(&exp),
        "--from",
        s(&a),
        "--from",
        s(&b),
        "--out",
        s(&m),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = ctxbench(&["run", s(&exp), "--out", s(&whole)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        figures(&m.join("shard/points.csv")),
        figures(&whole.join("shard/points.csv"))
    );
    fails_with(&["run", s(&exp), "--shard", "3/2"], "needs 1 <= K <= N");
}

#[test]
fn regress_passes_on_its_baseline_and_fails_when_it_is_edited() {
    let d = tempfile::tempdir().unwrap();
    let ratio = r#"
[[regress_ratio]]
name = "lattice biasing speed"
measure = "rtfx"
num = { row = "Sequences" }
den = { row = "No biasing" }
min = 0.01
"#;
    let exp = small(d.path(), "reg", "11", ratio);
    let base = d.path().join("baselines");
    let out = d.path().join("regress");
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "regress".to_string(),
            s(&exp).into(),
            "--baselines".into(),
            s(&base).into(),
        ];
        v.extend(["--out".to_string(), s(&out).into()]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let run = |v: Vec<String>| ctxbench(&v.iter().map(String::as_str).collect::<Vec<_>>());
    let o = run(args(&["--update"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let file = base.join("reg.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let o = run(args(&[]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("reg: 2 points, pass"), "{}", stderr(&o));
    // Edit the baseline WER of the biased point by +0.5: the check fails and names it.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let w = v["points"][1]["wer"].as_f64().unwrap();
    v["points"][1]["wer"] = serde_json::json!(w + 0.5);
    std::fs::write(&file, serde_json::to_string(&v).unwrap()).unwrap();
    let o = run(args(&[]));
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "reg: point 'Sequences, beam=11': WER {w:.2} vs baseline {:.2}",
            w + 0.5
        )),
        "{err}"
    );
    // A missing baseline says how to write one.
    std::fs::remove_file(&file).unwrap();
    let o = run(args(&[]));
    assert!(
        stderr(&o).contains("ctxbench regress --update"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_experiments_fail_before_any_decoding() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("results");
    let cases = [
        ("typo", "[settings]\ndataset = \"atco2-sim-1h\"\nlatice_beam = 4\n[[rows]]\nrow = \"a\"\n", "unknown setting 'latice_beam'"),
        (
            "lacks",
            "[settings]\ndataset = \"atco2-sim-1h\"\n[sweep]\ndiscount = [-1, -2]\n[[rows]]\nrow = \"a\"\n",
            "method baseline has no setting 'discount'",
        ),
        ("nodata", "[settings]\ndataset = \"atco2-sim-9h\"\n[[rows]]\nrow = \"a\"\n", "atco2-sim-9h"),
        (
            "nolist",
            "[settings]\ndataset = \"atco2-sim-1h\"\n[[rows]]\nrow = \"a\"\nmethod = \"lattice-biasing\"\nbias_list = \"list:rare\"\n",
            "has no list 'rare'",
        ),
        (
            "nogboost",
            "[settings]\ndataset = \"atco2-sim-1h\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"radar\"\n",
            "has no list 'radar'",
        ),
    ];
    for (name, text, needle) in cases {
        let p = d.path().join("experiments").join(format!("{name}.toml"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        fails_with(&["run", s(&p), "--out", s(&out)], needle);
        fails_with(&["run", s(&p), "--out", s(&out)], &format!("{name}.toml"));
        assert!(!out.join(name).exists(), "{name}: wrote results");
    }
    fails_with(
        &["run", "--set", "beam=wide", "--reproduce"],
        "'wide' is not a number",
    );
}

#[test]
fn the_shim_backend_gives_the_cpu_figures_in_the_runner() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("experiments/backends.toml");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let exp = |backends: &str| {
        format!(
            r#"
title = "backends"
[settings]
dataset = "atco2-sim-1h"
subset = "quick"
limit = 8
threads = 1
endpointing = false
[sweep]
backend = [{backends}]
[table]
measures = ["wer", "ne_wer"]
[[rows]]
row = "none"
method = "baseline"
[[rows]]
row = "arcs"
method = "arc-boosting+lattice-biasing"
arcs_list = "sequences"
bias_list = "sequences"
"#
        )
    };
    std::fs::write(&p, exp(r#""cpu", "shim""#)).unwrap();
    let out = d.path().join("results");
    let o = ctxbench(&["run", s(&p), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("backends/points.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4);
    for row in ["none", "arcs"] {
        let by = |b: &str| {
            rows.iter()
                .find(|r| r[col("row")] == row && r[col("backend")] == b)
                .map(|r| {
                    let f = |c: &str| r[col(c)].to_string();
                    (f("wer"), f("ne_wer"), f("oracle_wer"), f("lattice_density"))
                })
                .unwrap()
        };
        assert_eq!(by("cpu"), by("shim"), "{row}");
        // One lattice per utterance (no endpointing): the oracle beats the 1-best path.
        let (wer, _, oracle, _) = by("cpu");
        let (wer, oracle): (f64, f64) = (wer.parse().unwrap(), oracle.parse().unwrap());
        assert!(oracle < wer, "{row}: oracle {oracle} vs 1-best {wer}");
    }
    for r in &rows {
        let device = if r[col("backend")] == "shim" {
            "cpu-shim"
        } else {
            ""
        };
        assert_eq!(r[col("device")], device);
    }
    // `auto` is refused: a row must say which backend ran.
    std::fs::write(&p, exp(r#""auto""#)).unwrap();
    let o = ctxbench(&["run", s(&p), "--out", s(&out)]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("backend 'auto'"), "{}", stderr(&o));
}

/// A researcher's own outputs in a sweep: the quick set exported (graph, scores, data dir,
/// lists) and registered as `kind = "files"` in a registry of the user's; the same experiment
/// run on it through `ctxbench run --registry` gives the built-in dataset's figures.
#[test]
fn experiments_run_on_a_files_registry_like_the_builtin_dataset() {
    let d = tempfile::tempdir().unwrap();
    let export = d.path().join("export");
    export_quick(&export, 12, &[]);
    let builtin = small(d.path(), "builtin", "11", "");
    let text = std::fs::read_to_string(&builtin)
        .unwrap()
        .replace(
            "dataset = \"atco2-sim-1h\"",
            "dataset = \"atco2-sim-1h-files\"",
        )
        .replace("subset = \"quick\"\n", "");
    let files = d.path().join("experiments/files.toml");
    std::fs::write(&files, text).unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let o = ctxbench(&["run", s(&builtin), "--out", s(&a)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reg = export.join("datasets.toml");
    let o = ctxbench(&["run", s(&files), "--out", s(&b), "--registry", s(&reg)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (x, y) = (
        cell_of(&a.join("builtin/points.csv")),
        cell_of(&b.join("files/points.csv")),
    );
    for row in ["No biasing", "Sequences"] {
        for c in ["wer", "ne_wer", "u_wer", "utterances", "phrases_kept"] {
            assert_eq!(x(row, c), y(row, c), "{row} {c}");
        }
        assert_eq!(y(row, "dataset"), "atco2-sim-1h-files");
    }
    assert_eq!(y("No biasing", "utterances"), "12.0");
    // Without the user's registry the dataset is unknown: a clear error before decoding.
    fails_with(
        &["run", s(&files), "--out", s(&b), "--force"],
        "atco2-sim-1h-files",
    );
}

/// `run --tour` (`make reproduce-quick`) runs exactly the shipped experiments marked
/// `tour = true` (on the quick subsets: `[quick.settings]` is tested in experiment/tests.rs); it
/// takes no file names.
#[test]
fn the_tour_runs_the_marked_experiments_on_the_quick_subsets() {
    let out = ctxbench(&["run", "--tour", "--dry-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ran: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(':').next())
        .collect();
    ran.sort_unstable();
    let dir = common::root().join("experiments");
    let mut marked: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .any(|l| l.trim() == "tour = true")
        })
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    marked.sort_unstable();
    assert!(
        marked.len() >= 5,
        "one table per paper at least: {marked:?}"
    );
    assert_eq!(ran, marked);
    fails_with(
        &["run", "--tour", "experiments/thesis-table3.3.toml"],
        "name files without it",
    );
}

//! Your own model outputs in, standard formats out (`ctxbench export`, `ctxbench decode --scores`,
//! `kind = "files"`): round trips through the files path give byte-identical hypotheses to the
//! built-in path, a Kaldi-style transition-id HCLG decodes like the pdf-labelled one, and bad
//! inputs are clear errors naming the file and utterance.

mod common;
use common::*;

use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(a: &[&str]) -> String {
    let o = ctxbench(a);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{a:?}: {err}");
    err
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Decodes the first 10 quick ATCO2-1h utterances built in, exports them (graph, scores, data
/// dir, entities, lists) and decodes the export through the files path: identical hypotheses
/// for the baseline and lattice biasing, and identical figures.
fn round_trip(kind: &str, format: &str, transition_ids: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (h1, h2, out) = (d.join("h1"), d.join("h2"), d.join("export"));
    let (ja_path, jb_path) = (d.join("a.json"), d.join("b.json"));
    let common = ["--methods", "none,sequences", "--kind", kind];
    let mut a = vec![
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "10",
    ];
    a.extend(common);
    a.extend(["--hyp-dir", s(&h1), "--json", s(&ja_path)]);
    ok(&a);
    let mut e = vec![
        "export",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "10",
        "--kind",
        kind,
        "--format",
        format,
        "--out",
        s(&out),
    ];
    if transition_ids {
        e.push("--transition-ids");
    }
    ok(&e);
    if transition_ids {
        assert!(out.join("graph/final.mdl").exists());
        assert!(read(&out.join("graph/README.md")).contains("transition-ids"));
    }
    let reg = out.join("datasets.toml");
    let mut b = vec![
        "decode",
        "--registry",
        s(&reg),
        "--dataset",
        "atco2-sim-1h-files",
    ];
    b.extend(common);
    b.extend(["--hyp-dir", s(&h2), "--json", s(&jb_path)]);
    ok(&b);
    for o in ["none", "sequences"] {
        let (x, y) = (
            read(&h1.join(format!("{o}.txt"))),
            read(&h2.join(format!("{o}.txt"))),
        );
        assert_eq!(x.lines().count(), 10);
        assert_eq!(x, y, "{kind} {format} {o}");
    }
    let j = |n: &str| -> serde_json::Value { serde_json::from_str(&read(&d.join(n))).unwrap() };
    let (ja, jb) = (j("a.json"), j("b.json"));
    for k in 0..2 {
        for m in ["output", "wer", "ne_wer", "u_wer", "ne_acc", "phrases_kept"] {
            assert_eq!(ja["outputs"][k][m], jb["outputs"][k][m], "{k} {m}");
        }
    }
    assert!(ja["outputs"][0]["ne_wer"].is_number());
}

#[test]
fn hclg_round_trip_is_identical() {
    round_trip("hclg", "ark", false);
}

#[test]
fn kaldi_transition_id_hclg_decodes_like_the_pdf_graph() {
    round_trip("hclg", "ark", true);
}

#[test]
fn tlg_round_trip_is_identical() {
    round_trip("tlg-compact", "npy", false);
}

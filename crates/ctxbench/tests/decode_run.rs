//! `ctxbench decode` and `ctxbench run` are two front doors to one path: the same point, given
//! as flags or as an experiment row, gives the same figures in the same points.csv format, for
//! every method family.

mod common;

use common::ctxbench;
use std::collections::BTreeMap;
use std::path::Path;

/// points.csv as (row label → column → value).
fn read_points(path: &Path) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

/// One family's point both ways; `row` is the experiment row's TOML body (method and its
/// settings), `flags` the same as decode flags.
fn same_figures(tag: &str, settings: &str, row: &str, flags: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let exp = d.path().join("experiments").join(format!("{tag}.toml"));
    std::fs::create_dir_all(exp.parent().unwrap()).unwrap();
    std::fs::write(
        &exp,
        format!(
            "title = \"{tag}\"\n[settings]\ndataset = \"atco2-sim-1h\"\nlimit = 6\n{settings}\n\
             [[rows]]\nrow = \"r\"\n{row}\n"
        ),
    )
    .unwrap();
    let out = d.path().join("results");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let o = ctxbench(&["run", &s(&exp), "--quick", "--out", &s(&out)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (run_header, run_rows) = read_points(&out.join(tag).join("points.csv"));
    let csv = d.path().join("decode.csv");
    let mut a = vec![
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "6",
        "--methods",
        "none",
        "--points-out",
    ];
    let csv_s = s(&csv);
    a.push(&csv_s);
    a.extend_from_slice(flags);
    let o = ctxbench(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (dec_header, dec_rows) = read_points(&csv);
    // One results format: decode's CSV has run's columns (run adds nothing but the same).
    assert_eq!(dec_header, run_header, "{tag}: columns differ");
    assert_eq!((run_rows.len(), dec_rows.len()), (1, 1), "{tag}");
    let (r, dc) = (&run_rows[0], &dec_rows[0]);
    assert_eq!(r["method"], dc["method"], "{tag}");
    for k in [
        "wer",
        "ne_wer",
        "u_wer",
        "ne_acc",
        "precision",
        "recall",
        "f1",
        "audio_s",
        "utterances",
        "graph_arcs",
        "phrases_kept",
        "phrases_dropped",
        "boosted_words",
        "boosted_arcs",
    ] {
        if let (Some(x), Some(y)) = (r.get(k), dc.get(k)) {
            assert_eq!(x, y, "{tag}: {k} differs between run and decode");
        }
    }
    assert!(!r["wer"].is_empty(), "{tag}: no WER");
}

#[test]
fn wfst_family_arc_boosting_with_lattice_biasing() {
    same_figures(
        "wfst",
        "",
        "method = \"arc-boosting+lattice-biasing\"\narcs_list = \"gt\"\nbias_list = \"sequences\"",
        &[
            "--arcs-list",
            "gt",
            "--method",
            "lattice-biasing",
            "--set",
            "bias_list=sequences",
        ],
    );
}

#[test]
fn wfst_family_word_boosting_on_a_ctc_graph() {
    same_figures(
        "wfst-words",
        "graph = \"tlg-normal\"",
        "method = \"word-boosting\"\nword_boost = \"gt\"\nword_boost_score = 4.0",
        &[
            "--kind",
            "tlg-normal",
            "--word-boost",
            "gt",
            "--word-boost-score",
            "4",
        ],
    );
}

#[test]
fn hclg_boost_family() {
    same_figures(
        "hclg",
        "",
        "method = \"hclg-boost\"\nctx_list = \"gt\"\nctx_output = \"endpoints\"",
        &[
            "--method",
            "hclg-boost",
            "--set",
            "ctx_list=gt",
            "--set",
            "ctx_output=endpoints",
        ],
    );
}

#[test]
fn ctc_wfst_family() {
    same_figures(
        "ctc",
        "graph = \"tlg-normal\"",
        "method = \"ctc-wfst+phrase-boosting\"\nphrase_boost = \"gt\"",
        &[
            "--kind",
            "tlg-normal",
            "--method",
            "ctc-wfst+phrase-boosting",
            "--set",
            "phrase_boost=gt",
        ],
    );
}

#[test]
fn e2e_family() {
    same_figures(
        "e2e",
        "model = \"rnnt\"",
        "method = \"e2e+kb\"\nkb_list = \"gt\"\nkb_score = 1.0",
        &[
            "--method",
            "e2e+kb",
            "--set",
            "model=rnnt",
            "--set",
            "kb_list=gt",
            "--set",
            "kb_score=1.0",
        ],
    );
}

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

/// The peer family scores another decoder's hypotheses exactly as ours: our own baseline's
/// hypotheses, read back as a peer's, give the baseline's figures (run and decode alike); an
/// utterance without a hypothesis is named.
#[test]
fn peer_family_scores_a_peers_hypotheses_as_ours() {
    let d = tempfile::tempdir().unwrap();
    let hyp_dir = d.path().join("hyp");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let base = [
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "6",
    ];
    let csv = d.path().join("baseline.csv");
    let mut a = base.to_vec();
    let (hd, cs) = (s(&hyp_dir), s(&csv));
    a.extend(["--methods", "none", "--hyp-dir", &hd, "--points-out", &cs]);
    let o = ctxbench(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hyp = s(&hyp_dir.join("none.txt"));
    let timing = d.path().join("t.json");
    std::fs::write(&timing, r#"{"audio_s": 30.0, "wall_s": 2.0}"#).unwrap();
    let t = s(&timing);
    let row = format!("method = \"peer\"\npeer_hyp = \"{hyp}\"\npeer_timing = \"{t}\"");
    let (sh, st) = (format!("peer_hyp={hyp}"), format!("peer_timing={t}"));
    same_figures(
        "peer",
        "",
        &row,
        &["--method", "peer", "--set", &sh, "--set", &st],
    );
    // The peer's figures are the baseline's, and its RTFx with AM is the timing's.
    let peer_csv = d.path().join("peer.csv");
    let pc = s(&peer_csv);
    let mut a = base.to_vec();
    a.extend([
        "--method",
        "peer",
        "--set",
        &sh,
        "--set",
        &st,
        "--points-out",
        &pc,
    ]);
    let o = ctxbench(&a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, b) = read_points(&csv);
    let (_, p) = read_points(&peer_csv);
    for k in ["wer", "ne_wer", "u_wer", "ne_acc"] {
        assert_eq!(b[0][k], p[0][k], "{k}");
    }
    assert_eq!(p[0]["rtfx_am"].parse::<f64>().unwrap(), 15.0);
    // One utterance dropped from the file: named, exit 1.
    let text = std::fs::read_to_string(&hyp).unwrap();
    let missing = text
        .lines()
        .nth(2)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let cut: String = text
        .lines()
        .filter(|l| !l.starts_with(&format!("{missing} ")) && *l != missing)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&hyp, cut).unwrap();
    let mut a = base.to_vec();
    a.extend(["--method", "peer", "--set", &sh]);
    let o = ctxbench(&a);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "none.txt: utterance {missing} of dataset atco2-sim-1h"
        )) && err.contains("has no hypothesis"),
        "{err}"
    );
}

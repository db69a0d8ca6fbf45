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

/// The command-line form (`--scores --graph --words --data`) and every bad input of the issue:
/// a clear message naming the file and the utterance, exit 1, never a panic.
#[test]
fn command_line_files_and_bad_inputs() {
    use ctx_core::scores::{write_ark, ScoreMatrix};
    use ctx_core::transition::TransitionModel;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("x");
    export_quick(&out, 4, &["--transition-ids"]);
    let (graph, words, data, mdl) = (
        out.join("graph/HCLG.fst"),
        out.join("graph/words.txt"),
        out.join("data"),
        out.join("graph/final.mdl"),
    );
    let ark = out.join("scores.ark");
    let args = |scores: &Path, words: &Path, mdl: &Path| -> Vec<String> {
        [
            "decode",
            "--scores",
            s(scores),
            "--graph",
            s(&graph),
            "--words",
            s(words),
            "--data",
            s(&data),
            "--transition-model",
            s(mdl),
            "--frame-shift",
            "0.03",
            "--silence-columns",
            "0",
            "--methods",
            "none",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let run = |a: &[String]| {
        let v: Vec<&str> = a.iter().map(String::as_str).collect();
        ctxbench(&v)
    };
    let fails = |a: &[String], needles: &[&str]| {
        let o = run(a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "expected '{n}' in: {err}");
        }
    };
    // The good case decodes all four utterances.
    let o = run(&args(&ark, &words, &mdl));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Scores of another width.
    let m = ctx_core::score_table::ScoreTable::open(&ark).unwrap();
    let ids: Vec<String> = m.ids().to_vec();
    let narrow = d.join("narrow.ark");
    let small = ScoreMatrix::zeros(50, 7);
    let mut entries: Vec<(String, ScoreMatrix)> = ids
        .iter()
        .map(|u| (u.clone(), m.get(u).unwrap().unwrap()))
        .collect();
    entries[1].1 = small;
    write_ark(&narrow, entries.iter().map(|(u, m)| (u.as_str(), m)), true).unwrap();
    fails(
        &args(&narrow, &words, &mdl),
        &["narrow.ark", &ids[1], "7 columns", "40"],
    );
    // An utterance of `text` without scores: reported and left out; --strict refuses.
    let three = d.join("three.ark");
    write_ark(
        &three,
        entries
            .iter()
            .skip(2)
            .chain(entries.iter().take(1))
            .map(|(u, m)| (u.as_str(), m)),
        true,
    )
    .unwrap();
    let o = run(&args(&three, &words, &mdl));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("1 utterance(s)") && err.contains(&ids[1]),
        "{err}"
    );
    assert!(err.contains("decoded 3 utterances"), "{err}");
    let mut strict = args(&three, &words, &mdl);
    strict.push("--strict".into());
    fails(&strict, &[&ids[1], "strict"]);
    // A graph whose output symbols are not all in words.txt.
    let short = d.join("words-short.txt");
    let w = read(&words);
    std::fs::write(
        &short,
        w.lines().take(100).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    fails(
        &args(&ark, &short, &mdl),
        &["HCLG.fst", "output label", "words-short.txt"],
    );
    // A transition-id beyond the model's: a model of 10 pdfs for a graph of 40.
    let mut tm = TransitionModel::read(&mdl).unwrap();
    tm.tuples.truncate(10);
    let small_mdl = d.join("small.mdl");
    tm.write(&small_mdl, false).unwrap();
    fails(
        &args(&ark, &words, &small_mdl),
        &["HCLG.fst", "input label", "beyond"],
    );
    // A truncated archive.
    let b = std::fs::read(&ark).unwrap();
    let cut = d.join("cut.ark");
    std::fs::write(&cut, &b[..b.len() - 1000]).unwrap();
    fails(
        &args(&cut, &words, &mdl),
        &["cut.ark", &ids[3], "truncated"],
    );
}

/// Graphs written by OpenFst (kaldifst), vector and const, decode a researcher's scores to the
/// words the scores favour.
#[test]
fn openfst_written_graphs_decode() {
    let fx = root().join("crates/ctx-graph/tests/fixtures/openfst");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("text"), "u1 hello world\nu2 goodbye\n").unwrap();
    std::fs::write(data.join("utt2dur"), "u1 0.06\nu2 0.05\n").unwrap();
    // Log-likelihoods over 3 pdfs: u1 pdf 0 then pdf 1, u2 pdf 2 throughout.
    let row = |k: usize| {
        let v: Vec<&str> = (0..3).map(|j| if j == k { "-0.1" } else { "-5" }).collect();
        v.join(" ")
    };
    let ark = format!(
        "u1 [\n {}\n {}\n {}\n {}\n {}\n {} ]\nu2 [\n {}\n {}\n {}\n {}\n {} ]\n",
        row(0),
        row(0),
        row(0),
        row(1),
        row(1),
        row(1),
        row(2),
        row(2),
        row(2),
        row(2),
        row(2)
    );
    std::fs::write(d.join("s.ark"), ark).unwrap();
    for g in ["small.vector.fst", "small.const.fst"] {
        let hyp = d.join(g);
        ok(&[
            "decode",
            "--scores",
            s(&d.join("s.ark")),
            "--graph",
            s(&fx.join(g)),
            "--words",
            s(&fx.join("words.txt")),
            "--data",
            s(&data),
            "--acoustic-scale",
            "1.0",
            "--no-endpointing",
            "--methods",
            "none",
            "--hyp-dir",
            s(&hyp),
        ]);
        assert_eq!(
            read(&hyp.join("none.txt")),
            "u1 hello world\nu2 goodbye\n",
            "{g}"
        );
    }
}

/// `--lattice-out` writes one Kaldi CompactLattice per utterance: segments chained by ε arcs,
/// acoustic costs unscaled, and the cheapest path at the decoder's acoustic scale spells the
/// Viterbi 1-best of every utterance (Earnings-21 calls are endpointed into many segments).
#[test]
fn lattices_are_kaldi_text_archives_whose_best_path_is_the_one_best() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (hyps, lat, graph) = (d.join("h"), d.join("lat.txt"), d.join("graph"));
    ok(&[
        "decode",
        "--dataset",
        "earnings21",
        "--quick",
        "--limit",
        "2",
        "--methods",
        "none",
        "--acoustic-scale",
        "0.1",
        "--hyp-dir",
        s(&hyps),
        "--lattice-out",
        s(&lat),
    ]);
    ok(&[
        "graph",
        "export",
        "--dataset",
        "earnings21",
        "--quick",
        "--out",
        s(&graph),
    ]);
    let words: std::collections::HashMap<u32, String> = read(&graph.join("words.txt"))
        .lines()
        .map(|l| {
            let mut f = l.split_whitespace();
            let (w, i) = (f.next().unwrap(), f.next().unwrap());
            (i.parse().unwrap(), w.to_string())
        })
        .collect();
    let lats = ctxbench::kaldi_lattice::read_text_archive(&lat).unwrap();
    let text = read(&hyps.join("none.txt"));
    assert_eq!(lats.len(), 2);
    let mut glue = 0;
    for (l, line) in lats.iter().zip(text.lines()) {
        let mut f = line.split_whitespace();
        assert_eq!(Some(l.key.as_str()), f.next());
        let want: Vec<&str> = f.collect();
        let (ids, _) = l.best_path(0.1).unwrap();
        let got: Vec<&str> = ids.iter().map(|i| words[i].as_str()).collect();
        assert_eq!(got, want, "{}", l.key);
        assert!(want.len() > 50);
        glue += l.arcs.iter().filter(|a| a.2 == 0).count();
        // Unscaled acoustic costs: at scale 1 the acoustics dominate and the best path changes.
        assert_ne!(l.best_path(1.0).unwrap().0, ids, "{}", l.key);
    }
    assert!(glue > 10, "segments chained by ε arcs: {glue}");
}

//! `ctxbench decode` end to end on the quick ATCO2-1h set: results-contract CSV, determinism,
//! the biasing trend, and bad input refused before decoding.

mod common;
use common::*;

fn rows(csv: &str) -> Vec<Vec<String>> {
    csv.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn quick_decode_writes_contract_rows_and_biasing_helps_entities() {
    let dir = tempfile::tempdir().unwrap();
    let mut csvs = Vec::new();
    for threads in ["1", "2"] {
        let points = dir.path().join(format!("points-{threads}.csv"));
        let out = ctxbench(&[
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--methods",
            "none,unigrams,sequences,gt",
            "--threads",
            threads,
            "--points-out",
            points.to_str().unwrap(),
            "--experiment",
            "test",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        csvs.push(std::fs::read_to_string(&points).unwrap());
    }
    let a = rows(&csvs[0]);
    let b = rows(&csvs[1]);
    let h = &a[0];
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    for k in [
        "experiment",
        "dataset",
        "section",
        "row",
        "method",
        "backend",
        "wer",
        "ne_wer",
        "rtfx",
    ] {
        col(k);
    }
    assert_eq!(a.len(), 5);
    // Same words whatever the thread count: every accuracy column agrees.
    for (ra, rb) in a.iter().zip(&b).skip(1) {
        for k in ["wer", "ne_wer", "u_wer", "ne_acc"] {
            assert_eq!(
                ra[col(k)],
                rb[col(k)],
                "{k} differs between 1 and 2 threads"
            );
        }
    }
    let get = |row: usize, k: &str| -> f64 { a[row][col(k)].parse().unwrap() };
    assert_eq!(a[1][col("row")], "No biasing");
    assert_eq!(a[4][col("row")], "Biased GT (partial hypotheses)");
    // Biasing with the ground truth helps the entities (18.2 -> 14.7 NE-WER when written): a
    // rescoring that changed nothing would fail here.
    assert!(get(4, "ne_wer") < get(1, "ne_wer") - 1.0, "{csvs:?}");
    assert!(get(1, "wer") > 0.0 && get(1, "wer") < 100.0);
}

#[test]
fn bad_input_fails_before_decoding() {
    let base = ["decode", "--dataset", "atco2-sim-1h", "--quick"];
    fails_with(
        &[&base[..], &["--methods", "none,trigrams"]].concat(),
        "unknown method 'trigrams'",
    );
    fails_with(&["decode", "--dataset", "atco2-sim-9h"], "atco2-sim-9h");
    // The flags that reach every family: a method or setting that does not exist, a setting
    // the method does not read, and a renamed flag given in both spellings.
    fails_with(
        &[&base[..], &["--method", "nope"]].concat(),
        "unknown method 'nope'",
    );
    fails_with(
        &[&base[..], &["--set", "bem=3"]].concat(),
        "unknown setting 'bem'",
    );
    fails_with(
        &[&base[..], &["--set", "kb_list=gt"]].concat(),
        "has no setting 'kb_list'",
    );
    fails_with(
        &[&base[..], &["--gboost", "gt", "--gboost-list", "gt"]].concat(),
        "are both given",
    );
    fails_with(&[&base[..], &["--kind", "hmm"]].concat(), "graph 'hmm'");
    fails_with(
        &[&base[..], &["--gboost", "radar"]].concat(),
        "has no list 'radar'",
    );
    fails_with(
        &[&base[..], &["--methods", "none,list:rare"]].concat(),
        "has no list 'rare' (it has no named list)",
    );
    fails_with(
        &[&base[..], &["--targets", "rare"]].concat(),
        "has no global list 'rare'",
    );
    fails_with(
        &[&base[..], &["--row", "gt=Oracle"]].concat(),
        "'gt' is not one of --methods",
    );
    fails_with(
        &[
            &base[..],
            &["--gboost", "sequences", "--gboost-mode", "lazy"],
        ]
        .concat(),
        "gboost_mode 'lazy'",
    );
    fails_with(
        &[
            &base[..],
            &["--gboost", "sequences", "--gboost-scope", "utterance"],
        ]
        .concat(),
        "needs gboost_mode 'on-the-fly'",
    );
    fails_with(
        &[&base[..], &["--gboost-mode", "on-the-fly"]].concat(),
        "needs a --gboost-list list",
    );
    fails_with(
        &[
            &base[..],
            &[
                "--gboost",
                "radar",
                "--gboost-mode",
                "on-the-fly",
                "--gboost-scope",
                "utterance",
            ],
        ]
        .concat(),
        "gboost_list 'radar' per utterance",
    );
}

/// G-boosting the rare waypoints, static and on the fly: reported, labelled in the CSV, and a
/// strong discount makes them appear where they were not spoken (precision falls from the
/// baseline's) in both modes.
#[test]
fn gboosting_rare_words_is_reported_and_changes_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for extra in [
        &[][..],
        &["--gboost", "rare", "--gboost-discount", "-8"],
        &[
            "--gboost",
            "rare",
            "--gboost-discount",
            "-8",
            "--gboost-mode",
            "on-the-fly",
        ],
    ] {
        let points = dir.path().join("points.csv");
        let mut a = vec![
            "decode",
            "--dataset",
            "atco2-sim-1h-rare",
            "--quick",
            "--methods",
            "none",
            "--points-out",
            points.to_str().unwrap(),
            "--row",
            "none=Baseline",
        ];
        a.extend_from_slice(extra);
        let out = ctxbench(&a);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{err}");
        let csv = rows(&std::fs::read_to_string(&points).unwrap());
        let col = |name: &str| csv[0].iter().position(|c| c == name).unwrap();
        let r = &csv[1];
        got.push((
            r[col("method")].clone(),
            r[col("row")].clone(),
            r[col("gboost_list")].clone(),
            r[col("targets")].clone(),
            r[col("precision")].parse::<f64>().unwrap(),
            err,
            r[col("gboost_mode")].clone(),
        ));
    }
    assert_eq!(
        (&got[0].0[..], &got[0].1[..], &got[0].3[..]),
        ("baseline", "Baseline", "rare")
    );
    assert_eq!((&got[1].0[..], &got[1].2[..]), ("g-boosting", "rare"));
    assert!(
        got[1]
            .5
            .contains("G-boosting with list 'rare' (discount -8): 30 phrases, 30 boosted"),
        "{}",
        got[1].5
    );
    assert!(got[1].4 < 50.0 && got[0].4 > 90.0, "{got:?}");
    // On the fly: the same list kept, the unboosted graph, the same effect.
    assert_eq!(
        (&got[2].0[..], &got[2].2[..], &got[2].6[..], &got[1].6[..]),
        ("g-boosting", "rare", "on-the-fly", "static")
    );
    assert!(
        got[2].5.contains(
            "G-boosting on-the-fly with list 'rare' per set (discount -8): 30 phrases, 30 boosted"
        ),
        "{}",
        got[2].5
    );
    assert!(got[2].4 < 50.0, "{got:?}");
}

/// The simulated CTC model looks like a real one at its calibrated knobs (docs/design.md §5): blank is
/// the argmax on most frames, posteriors are peaky, and greedy decoding is worse than the TLG
/// beam search with the lexicon and LM, by a few points, not by multiples.
#[test]
fn the_simulated_ctc_model_has_the_shape_of_a_real_one() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("ctc.json");
    let out = ctxbench(&[
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--kind",
        "tlg-normal",
        "--methods",
        "none",
        "--no-endpointing",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let r = &v["ctc_realism"];
    let f = |x: &serde_json::Value| x.as_f64().unwrap();
    assert!(f(&r["blank_argmax_share"]) > 0.7, "{r}");
    assert!(f(&r["mean_max_posterior"]) > 0.85, "{r}");
    let (greedy, beam) = (f(&r["greedy_wer"]), f(&v["outputs"][0]["wer"]));
    assert!(beam > 3.0 && beam < 40.0, "beam search WER {beam}");
    assert!(
        greedy > beam && greedy < beam + 15.0,
        "greedy {greedy} vs beam {beam}"
    );
    // A hybrid decode has no CTC figures.
    let h = dir.path().join("h.json");
    let out = ctxbench(&[
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "3",
        "--methods",
        "none",
        "--json",
        h.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&h).unwrap()).unwrap();
    assert!(v["ctc_realism"].is_null());
}

/// Word boosting (001 §3.3) in a CTC decode: each utterance's ground-truth entity words boosted
/// lower the NE-WER, the report counts applied and unknown words, and a boost over half the
/// beam is warned about.
#[test]
fn word_boosting_a_ctc_decode_helps_the_boosted_entities() {
    let dir = tempfile::tempdir().unwrap();
    let run = |score: &str| {
        let j = dir.path().join(format!("wb{score}.json"));
        let out = ctxbench(&[
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--kind",
            "tlg-normal",
            "--methods",
            "none",
            "--no-endpointing",
            "--word-boost",
            "gt",
            "--word-boost-score",
            score,
            "--json",
            j.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        (v["outputs"][0]["ne_wer"].as_f64().unwrap(), err)
    };
    let (none, err0) = run("0");
    let (boosted, err6) = run("6");
    let (_, err9) = run("9");
    assert!(
        err0.contains("words applied") && err0.contains("not in words.txt"),
        "{err0}"
    );
    assert!(boosted < none - 1.0, "NE-WER {none} -> {boosted}");
    assert!(!err6.contains("exceeds half the beam"), "{err6}");
    assert!(err9.contains("exceeds half the beam (15)"), "{err9}");
    fails_with(
        &[
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--kind",
            "tlg-normal",
            "--word-boost",
            "list:nope",
        ],
        "has no list 'nope'",
    );
    // Earnings-21's named lists: the global ones and ConEC's per-call one.
    fails_with(
        &[
            "decode",
            "--dataset",
            "earnings21",
            "--quick",
            "--kind",
            "tlg-normal",
            "--word-boost",
            "list:slides",
        ],
        "has no list 'slides' (it has: distractor, oracle, conec)",
    );
}

/// `--arc-boost`: 000's biasing in the search (Algorithm 1's arcs, discounted) from `decode`,
/// on the CPU and the kernels' shim alike; refused where it cannot run.
#[test]
fn arc_boosting_helps_entities_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], tag: &str| {
        let points = dir.path().join(format!("{tag}.csv"));
        let hyps = dir.path().join(tag);
        let args = [
            &[
                "decode",
                "--dataset",
                "atco2-sim-1h",
                "--quick",
                "--methods",
                "none",
                "--points-out",
                points.to_str().unwrap(),
                "--hyp-dir",
                hyps.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat();
        let out = ctxbench(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let csv = rows(&std::fs::read_to_string(points).unwrap());
        let col = |n: &str| csv[0].iter().position(|c| c == n).unwrap();
        let row = csv[1].clone();
        let hyp = std::fs::read_to_string(hyps.join("none.txt")).unwrap();
        (
            row[col("ne_wer")].parse::<f64>().unwrap(),
            row[col("row")].clone(),
            row[col("method")].clone(),
            hyp,
            err,
        )
    };
    let (plain, row0, method0, hyp0, _) = run(&[], "plain");
    let (boosted, row1, method1, hyp1, err1) = run(&["--arc-boost", "gt"], "gt");
    assert_eq!(
        (row0.as_str(), method0.as_str()),
        ("No biasing", "baseline")
    );
    assert_eq!(row1, "Biased GT (partial hypotheses)");
    assert_eq!(method1, "arc-boosting");
    assert!(err1.contains("arcs over the utterances' lists"), "{err1}");
    // The old spelling still works and says what replaces it.
    assert!(
        err1.contains("--arc-boost is deprecated; use --arcs-list"),
        "{err1}"
    );
    assert!(boosted < plain - 1.0, "NE-WER {plain} -> {boosted}");
    assert_ne!(hyp0, hyp1);
    // The same decode on the kernels' shim, a few utterances: the same words.
    let few = ["--limit", "8", "--gpu-batch", "3", "--arc-boost", "gt"];
    let (_, _, _, cpu, _) = run(&few, "cpu8");
    let (_, _, _, shim, _) = run(&[&few[..], &["--backend", "shim"]].concat(), "shim8");
    assert_eq!(cpu, shim);
    let base = ["decode", "--dataset", "atco2-sim-1h", "--quick"];
    fails_with(
        &[&base[..], &["--arc-boost", "list:nope"]].concat(),
        "arcs_list 'list:nope': dataset atco2-sim-1h-quick has no list 'nope'",
    );
    fails_with(
        &[&base[..], &["--arc-boost", "trigrams"]].concat(),
        "arcs_list 'trigrams'",
    );
    fails_with(&[&base[..], &["--gpu-batch", "0"]].concat(), "gpu_batch 0");
    fails_with(
        &[&base[..], &["--gpu-batch", "70000"]].concat(),
        "between 1 and 65535",
    );
    fails_with(
        &[&base[..], &["--arc-boost", "gt", "--word-boost", "gt"]].concat(),
        "word boosting and arc boosting cannot be combined",
    );
    // A stack (on-the-fly G-boosting + arcs) runs on the CPU backend; the device refuses it,
    // naming the utterance.
    let stack = [
        "--limit",
        "2",
        "--arc-boost",
        "gt",
        "--gboost",
        "gt",
        "--gboost-mode",
        "on-the-fly",
    ];
    let (_, row, method, _, _) = run(&stack, "stack");
    assert_eq!(row, "Biased GT (partial hypotheses) + G-boosted gt");
    assert_eq!(method, "g-boosting+arc-boosting");
    fails_with(
        &[&base[..], &stack[..], &["--backend", "shim"]].concat(),
        "not a stack of boosters",
    );
}

/// `--partials-out`: the running hypothesis after each 0.5 s chunk, then the 1-best, per
/// utterance.
#[test]
fn partials_out_streams_each_utterance_to_its_one_best() {
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("partials.tsv");
    let hyps = dir.path().join("hyp");
    let out = ctxbench(&[
        "decode",
        "--dataset",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "6",
        "--methods",
        "none",
        "--partials-out",
        part.to_str().unwrap(),
        "--hyp-dir",
        hyps.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&part).unwrap();
    let one_best: Vec<(String, String)> = std::fs::read_to_string(hyps.join("none.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let (u, w) = l.split_once(' ').unwrap_or((l, ""));
            (u.to_string(), w.to_string())
        })
        .collect();
    assert_eq!(one_best.len(), 6);
    // Per utterance: its partial times, then its final line.
    let mut finals = Vec::new();
    let mut times: Vec<f64> = Vec::new();
    let mut partials = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "{line}");
        let t: f64 = f[1].parse().unwrap();
        match f[2] {
            "partial" => {
                assert!(
                    times.last().is_none_or(|&p| t > p),
                    "{line}: time not after the last"
                );
                times.push(t);
                partials += 1;
            }
            "final" => {
                // Each partial at a chunk boundary (17 rows of 30 ms) or at the utterance's end.
                for &p in &times {
                    let rows = (p / 0.03).round() as u64;
                    assert!(
                        rows.is_multiple_of(17) || (p - t).abs() < 1e-9,
                        "{line}: partial at {p}"
                    );
                    assert!(p <= t, "{line}: partial at {p} after the end");
                }
                times.clear();
                finals.push((f[0].to_string(), f[3].to_string()));
            }
            k => panic!("kind {k} in {line}"),
        }
    }
    assert_eq!(finals, one_best);
    assert!(
        partials >= 6 * 4,
        "{partials} partial lines for 6 utterances of ~4 s"
    );
}

/// Open-vocabulary contexts (issue 42) through `decode --open-vocab`, on a CTC TLG and a hybrid
/// HCLG: names of Earnings-21's quick segments that the graph cannot write (not in its
/// words.txt) come out as spelled in the call's list, in the text and the CTM, and NE-WER drops.
#[test]
fn open_vocabulary_contexts_write_names_the_graph_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reference: std::collections::HashSet<String> = {
        let reg = ctx_data::registry::Registry::read(&root().join("datasets.toml")).unwrap();
        let ds =
            ctx_data::dataset::Dataset::load(&reg, "earnings21", ctx_data::dataset::Subset::Quick)
                .unwrap();
        ds.utterances
            .iter()
            .flat_map(|u| u.words.iter().cloned())
            .collect()
    };
    for (kind, method) in [("tlg-normal", "ctc-wfst"), ("hclg", "baseline")] {
        let graph = d.join(format!("graph-{kind}"));
        let out = ctxbench(&[
            "graph",
            "export",
            "--dataset",
            "earnings21",
            "--quick",
            "--kind",
            kind,
            "--out",
            graph.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let vocab: std::collections::HashSet<String> =
            std::fs::read_to_string(graph.join("words.txt"))
                .unwrap()
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect();
        let mut ne = Vec::new();
        for open in [false, true] {
            let hyps = d.join(format!("h-{kind}-{open}"));
            let json = d.join(format!("h-{kind}-{open}.json"));
            let mut a = vec![
                "decode",
                "--dataset",
                "earnings21",
                "--quick",
                "--limit",
                "4",
                "--kind",
                kind,
                "--method",
                method,
                "--methods",
                "none",
                "--hyp-dir",
                hyps.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ];
            let lat = d.join(format!("lat-{kind}.txt"));
            if open {
                a.extend(["--open-vocab", "sequences", "--lattice-out"]);
                a.push(lat.to_str().unwrap());
            }
            let out = ctxbench(&a);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = std::fs::read_to_string(hyps.join("none.txt")).unwrap();
            let said: Vec<&str> = text
                .lines()
                .flat_map(|l| l.split_whitespace().skip(1))
                .filter(|w| !vocab.contains(*w) && reference.contains(*w))
                .collect();
            let ctm = std::fs::read_to_string(hyps.join("none.ctm")).unwrap();
            if open {
                assert!(
                    said.len() >= 3,
                    "{kind}: names outside words.txt decoded: {said:?}"
                );
                assert!(ctm.split_whitespace().any(|w| w == said[0]), "{kind}: CTM");
                assert!(
                    !text.contains("<unk>") && !text.contains("#CONTEXT"),
                    "{kind}"
                );
                // The lattices' word table: words.txt, then the context words; every word id
                // of the lattices is in it, some beyond words.txt.
                let table =
                    std::fs::read_to_string(d.join(format!("lat-{kind}.txt.words.txt"))).unwrap();
                let ids: std::collections::HashSet<u32> = table
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
                    .collect();
                let lattice_words: Vec<u32> = std::fs::read_to_string(&lat)
                    .unwrap()
                    .lines()
                    .filter_map(|l| {
                        let f: Vec<&str> = l.split('\t').collect();
                        (f.len() == 4).then(|| f[2].parse::<u32>().unwrap())
                    })
                    .filter(|&w| w != 0)
                    .collect();
                assert!(lattice_words.iter().all(|w| ids.contains(w)), "{kind}");
                assert!(
                    lattice_words.iter().any(|&w| w as usize >= vocab.len()),
                    "{kind}: no context word in the lattices"
                );
            } else {
                assert!(said.is_empty(), "{kind}: {said:?}");
            }
            let j: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            ne.push(j["outputs"][0]["ne_wer"].as_f64().unwrap());
        }
        assert!(ne[1] < ne[0] - 5.0, "{kind}: NE-WER {ne:?}");
        if kind == "tlg-normal" {
            // The CUDA kernels (on the shim) with the contexts in their device pool: the same
            // text and CTM as the CPU backend's (2 segments: the shim is slow).
            let mut texts = Vec::new();
            for backend in ["cpu", "shim"] {
                let hyps = d.join(format!("h-{kind}-{backend}"));
                let out = ctxbench(&[
                    "decode",
                    "--dataset",
                    "earnings21",
                    "--quick",
                    "--limit",
                    "2",
                    "--kind",
                    kind,
                    "--method",
                    method,
                    "--methods",
                    "none",
                    "--open-vocab",
                    "sequences",
                    "--backend",
                    backend,
                    "--hyp-dir",
                    hyps.to_str().unwrap(),
                ]);
                assert!(
                    out.status.success(),
                    "{backend}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let read = |f: &str| std::fs::read_to_string(hyps.join(f)).unwrap();
                texts.push((read("none.txt"), read("none.ctm")));
            }
            assert_eq!(texts[0], texts[1], "shim vs cpu");
        }
    }
}

/// An open-vocabulary phrase file (`--open-vocab file:PATH`, issue 42): per-phrase weights, a
/// negative one suppressing an in-vocabulary word the plain decoder writes often (the main
/// path pays it too, not only the context's copy); a malformed line is an error naming the
/// file and line before anything is decoded.
#[test]
fn a_phrase_file_weights_each_phrase_and_negative_weights_suppress() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let decode = |extra: &[&str], name: &str| {
        let hyps = d.join(name);
        let mut a = vec![
            "decode",
            "--dataset",
            "earnings21",
            "--quick",
            "--limit",
            "4",
            "--kind",
            "tlg-normal",
            "--method",
            "ctc-wfst",
            "--methods",
            "none",
            "--hyp-dir",
            hyps.to_str().unwrap(),
        ];
        a.extend(extra);
        let out = ctxbench(&a);
        let text = std::fs::read_to_string(hyps.join("none.txt")).unwrap_or_default();
        (out, text)
    };
    let (out, plain) = decode(&[], "plain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let count = |text: &str, w: &str| {
        text.lines()
            .flat_map(|l| l.split_whitespace().skip(1))
            .filter(|x| *x == w)
            .count()
    };
    // The plain output's most frequent word of five letters or more.
    let mut freq: std::collections::BTreeMap<&str, usize> = Default::default();
    for w in plain.lines().flat_map(|l| l.split_whitespace().skip(1)) {
        if w.len() >= 5 {
            *freq.entry(w).or_default() += 1;
        }
    }
    let (&word, &n) = freq
        .iter()
        .max_by_key(|(w, n)| (**n, std::cmp::Reverse(**w)))
        .unwrap();
    assert!(n >= 3, "{word}: {n}");
    let list = d.join("names.tsv");
    std::fs::write(&list, format!("{word}\t-100\nzorblaxian corp\t4\n")).unwrap();
    let arg = format!("file:{}", list.display());
    let (out, suppressed) = decode(&["--open-vocab", &arg], "neg");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count(&suppressed, word), 0, "{word}: {suppressed}");
    // Without the main path's penalty (the word as a positive phrase) it stays.
    std::fs::write(&list, format!("{word}\t2\n")).unwrap();
    let (out, kept) = decode(&["--open-vocab", &arg], "pos");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(count(&kept, word) >= n, "{word}: {kept}");
    std::fs::write(&list, format!("{word}\t2\nacme corp\theavy\n")).unwrap();
    let (out, _) = decode(&["--open-vocab", &arg], "bad");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("names.tsv") && err.contains('2') && err.contains("'heavy'"),
        "{err}"
    );
}

/// The end-to-end family writes each output's hypotheses as a Kaldi `text` file (no CTM: its
/// decoders give no word times), and CTC-WS's words differ from greedy decoding's where it
/// spotted something; lattices and partials are refused by name.
#[test]
fn the_end_to_end_family_writes_hypotheses() {
    let dir = tempfile::tempdir().unwrap();
    let mut texts = Vec::new();
    for (m, sub) in [("e2e", "greedy"), ("e2e+ctc-ws", "ws")] {
        let d = dir.path().join(sub);
        let mut a = vec![
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--method",
            m,
            "--set",
            "model=ctc",
            "--hyp-dir",
            d.to_str().unwrap(),
        ];
        if sub == "ws" {
            a.extend(["--set", "ws_list=sequences"]);
        }
        let out = ctxbench(&a);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(d.join("none.txt")).unwrap();
        assert_eq!(text.lines().count(), 60);
        assert!(text.starts_with("atco2-sim-1h-"), "{text}");
        assert!(!d.join("none.ctm").exists());
        texts.push(text);
    }
    let differ = texts[0]
        .lines()
        .zip(texts[1].lines())
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        (1..60).contains(&differ),
        "{differ} utterances changed by CTC-WS"
    );
    fails_with(
        &[
            "decode",
            "--dataset",
            "atco2-sim-1h",
            "--quick",
            "--method",
            "e2e",
            "--set",
            "model=ctc",
            "--lattice-out",
            "x.lat",
        ],
        "the e2e family makes no lattices",
    );
}

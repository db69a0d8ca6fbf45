//! `ctxbench data` and `ctxbench graph build` end to end on the shipped registry.

mod common;
use common::*;

#[test]
fn stats_json_has_the_documented_keys() {
    let out = ctxbench(&["data", "stats", "atco2-sim-1h", "--quick", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "utterances",
        "hours",
        "words",
        "median_list_entities",
        "list_oov_rate",
        "no_callsign_share",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    assert_eq!(v["utterances"], 60);
    fails_with(&["data", "stats", "atco2-sim-2h"], "atco2-sim-2h");
    fails_with(&["data", "stats", "atco2-sim-2h"], "known:");
}

#[test]
fn exported_scores_read_back_with_the_documented_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let ark = dir.path().join("h.ark");
    let out = ctxbench(&[
        "data",
        "scores",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "3",
        "--out",
        ark.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mats = ctx_core::scores::read_ark(&ark).unwrap();
    assert_eq!(mats.len(), 3);
    assert_eq!(mats[0].0, "atco2-sim-1h-00000");
    assert_eq!(mats[0].1.cols(), 40, "SIL + 39 phones, one state each");
    // The same command gives the same bytes (seeded by utterance id).
    let ark2 = dir.path().join("h2.ark");
    ctxbench(&[
        "data",
        "scores",
        "atco2-sim-1h",
        "--quick",
        "--limit",
        "3",
        "--out",
        ark2.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&ark).unwrap(), std::fs::read(&ark2).unwrap());
}

#[test]
fn graph_build_prints_sizes_and_uses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("graphs");
    let args = [
        "graph",
        "build",
        "--dataset",
        "atco2-sim-1h",
        "--kind",
        "tlg-compact",
        "--bpe-size",
        "200",
        "--cache",
        cache.to_str().unwrap(),
    ];
    let out = ctxbench(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("T ∘ LG") && s.contains("201 score columns") && s.contains("built"),
        "{s}"
    );
    let again = ctxbench(&args);
    let s2 = String::from_utf8_lossy(&again.stdout);
    assert!(s2.contains("loaded from the cache"), "{s2}");
    fails_with(
        &[
            "graph",
            "build",
            "--dataset",
            "atco2-sim-1h",
            "--kind",
            "tlg-fancy",
        ],
        "tlg-fancy",
    );
}

#[test]
fn prepare_writes_the_data_folder_with_a_lexicon_for_every_word() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a1");
    let o = ctxbench(&[
        "data",
        "prepare",
        "atco2-sim-1h",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lex = std::fs::read_to_string(out.join("lexicon.txt")).unwrap();
    let known: std::collections::BTreeSet<&str> =
        lex.lines().map(|l| l.split('\t').next().unwrap()).collect();
    let text = std::fs::read_to_string(out.join("text")).unwrap();
    assert_eq!(text.lines().count(), 60);
    for l in text.lines() {
        for w in l.split_whitespace().skip(1) {
            assert!(known.contains(w), "{w} has no pronunciation");
        }
    }
    for f in [
        "utt2dur",
        "bias_table.tsv",
        "callsigns.tsv",
        "entities.tsv",
        "lm_text.txt.gz",
        "stats.json",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
}

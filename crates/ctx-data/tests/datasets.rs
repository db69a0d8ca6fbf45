//! The registered datasets: published sizes, determinism, segmentation, and bad input.

use ctx_data::dataset::{Dataset, Subset};
use ctx_data::registry::Registry;
use std::path::Path;

fn registry() -> Registry {
    Registry::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets.toml")).unwrap()
}

fn within(x: f64, published: f64, tol: f64) -> bool {
    (x - published).abs() <= tol * published
}

#[test]
fn atc_sets_match_the_published_ones_within_ten_percent() {
    let reg = registry();
    // (name, utterances, hours, median list entries, NO_CALLSIGN share) of thesis Table 2.4.
    for (name, utts, hours, median, nc) in [
        ("atco2-sim-4h", 3535.0, 4.0, 214.0, 701.0 / 3535.0),
        ("atco2-sim-1h", 871.0, 1.0, 140.0, 85.0 / 841.0),
    ] {
        let s = Dataset::load(&reg, name, Subset::Full).unwrap().stats();
        println!("{s:?}");
        assert!(
            within(s.utterances as f64, utts, 0.10),
            "{name} utterances {}",
            s.utterances
        );
        assert!(within(s.hours, hours, 0.10), "{name} hours {}", s.hours);
        assert!(
            within(s.median_list_entities, median, 0.10),
            "{name} median {}",
            s.median_list_entities
        );
        // "About 10% OOV words in the lists" (of the distinct list words).
        assert!(
            (0.07..=0.13).contains(&s.list_oov_rate),
            "{name} OOV {}",
            s.list_oov_rate
        );
        let share = s.no_callsign_share.unwrap();
        assert!(within(share, nc, 0.15), "{name} NO_CALLSIGN {share}");
    }
}

#[test]
fn the_same_seed_gives_byte_identical_files() {
    let reg = registry();
    let dir = tempfile::tempdir().unwrap();
    let a = Dataset::load(&reg, "atco2-sim-1h", Subset::Quick).unwrap();
    let b = Dataset::load(&reg, "atco2-sim-1h", Subset::Quick).unwrap();
    a.prepare(&dir.path().join("a")).unwrap();
    b.prepare(&dir.path().join("b")).unwrap();
    for f in [
        "text",
        "utt2dur",
        "bias_table.tsv",
        "callsigns.tsv",
        "entities.tsv",
        "lm_text.txt.gz",
        "stats.json",
    ] {
        let x = std::fs::read(dir.path().join("a").join(f)).unwrap();
        let y = std::fs::read(dir.path().join("b").join(f)).unwrap();
        assert!(!x.is_empty() && x == y, "{f} differs");
    }
    // The quick subset is the head of the full set, and every callsign is on its radar list
    // as one of its spoken variants.
    let full = Dataset::load(&reg, "atco2-sim-1h", Subset::Full).unwrap();
    assert_eq!(a.utterances[..], full.utterances[..a.utterances.len()]);
    for u in &a.utterances {
        if let Some((_, s, e)) = u.entities.first() {
            let said = &u.words[*s..*e];
            assert!(
                a.lists[&u.id].phrases.iter().any(|p| p == said),
                "{}: {said:?}",
                u.id
            );
            assert!(u.callsign.is_some());
        } else {
            assert!(u.callsign.is_none());
        }
    }
}

#[test]
fn rare_waypoints_change_only_the_lm_text() {
    let reg = registry();
    let base = Dataset::load(&reg, "atco2-sim-1h", Subset::Full).unwrap();
    let rare = Dataset::load(&reg, "atco2-sim-1h-rare", Subset::Full).unwrap();
    // Same traffic (ids carry the set name): same words, entities and radar lists.
    assert_eq!(base.utterances.len(), rare.utterances.len());
    for (a, b) in base.utterances.iter().zip(&rare.utterances) {
        assert!(a.words == b.words && a.entities == b.entities, "{}", a.id);
        assert_eq!(base.lists[&a.id], rare.lists[&b.id], "{}", a.id);
    }
    assert!(base.global_lists.is_empty());
    let words: Vec<&str> = rare.global_lists["rare"]
        .phrases
        .iter()
        .map(|p| {
            assert_eq!(p.len(), 1);
            p[0].as_str()
        })
        .collect();
    assert_eq!(words.len(), 30);
    let count = |text: &[String], w: &str| -> usize {
        text.iter()
            .map(|l| l.split_whitespace().filter(|t| *t == w).count())
            .sum()
    };
    let mut spoken = 0;
    for w in &words {
        // Once in the LM text (the published waypoint list), more often without the rule.
        assert_eq!(count(&rare.lm_text, w), 1, "{w}");
        assert!(count(&base.lm_text, w) > 5, "{w}");
        spoken += rare
            .utterances
            .iter()
            .map(|u| u.words.iter().filter(|t| t == w).count())
            .sum::<usize>();
    }
    // They are spoken in the test set (the thesis: 12 waypoints, 191 times in the 1-h set).
    assert!(spoken >= 40, "rare waypoints spoken {spoken} times");
}

#[test]
fn earnings21_segments_cover_every_call_without_splitting_entities() {
    let reg = registry();
    let ds = Dataset::load(&reg, "earnings21", Subset::Full).unwrap();
    let s = ds.stats();
    assert_eq!(s.documents, 44);
    // 39.2 hours of audio in the metadata, 361,302 scored words (as `make reproduce` counts).
    assert!((s.hours - 39.26).abs() < 0.01, "{}", s.hours);
    assert_eq!(s.words, 361_302);
    assert_eq!(s.global_lists["oracle"], 1013);
    assert_eq!(s.global_lists["distractor"], 1782);
    let mean = s.hours * 3600.0 / s.utterances as f64;
    assert!((160.0..=200.0).contains(&mean), "mean segment {mean} s");
    // Segments tile each call's tokens.
    let mut last: Option<(&str, usize)> = None;
    for seg in &ds.segments {
        match last {
            Some((d, end)) if d == seg.doc => assert_eq!(seg.tokens.start, end),
            _ => assert_eq!(seg.tokens.start, 0),
        }
        last = Some((&seg.doc, seg.tokens.end));
    }
    // No PERSON/ORG entity is cut in two: the span count equals the count over whole calls
    // (5,082, the NE-A denominator of `make reproduce`).
    assert_eq!(s.entities, 5082);
    // Per-call oracle lists hold only phrases that occur in the call.
    let u = &ds.utterances[0];
    let doc_words: Vec<&String> = ds
        .utterances
        .iter()
        .filter(|v| v.doc == u.doc)
        .flat_map(|v| &v.words)
        .collect();
    for p in &ds.list_for(u).unwrap().phrases {
        assert!(
            doc_words
                .windows(p.len())
                .any(|w| w.iter().zip(p).all(|(a, b)| *a == b)),
            "{p:?}"
        );
    }
    let quick = Dataset::load(&reg, "earnings21", Subset::Quick)
        .unwrap()
        .stats();
    assert_eq!(quick.utterances, 2);
    assert!(quick.hours < 0.15);
}

/// ConEC (datasets/conec): each call's context list as `list:conec`, and the corrected
/// transcripts as their own set with the base set's graph.
#[test]
fn conec_lists_and_corrected_references() {
    let reg = registry();
    let ds = Dataset::load(&reg, "earnings21", Subset::Quick).unwrap();
    let u = &ds.utterances[0];
    assert_eq!(u.doc.as_deref(), Some("4320211"));
    let conec = ds.named_list("conec", u).unwrap();
    // 4320211.txt: 745 lines of `word count`, 736 distinct words (the participants' names and
    // firms, added after the slides' words, repeat some); the counts are not words.
    assert!(conec.phrases.iter().all(|p| p.len() == 1));
    assert!(conec.phrases.iter().all(|p| p[0].parse::<u64>().is_err()));
    assert!(conec.phrases.contains(&vec!["stember".to_string()]));
    assert_eq!(conec.phrases.len(), 736);
    assert!(ds.has_list("conec") && ds.has_list("oracle") && !ds.has_list("slides"));
    assert_eq!(ds.list_names(), ["distractor", "oracle", "conec"]);
    // A global list is the same for every utterance; a per-call one is the call's.
    assert!(ds.named_list("oracle", u).is_some());
    let full = Dataset::load(&reg, "earnings21", Subset::Full).unwrap();
    let other = full
        .utterances
        .iter()
        .find(|v| v.doc.as_deref() == Some("4330115"))
        .unwrap();
    assert_ne!(full.named_list("conec", other), Some(conec));
    assert_eq!(full.doc_lists["conec"].len(), 44);

    // The corrected set: same calls and segmenting, more entities tagged, its own words.
    let fixed = Dataset::load(&reg, "earnings21-conec", Subset::Full).unwrap();
    let s = fixed.stats();
    assert_eq!(s.documents, 44);
    assert_eq!(s.entities, 7402);
    assert_ne!(s.words, 361_302);
    assert_eq!(
        reg.get("earnings21-conec")
            .unwrap()
            .graph_of("earnings21-conec"),
        "earnings21"
    );
    assert_eq!(
        reg.get("earnings21").unwrap().graph_of("earnings21"),
        "earnings21"
    );
}

/// `like = "NAME"` takes the keys an entry does not set from NAME's (chains resolve); an unknown
/// base and a cycle are errors naming the entry.
#[test]
fn registry_entries_inherit_with_like() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("datasets.toml");
    let base = "[a]\nkind = \"lm-text\"\npath = \"a.txt\"\nlicence = \"L\"\ndescription = \"A\"\n";
    std::fs::write(
        &p,
        format!(
            "{base}[b]\nlike = \"a\"\ndescription = \"B\"\n[c]\nlike = \"b\"\npath = \"c.txt\"\n"
        ),
    )
    .unwrap();
    let reg = Registry::read(&p).unwrap();
    assert_eq!(reg.get("b").unwrap().description(), "B");
    assert_eq!(reg.get("c").unwrap().description(), "B");
    assert_eq!(reg.get("c").unwrap().kind_name(), "lm-text");
    std::fs::write(&p, format!("{base}[b]\nlike = \"z\"\n")).unwrap();
    let e = Registry::read(&p).unwrap_err().to_string();
    assert!(e.contains("[b] like = \"z\": no such dataset"), "{e}");
    std::fs::write(&p, "[b]\nlike = \"c\"\n[c]\nlike = \"b\"\n").unwrap();
    let e = Registry::read(&p).unwrap_err().to_string();
    assert!(e.contains("a cycle (b -> c -> b)"), "{e}");
}

#[test]
fn bad_registry_entries_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("datasets.toml");
    std::fs::write(&p, "[x]\nkind = \"atc-sim\"\nresources = \"nowhere\"\n").unwrap();
    let e = Registry::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("datasets.toml") && e.contains("missing field"),
        "{e}"
    );
    let reg = registry();
    let e = Dataset::load(&reg, "atco2-sim-9h", Subset::Full)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("atco2-sim-9h") && e.contains("atco2-sim-4h"),
        "{e}"
    );
    let e = Dataset::load(&reg, "earnings22", Subset::Full)
        .unwrap_err()
        .to_string();
    assert!(e.contains("LM training text only"), "{e}");
}

/// Earnings-21's quick subset decodes on a graph from a harder-pruned LM of the same text
/// (`quick_prune`): the same vocabulary, fewer bigrams and trigrams; the full set's LM is the
/// one it always was (its cache key text unchanged).
#[test]
fn quick_lm_is_pruned_harder_with_the_same_vocabulary() {
    let reg = registry();
    let spec = reg.get("earnings21").unwrap().lm();
    assert_eq!(spec.quick_prune, vec![3, 3]);
    assert_eq!(
        spec.for_subset(Subset::Full).cache_key(),
        "LmSpec { order: 3, prune: [] }"
    );
    assert_eq!(spec.for_subset(Subset::Quick).prune, vec![3, 3]);
    // A dataset without quick_prune uses one LM for both subsets.
    let atc = reg.get("atco2-sim-1h").unwrap().lm();
    assert_eq!(atc.for_subset(Subset::Quick), atc.for_subset(Subset::Full));
    let full = ctx_data::graphs::dataset_lm(&reg, "earnings21", Subset::Full).unwrap();
    let quick = ctx_data::graphs::dataset_lm(&reg, "earnings21", Subset::Quick).unwrap();
    assert_eq!(full.count(1), quick.count(1));
    assert!(
        quick.count(2) * 2 < full.count(2),
        "{} vs {}",
        quick.count(2),
        full.count(2)
    );
    assert!(
        quick.count(3) * 2 < full.count(3),
        "{} vs {}",
        quick.count(3),
        full.count(3)
    );
}

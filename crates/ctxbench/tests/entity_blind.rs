//! Entity-blindness of the simulated acoustics as the runner builds them: with frequency-aware
//! errors switched on (`rare_confusion`), tagging other words as entities (same words, other
//! tags, or none) leaves every simulated score matrix byte-identical — only the words and the
//! model's training text decide what a simulator gets wrong — while the knob itself does change
//! the scores (so the comparison is not vacuous).

mod common;

use ctx_data::dataset::Subset;
use ctx_data::registry::{DatasetSpec, Registry};
use ctx_graph::compile::GraphKind;
use ctxbench::pipeline::{Setup, SetupOptions};

/// The registry with `rare` as atco2-sim-1h's `rare_confusion` (hybrid and CTC).
fn registry(rare: f64) -> Registry {
    let mut reg = Registry::read(&common::root().join("datasets.toml")).unwrap();
    match reg.datasets.get_mut("atco2-sim-1h").unwrap() {
        DatasetSpec::AtcSim {
            acoustic,
            acoustic_ctc,
            ..
        } => {
            acoustic.rare_confusion = rare;
            if let Some(c) = acoustic_ctc.as_mut() {
                c.rare_confusion = rare;
            }
        }
        _ => panic!("atco2-sim-1h is an ATC simulation"),
    }
    reg
}

#[test]
fn other_entity_tags_give_byte_identical_scores() {
    let cache = common::root().join("cache/graphs");
    for kind in [GraphKind::Hclg, GraphKind::parse("tlg-compact").unwrap()] {
        let mut opts = SetupOptions::hclg(Subset::Quick, &cache);
        opts.kind = kind;
        let on = Setup::load(&registry(0.5), "atco2-sim-1h", &opts).unwrap();
        let off = Setup::load(&registry(0.0), "atco2-sim-1h", &opts).unwrap();
        let utts = &on.dataset.utterances;
        assert!(
            utts.iter().any(|u| !u.entities.is_empty()),
            "the set has entities"
        );
        let mut changed = 0;
        for (k, u) in utts.iter().enumerate() {
            let scores = on.scores(u).unwrap();
            // Other tags on the same words: the first word, the last one, none.
            for entities in [
                vec![("PERSON".to_string(), 0, 1)],
                vec![(
                    "ORG".to_string(),
                    u.words.len().saturating_sub(1),
                    u.words.len(),
                )],
                Vec::new(),
            ] {
                let mut v = u.clone();
                v.entities = entities;
                assert_eq!(
                    on.scores(&v).unwrap().data(),
                    scores.data(),
                    "{kind:?} utterance {k}: entity tags changed the simulated scores"
                );
            }
            changed += (off.scores(u).unwrap().data() != scores.data()) as usize;
        }
        // Only utterances with a word rare in the ATC training text change (10 of 60 hybrid).
        assert!(
            changed >= 5,
            "{kind:?}: rare_confusion changed only {changed} of {} utterances",
            utts.len()
        );
    }
}

//! Graphs written by OpenFst itself (kaldifst from PyPI; `scripts/make_openfst_fixtures.py`),
//! vector and const, are read with their structure, weights and labels intact.

use ctx_graph::compile::GraphKind;
use ctx_graph::external::{load_graph, read_fst};
use ctx_graph::rustfst::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openfst")
        .join(name)
}

#[test]
fn vector_and_const_fsts_from_openfst_read_alike() {
    let v = read_fst(&fixture("small.vector.fst")).unwrap();
    let c = read_fst(&fixture("small.const.fst")).unwrap();
    for f in [&v, &c] {
        assert_eq!(f.num_states(), 4);
        assert_eq!(f.start(), Some(0));
        let arcs: Vec<(u32, u32, u32, f32, u32)> = (0..4)
            .flat_map(|s| {
                f.get_trs(s)
                    .unwrap()
                    .trs()
                    .iter()
                    .map(move |t| (s, t.ilabel, t.olabel, *t.weight.value(), t.nextstate))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            arcs,
            vec![
                (0, 1, 1, 0.25, 1),
                (0, 3, 3, 1.0, 3),
                (1, 1, 0, 0.1, 1),
                (1, 2, 2, 0.5, 2),
                (2, 2, 0, 0.1, 2),
                (3, 3, 0, 0.1, 3),
                (3, 0, 0, 0.5, 2),
            ]
        );
        assert_eq!(f.final_weight(2).unwrap().map(|w| *w.value()), Some(0.75));
        assert_eq!(f.final_weight(0).unwrap(), None);
    }
    let g = load_graph(
        &fixture("small.const.fst"),
        &fixture("words.txt"),
        None,
        GraphKind::Hclg,
    )
    .unwrap();
    assert_eq!(g.num_columns, 3);
    assert_eq!(g.symbols.word_labels(), vec![1, 2, 3]);
}

#[test]
fn not_an_fst_and_wrong_words_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.fst");
    std::fs::write(&p, "0 1 1 1\n").unwrap();
    let e = read_fst(&p).unwrap_err().to_string();
    assert!(
        e.contains("x.fst") && e.contains("not an OpenFst binary"),
        "{e}"
    );
    let w = dir.path().join("words.txt");
    std::fs::write(&w, "<eps> 0\nhello 1\n").unwrap();
    let e = load_graph(&fixture("small.vector.fst"), &w, None, GraphKind::Hclg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("output label 3") && e.contains("words.txt"),
        "{e}"
    );
    // A label map that does not cover input label 3.
    let e = load_graph(
        &fixture("small.vector.fst"),
        &fixture("words.txt"),
        Some(&[u32::MAX, 0, 1]),
        GraphKind::Hclg,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("input label 3"), "{e}");
}

//! Word boosting (001 §3.3) equals decoding a graph whose arcs with a listed output word carry
//! the word's cost in their weight — the composition with 001's single-state acceptor B —
//! without touching the graph; bad tables are refused.

mod common;

use common::{random_graph, Rng, LABELS};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::csr::DecodingGraph;
use wfst_search::{decode_utterance, Booster, Decoder, DecoderConfig, Stream, WordBooster};

/// Also under a narrow beam (odd cases): the search tests an arc against the beam with the
/// table's least cost before it looks the word up (`ArcDelta::min_delta`), which must skip
/// only arcs that the composed graph's search prunes too.
#[test]
fn word_booster_equals_the_composed_graph() {
    let mut rng = Rng(11);
    let mut compared = 0;
    for case in 0..100 {
        let cfg = DecoderConfig {
            beam: if case % 2 == 0 { 1000.0 } else { 3.0 },
            max_active: 1_000_000,
            lattice_beam: 2.0,
            acoustic_scale: 1.0,
            prune_interval: 2,
            lattice: true,
        };
        let fst = random_graph(&mut rng, 4 + case % 6, 5, 2);
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let mut table: Vec<(u32, f32)> = Vec::new();
        for w in 1..=5 {
            if rng.below(2) == 0 {
                table.push((w, (rng.below(5) as f32) - 3.0));
            }
        }
        let words = WordBooster::new(&g, table.clone()).unwrap();
        // The composed graph: each listed word's cost added to its arcs' weights.
        let mut composed = g.clone();
        for a in 0..composed.num_arcs() {
            if let Some(&(_, c)) = table.iter().find(|(w, _)| *w == composed.olabel[a]) {
                composed.weight[a] += c;
            }
        }
        let rows = 3 + case as usize % 5;
        let data = (0..rows * LABELS as usize)
            .map(|_| -3.0 * rng.unit())
            .collect();
        let m = ScoreMatrix::new(rows, LABELS as usize, data).unwrap();
        let run = |g: &DecodingGraph, b: Booster| {
            let dec = Decoder::new(g, cfg.clone()).unwrap();
            let mut s = Stream::new("u", b);
            decode_utterance(&dec, &mut s, &m, 2, None)
        };
        let (a, b) = (
            run(&g, Booster::Words(words)),
            run(&composed, Booster::None),
        );
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.words(), b.words(), "case {case}");
                let (ca, cb) = (a.segments[0].best.cost(), b.segments[0].best.cost());
                // NaN both: the split costs are unknown when the lattice's best path has other
                // words (an exact tie); the words were compared above.
                assert!(
                    (ca.is_nan() && cb.is_nan()) || (ca - cb).abs() <= 1e-4 * cb.abs().max(1.0),
                    "case {case}: {ca} vs {cb}"
                );
                compared += 1;
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("case {case}: {a:?} vs {b:?}"),
        }
    }
    assert!(compared > 70, "{compared}");
}

#[test]
fn bad_word_tables_are_refused() {
    let mut rng = Rng(3);
    let g = DecodingGraph::from_fst(&random_graph(&mut rng, 5, 3, 2), None).unwrap();
    let e = WordBooster::new(&g, [(0, -1.0)]).unwrap_err().to_string();
    assert!(e.contains("epsilon"), "{e}");
    let e = WordBooster::new(&g, [(2, f32::NAN)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("word 2") && e.contains("not finite"), "{e}");
    let w = WordBooster::new(&g, [(3, -1.0), (1, 2.0), (3, -2.5)]).unwrap();
    assert_eq!(w.words(), &[1, 3]);
    assert_eq!(w.costs(), &[2.0, -2.5]);
    assert_eq!(w.cost_of(3), -2.5);
    assert_eq!(w.cost_of(2).to_bits(), (-0.0f32).to_bits());
    let stack = Booster::Stack(vec![Booster::Words(w.clone()), Booster::None]);
    let e = stack
        .validate(g.num_arcs(), g.num_states())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be stacked"), "{e}");
    assert!(Booster::Words(w)
        .validate(g.num_arcs(), g.num_states() + 1)
        .is_err());
}

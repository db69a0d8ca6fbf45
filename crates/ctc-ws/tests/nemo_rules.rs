//! CTC-WS on hand-made log-probabilities against a hand derivation of NeMo's rules
//! (`run_word_spotter`, `find_best_hyps`, `filter_wb_hyps`, `merge_alignment_with_ws_hyps`).

use ctc_ws::{greedy_words, merge, spot, ContextGraph, Labels, SpotterConfig};
use ctx_core::scores::ScoreMatrix;

/// Columns: blank, ▁a, ▁b, c, d. Greedy reads "▁a" (frame 0), "▁b" (2), "c" (3): "a bc".
fn scene() -> (ScoreMatrix, Labels) {
    #[rustfmt::skip]
    let lp = vec![
        -3.0, -0.1, -9.0, -9.0, -9.0,
        -0.1, -9.0, -9.0, -9.0, -9.0,
        -2.0, -9.0, -0.2, -9.0, -9.0,
        -1.0, -9.0, -9.0, -0.5, -1.5,
        -0.05, -9.0, -9.0, -9.0, -9.0,
    ];
    let labels = Labels {
        pieces: ["<blk>", "▁a", "▁b", "c", "d"].map(String::from).to_vec(),
        blank: 0,
    };
    (ScoreMatrix::new(5, 5, lp).unwrap(), labels)
}

#[test]
fn a_spotted_phrase_replaces_the_greedy_word_it_covers() {
    let (lp, labels) = scene();
    let g = ContextGraph::new(&[("bd".into(), vec![vec![2, 4]])], 0, 5).unwrap();
    let s = spot(&lp, &g, &labels, &SpotterConfig::default()).unwrap();
    // By hand: frame 0's ▁b is below the start threshold (ln 0.001) and frame 1 is blank
    // (above 0.8): the token starts on frame 2 (−0.2 + 3 = 2.8); on frame 3 its step to d gives
    // 2.8 − 1.5 + 3 = 4.3, a spot over frames 2–3 (d's state has only its loop: the token ends).
    // Its greedy word "bc" scores (−0.2 + 0.6) + (−0.5 + 0.6) = 0.5 ≤ 4.3: kept.
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].start, s[0].end), (2, 3));
    assert!((s[0].score - 4.3).abs() < 1e-5, "{}", s[0].score);
    let w = greedy_words(&lp, &labels);
    let spans: Vec<(&str, usize, usize)> = w
        .iter()
        .map(|x| (x.text.as_str(), x.start, x.end))
        .collect();
    assert_eq!(spans, vec![("a", 0, 0), ("bc", 2, 3)]);
    assert_eq!(merge(&w, &s, &g, 30.0), vec!["a", "bd"]);
}

#[test]
fn a_spot_that_does_not_beat_the_greedy_words_is_dropped() {
    let (lp, labels) = scene();
    let g = ContextGraph::new(&[("bd".into(), vec![vec![2, 4]])], 0, 5).unwrap();
    // Without the context score the spot scores −0.2 − 1.5 = −1.7 (above the keyword threshold
    // −5) but below its greedy word's 0.5: a false accept the filter removes.
    let cfg = SpotterConfig {
        context_score: 0.0,
        ..SpotterConfig::default()
    };
    assert!(spot(&lp, &g, &labels, &cfg).unwrap().is_empty());
    // A spelling variant ("b d" as two words' labels, or here the same labels twice) changes
    // nothing: the states are shared.
    let g2 = ContextGraph::new(&[("bd".into(), vec![vec![2, 4], vec![2, 4]])], 0, 5).unwrap();
    assert_eq!(g2.states(), g.states());
}

#[test]
fn bad_settings_and_widths_are_refused() {
    let (lp, labels) = scene();
    let g = ContextGraph::new(&[("bd".into(), vec![vec![2, 4]])], 0, 5).unwrap();
    let cfg = SpotterConfig {
        blank_threshold: 0.0,
        ..SpotterConfig::default()
    };
    let e = spot(&lp, &g, &labels, &cfg).unwrap_err().to_string();
    assert!(e.contains("blank_threshold 0"), "{e}");
    let e = ContextGraph::new(&[("x".into(), vec![vec![0, 4]])], 0, 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("phrase 'x'") && e.contains("label 0"), "{e}");
    let g6 = ContextGraph::new(&[("bd".into(), vec![vec![2, 4]])], 0, 6).unwrap();
    assert!(spot(&lp, &g6, &labels, &SpotterConfig::default()).is_err());
}

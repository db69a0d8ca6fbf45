//! The engine against brute force on small random graphs, plus streams, chunks, boosters,
//! endpoints and bad input.

mod common;

use common::{brute_force, random_graph, random_scores, Rng, LABELS};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeMap;
use wfst_search::{
    decode_utterance, ArcSetBooster, Booster, DecodeError, Decoder, DecoderConfig, EndpointConfig,
    Stream,
};

fn wide() -> DecoderConfig {
    DecoderConfig {
        beam: 1000.0,
        max_active: 1_000_000,
        lattice_beam: 2.5,
        acoustic_scale: 0.8,
        prune_interval: 2,
        lattice: true,
    }
}

/// Random case `case`: a graph, scores and the brute-force costs (`None` without a complete path).
fn random_case(
    rng: &mut Rng,
    case: usize,
    cfg: &DecoderConfig,
) -> Option<(StdFst, ScoreMatrix, BTreeMap<Vec<u32>, f32>)> {
    let fst = random_graph(rng, 3 + (case % 4) as u32, 4, 3);
    let rows = 2 + (case % 5);
    let scores = random_scores(rng, rows, LABELS as usize);
    let truth = brute_force(&fst, &scores, cfg.acoustic_scale, &|_| 0.0);
    (!truth.is_empty()).then_some((fst, scores, truth))
}

#[test]
fn best_path_and_lattice_match_brute_force() {
    let mut rng = Rng(7);
    let mut checked = 0;
    for case in 0..200 {
        let cfg = wide();
        // Without a complete path: the decoder's "all final" fallback, tested below.
        let Some((fst, scores, truth)) = random_case(&mut rng, case, &cfg) else {
            continue;
        };
        let graph = DecodingGraph::from_fst(&fst, None).unwrap();
        let dec = Decoder::new(&graph, cfg.clone()).unwrap();
        let mut stream = Stream::new(format!("case{case}"), Booster::None);
        let res = match decode_utterance(&dec, &mut stream, &scores, 3, None) {
            Ok(r) => r,
            Err(DecodeError::NoSurvivors { .. }) => continue, // dead ends before the last row
            Err(e) => panic!("{e}"),
        };
        let seg = &res.segments[0];
        assert!(seg.reached_final, "case {case}");
        let (best_words, best_cost) = truth
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(w, c)| (w.clone(), *c))
            .unwrap();
        assert_eq!(seg.best.words, best_words, "case {case}");
        let lat = seg.lattice.as_ref().unwrap();
        let lp = lat.best_path().unwrap();
        assert!(
            (lp.cost() - best_cost).abs() < 1e-3,
            "case {case}: {} vs {best_cost}",
            lp.cost()
        );
        assert_eq!(lp.words, best_words, "case {case}");
        assert!((seg.best.cost() - best_cost).abs() < 1e-3);
        // Every word sequence within the lattice beam is in the lattice with its best cost,
        // and nothing in the lattice is cheaper than a real path.
        let seqs = lat.word_sequences();
        for (w, &c) in &truth {
            if c <= best_cost + cfg.lattice_beam - 1e-3 {
                let got = seqs.get(w).copied();
                assert!(
                    got.is_some_and(|g| (g - c).abs() < 1e-3),
                    "case {case}: {w:?} cost {c} (best {best_cost}) -> {got:?}"
                );
            }
        }
        for (w, &c) in &seqs {
            let t = truth.get(w).copied().expect("lattice path is a real path");
            assert!(c >= t - 1e-3, "case {case}: {w:?} {c} < {t}");
        }
        // Oracle against the best path is 0 errors; n-best is sorted and distinct.
        let (e, op) = lat.oracle(&best_words).unwrap();
        assert_eq!(e, 0);
        assert_eq!(op.words, best_words);
        let nb = lat.n_best(5);
        assert_eq!(nb[0].words, best_words);
        for w in nb.windows(2) {
            assert!(w[0].cost() <= w[1].cost() + 1e-6);
            assert_ne!(w[0].words, w[1].words);
        }
        checked += 1;
    }
    assert!(checked > 60, "only {checked} cases had complete paths");
}

#[test]
fn oracle_counts_edits() {
    // A chain graph spelling words 1 2 3 over three rows: the oracle against [1, 4, 3, 2]
    // needs one substitution and one deletion.
    let mut fst = StdFst::new();
    for _ in 0..4 {
        fst.add_state();
    }
    fst.set_start(0).unwrap();
    for (s, w) in [1u32, 2, 3].iter().enumerate() {
        fst.add_tr(s as u32, Tr::new(1, *w, 0.5, s as u32 + 1))
            .unwrap();
    }
    fst.set_final(3, 0.0).unwrap();
    let graph = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&graph, wide()).unwrap();
    let scores = ScoreMatrix::new(3, 1, vec![-1.0; 3]).unwrap();
    let mut st = Stream::new("chain", Booster::None);
    let res = decode_utterance(&dec, &mut st, &scores, 2, None).unwrap();
    let lat = res.segments[0].lattice.as_ref().unwrap();
    assert_eq!(lat.oracle(&[1, 4, 3, 2]).unwrap().0, 2);
    assert_eq!(lat.oracle(&[]).unwrap().0, 3);
    assert!((lat.density() - 1.0).abs() < 1e-9);
    assert_eq!(res.segments[0].best.end_rows(3), vec![1, 2, 3]);
    assert!((res.segments[0].best.cost() - (1.5 + 3.0 * 0.8)).abs() < 1e-5);
}

fn decode_all(
    graph: &DecodingGraph,
    cfg: &DecoderConfig,
    utts: &[ScoreMatrix],
    boosters: &[Booster],
    streams: usize,
    chunk: usize,
) -> Vec<(Vec<u32>, f32, Option<wfst_search::WordLattice>)> {
    let dec = Decoder::new(graph, cfg.clone()).unwrap();
    let mut out = vec![None; utts.len()];
    for group in (0..utts.len()).collect::<Vec<_>>().chunks(streams) {
        let mut ss: Vec<Stream> = group
            .iter()
            .map(|&u| Stream::new(format!("u{u}"), boosters[u].clone()))
            .collect();
        let max_rows = group.iter().map(|&u| utts[u].rows()).max().unwrap();
        let mut t = 0;
        while t < max_rows {
            let chunks: Vec<ScoreMatrix> = group
                .iter()
                .map(|&u| utts[u].slice_rows(t..t + chunk))
                .collect();
            let refs: Vec<&ScoreMatrix> = chunks.iter().collect();
            for r in dec.advance(&mut ss, &refs, None) {
                assert!(r.unwrap().is_empty());
            }
            t += chunk;
        }
        for (k, &u) in group.iter().enumerate() {
            let seg = dec.finish(&mut ss[k]).unwrap();
            out[u] = Some((seg.best.words.clone(), seg.best.cost(), seg.lattice));
        }
    }
    out.into_iter().map(Option::unwrap).collect()
}

/// A bigger graph: a loop over 40 "words", each a chain of 2–4 emitting states.
fn loop_graph(rng: &mut Rng) -> StdFst {
    loop_graph_of(rng, 40)
}

/// [`loop_graph`] with `words` words (the root has one emitting arc per word).
fn loop_graph_of(rng: &mut Rng, words: u32) -> StdFst {
    let mut fst = StdFst::new();
    let root = fst.add_state();
    fst.set_start(root).unwrap();
    fst.set_final(root, 0.0).unwrap();
    for w in 1..=words {
        let len = 2 + rng.below(3);
        let mut s = root;
        for k in 0..len {
            let t = fst.add_state();
            let ol = if k == 0 { w } else { 0 };
            fst.add_tr(s, Tr::new(1 + rng.below(8) as u32, ol, 3.0 * rng.unit(), t))
                .unwrap();
            fst.add_tr(t, Tr::new(1 + rng.below(8) as u32, 0, 0.7, t))
                .unwrap();
            s = t;
        }
        fst.add_tr(s, Tr::new(0, 0, 0.2 * rng.unit(), root))
            .unwrap();
    }
    fst
}

#[test]
fn streams_and_chunks_do_not_change_results() {
    let mut rng = Rng(11);
    let fst = loop_graph(&mut rng);
    let graph = DecodingGraph::from_fst(&fst, None).unwrap();
    let utts: Vec<ScoreMatrix> = (0..8)
        .map(|i| random_scores(&mut rng, 30 + 7 * i, 8))
        .collect();
    let boosters = vec![Booster::None; utts.len()];
    let cfg = DecoderConfig {
        beam: 8.0,
        max_active: 50,
        lattice_beam: 4.0,
        acoustic_scale: 1.0,
        prune_interval: 5,
        lattice: true,
    };
    let reference = decode_all(&graph, &cfg, &utts, &boosters, 1, 1000);
    for (streams, chunk) in [(8, 1), (8, 7), (3, 4), (1, 13)] {
        let got = decode_all(&graph, &cfg, &utts, &boosters, streams, chunk);
        assert_eq!(got, reference, "{streams} streams, chunk {chunk}");
    }
    assert!(reference.iter().all(|r| !r.0.is_empty()));
    // The active-token count is a property of the search, not of the chunking: at least one
    // token per frame, at most every state.
    let dec = Decoder::new(&graph, cfg.clone()).unwrap();
    let counts: Vec<(u64, u64)> = [1, 13, 1000]
        .iter()
        .map(|&chunk| {
            let mut st = Stream::new("u", Booster::None);
            let r = decode_utterance(&dec, &mut st, &utts[3], chunk, None).unwrap();
            (r.segments[0].rows, r.segments[0].tokens)
        })
        .collect();
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
    let (rows, tokens) = counts[0];
    assert!(rows <= tokens && tokens <= rows * graph.num_states() as u64 && tokens > rows);
}

#[test]
fn arc_booster_equals_editing_the_boosted_arcs() {
    // 40 words: every row fits one 64-bit window of the booster's bits; 100 words: the root's
    // row is wider (the per-arc lookup) and word 80's arc lies past its first 64 arcs.
    for words in [40, 100] {
        let mut rng = Rng(5);
        let fst = loop_graph_of(&mut rng, words);
        let graph = DecodingGraph::from_fst(&fst, None).unwrap();
        // Boost every arc carrying words 3, 17, 29 or 80 (their first arc) and a few inner arcs.
        let mut arcs: Vec<u32> = (0..graph.num_arcs() as u32)
            .filter(|&a| [3, 17, 29, 80].contains(&graph.olabel[a as usize]))
            .collect();
        arcs.extend([40, 41, 90, 127, 128]);
        // Row edges: the first emitting arc of a state and the first of the next state (a
        // marked row's bits run on into the next row's: the expansion must stop at its own
        // row's end), and arcs 63 and 64 of the root's row where it is wider than 64 arcs.
        for s in [3u32, 8, 13, 20, 27] {
            let (r, n) = (graph.emitting(s), graph.emitting(s + 1));
            if !r.is_empty() && !n.is_empty() {
                arcs.extend([r.start as u32, n.start as u32]);
            }
        }
        let root = graph.emitting(graph.start);
        if root.len() > 65 {
            arcs.extend([root.start as u32 + 63, root.start as u32 + 64]);
        }
        // And some word-end ε arcs back to the root: the ε-closure's boosted loop (and the
        // lattice's ε links).
        let ne = graph.num_emitting() as u32;
        assert!(graph.num_arcs() as u32 > ne + 11);
        arcs.extend([ne, ne + 5, ne + 11]);
        let discount = -2.5;
        let mut edited = graph.clone();
        for &a in &arcs {
            edited.weight[a as usize] += discount;
        }
        let utts: Vec<ScoreMatrix> = (0..5).map(|_| random_scores(&mut rng, 40, 8)).collect();
        let booster = ArcSetBooster::new(&graph, arcs, discount).unwrap();
        // Narrow beams too: a boosted arc the discount brings inside the beam must be kept.
        for beam in [2.0, 4.0, 10.0] {
            let cfg = DecoderConfig {
                beam,
                lattice_beam: beam / 2.0,
                ..DecoderConfig::default()
            };
            let boosted = vec![Booster::ArcSet(booster.clone()); utts.len()];
            let plain = vec![Booster::None; utts.len()];
            let a = decode_all(&graph, &cfg, &utts, &boosted, 5, 6);
            let b = decode_all(&edited, &cfg, &utts, &plain, 5, 6);
            assert_eq!(a, b, "{words} words, beam {beam}");
            let c = decode_all(&graph, &cfg, &utts, &plain, 5, 6);
            assert_ne!(
                a, c,
                "the boost should change something ({words} words, beam {beam})"
            );
            // The general path (a stack, deltas looked up per arc) adds two half discounts.
            let half = Booster::ArcSet(
                ArcSetBooster::new(&graph, booster.arcs().to_vec(), discount / 2.0).unwrap(),
            );
            let stacked = vec![Booster::Stack(vec![half.clone(), half]); utts.len()];
            assert_eq!(
                decode_all(&graph, &cfg, &utts, &stacked, 5, 6),
                b,
                "stack, {words} words, beam {beam}"
            );
        }
    }
}

/// The best score the biasing FST gives a word sequence (ε arcs free moves, final weights).
fn bias_score(b: &StdFst, words: &[u32]) -> f32 {
    let mut cur: BTreeMap<u32, f32> = BTreeMap::from([(b.start().unwrap(), 0.0)]);
    let close = |cur: &mut BTreeMap<u32, f32>| loop {
        let mut changed = false;
        for (st, c) in cur.clone() {
            for tr in b.get_trs(st).unwrap().trs() {
                if tr.ilabel == 0 {
                    let n = c + *tr.weight.value();
                    let e = cur.entry(tr.nextstate).or_insert(f32::INFINITY);
                    if n < *e - 1e-6 {
                        *e = n;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    };
    for &w in words {
        close(&mut cur);
        let mut next = BTreeMap::new();
        for (st, c) in &cur {
            for tr in b.get_trs(*st).unwrap().trs() {
                if tr.ilabel == w {
                    let e = next.entry(tr.nextstate).or_insert(f32::INFINITY);
                    *e = f32::min(*e, c + *tr.weight.value());
                }
            }
        }
        cur = next;
    }
    close(&mut cur);
    cur.iter()
        .filter_map(|(st, c)| b.final_weight(*st).unwrap().map(|f| c + *f.value()))
        .fold(f32::INFINITY, f32::min)
}

/// HCLG-boosting by composition (003 §3.1.4): decoding graph ∘ biasing FST gives every path its
/// own cost plus the biasing score of its words, so the decoder's best path is the brute-force
/// argmin of that sum.
#[test]
fn graph_composed_with_biasing_fst_decodes_the_biased_best_path() {
    use ctx_graph::biasing::build_biasing_fst;
    use ctx_graph::compile::compose_sorted;
    let mut rng = Rng(17);
    let mut checked = 0;
    let mut changed = 0;
    for case in 0..150 {
        let cfg = wide();
        let Some((fst, scores, truth)) = random_case(&mut rng, case, &cfg) else {
            continue;
        };
        let phrases = [vec![1, 2], vec![3], vec![2, 2, 4], vec![5, 1]];
        let b = build_biasing_fst(&[1, 2, 3, 4, 5], &phrases, -1.5).unwrap();
        let composed = compose_sorted(&fst, &b, "test").unwrap();
        let biased: BTreeMap<Vec<u32>, f32> = truth
            .iter()
            .map(|(w, c)| (w.clone(), c + bias_score(&b, w)))
            .collect();
        let pick = |m: &BTreeMap<Vec<u32>, f32>| {
            m.iter()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(w, c)| (w.clone(), *c))
                .unwrap()
        };
        let (words, cost) = pick(&biased);
        let graph = DecodingGraph::from_fst(&composed, None).unwrap();
        let dec = Decoder::new(&graph, cfg.clone()).unwrap();
        let mut stream = Stream::new(format!("case{case}"), Booster::None);
        let res = match decode_utterance(&dec, &mut stream, &scores, 3, None) {
            Ok(r) => r,
            Err(DecodeError::NoSurvivors { .. }) => continue,
            Err(e) => panic!("{e}"),
        };
        let seg = &res.segments[0];
        // Equal-cost word sequences (the same arcs in another order) may tie.
        let got = biased.get(&seg.best.words).copied();
        assert!(
            got.is_some_and(|g| (g - cost).abs() < 1e-4),
            "case {case}: {:?} at {got:?}, best {words:?} at {cost}",
            seg.best.words
        );
        assert!((seg.best.cost() - cost).abs() < 1e-3, "case {case}");
        changed += usize::from(words != pick(&truth).0);
        checked += 1;
    }
    assert!(
        checked > 50 && changed > 5,
        "{checked} cases, {changed} changed by biasing"
    );
}

#[test]
fn bad_input_is_named() {
    let mut rng = Rng(3);
    let fst = loop_graph(&mut rng);
    let graph = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&graph, DecoderConfig::default()).unwrap();
    let mut st = Stream::new("utt-narrow", Booster::None);
    let narrow = random_scores(&mut rng, 5, 6);
    let e = decode_utterance(&dec, &mut st, &narrow, 4, None).unwrap_err();
    assert!(matches!(e, DecodeError::ScoreWidth { cols: 6, .. }), "{e}");
    assert!(e.to_string().contains("utt-narrow"));
    let mut st = Stream::new("utt-empty", Booster::None);
    let e = decode_utterance(&dec, &mut st, &ScoreMatrix::zeros(0, 8), 4, None).unwrap_err();
    assert!(matches!(e, DecodeError::EmptyUtterance { .. }));
    assert!(e.to_string().contains("utt-empty"));
    let mut m = random_scores(&mut rng, 5, 8);
    m.row_mut(3)[2] = f32::NAN;
    let mut st = Stream::new("utt-nan", Booster::None);
    let e = decode_utterance(&dec, &mut st, &m, 4, None).unwrap_err();
    assert!(
        matches!(
            e,
            DecodeError::NonFinite {
                frame: 3,
                col: 2,
                ..
            }
        ),
        "{e}"
    );
    // An arc set outside the graph is refused when built, and one built for another graph is
    // refused by the decoder.
    assert!(ArcSetBooster::new(&graph, vec![1_000_000], -1.0).is_err());
    let mut bigger = graph.clone();
    bigger.final_cost.push(f32::INFINITY);
    bigger.e_offsets.push(*bigger.e_offsets.last().unwrap());
    bigger.ne_offsets.push(*bigger.ne_offsets.last().unwrap());
    let bad = Booster::ArcSet(ArcSetBooster::new(&bigger, vec![0], -1.0).unwrap());
    let mut st = Stream::new("utt-booster", bad);
    let e = decode_utterance(&dec, &mut st, &random_scores(&mut rng, 3, 8), 4, None).unwrap_err();
    assert!(e.to_string().contains("states"), "{e}");
    assert!(Decoder::new(
        &graph,
        DecoderConfig {
            beam: f32::NAN,
            ..DecoderConfig::default()
        }
    )
    .is_err());
}

#[test]
fn endpoints_split_at_trailing_silence() {
    // State 0 loops on silence (label 1); word w (label 1 + w) goes out and back.
    let mut fst = StdFst::new();
    let root = fst.add_state();
    fst.set_start(root).unwrap();
    fst.set_final(root, 0.0).unwrap();
    fst.add_tr(root, Tr::new(1, 0, 0.1, root)).unwrap();
    for w in 1..=3u32 {
        let s = fst.add_state();
        fst.add_tr(root, Tr::new(1 + w, w, 1.0, s)).unwrap();
        fst.add_tr(s, Tr::new(1 + w, 0, 0.1, s)).unwrap();
        fst.add_tr(s, Tr::new(0, 0, 0.0, root)).unwrap();
    }
    let graph = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&graph, DecoderConfig::default())
        .unwrap()
        .with_silence(&[1]);
    // silence 5, word 2 ×6, silence 20, word 3 ×6, silence 20, word 1 ×4, silence 3
    let mut rows: Vec<usize> = Vec::new();
    for (label, n) in [
        (0usize, 5),
        (2, 6),
        (0, 20),
        (3, 6),
        (0, 20),
        (1, 4),
        (0, 3),
    ] {
        rows.extend(std::iter::repeat_n(label, n));
    }
    let mut m = ScoreMatrix::zeros(rows.len(), 4);
    for (t, &l) in rows.iter().enumerate() {
        for c in 0..4 {
            m.row_mut(t)[c] = if c == l { 0.0 } else { -8.0 };
        }
    }
    let ep = EndpointConfig {
        frame_s: 0.03,
        rules: vec![wfst_search::endpoint::EndpointRule {
            must_contain_nonsilence: true,
            min_trailing_silence: 0.3,
            max_relative_cost: f32::INFINITY,
            min_utterance_length: 0.0,
        }],
    };
    for chunk in [1, 4, 64] {
        let mut st = Stream::new("ep", Booster::None);
        let res = decode_utterance(&dec, &mut st, &m, chunk, Some(&ep)).unwrap();
        let segs: Vec<(Vec<u32>, u64, bool)> = res
            .segments
            .iter()
            .map(|s| (s.best.words.clone(), s.start_row, s.endpoint))
            .collect();
        assert_eq!(
            segs,
            vec![
                (vec![2], 0, true),
                (vec![3], 21, true),
                (vec![1], 47, false)
            ],
            "chunk {chunk}"
        );
        assert_eq!(res.words(), vec![2, 3, 1]);
        // The running hypothesis keeps each finished segment's words in front of the open
        // segment's partial: it grows [2] → [2, 3] → [2, 3, 1], one chunk boundary at a time.
        let run = res.running_partials();
        let total = m.rows() as u64;
        let mut seen = Vec::new();
        for (i, (row, words)) in run.iter().enumerate() {
            assert!(
                *row % chunk as u64 == 0 || *row == total,
                "chunk {chunk}: row {row}"
            );
            assert!(
                i == 0 || run[i - 1].0 < *row,
                "chunk {chunk}: rows not increasing"
            );
            assert!(
                [2u32, 3, 1].starts_with(words),
                "chunk {chunk}: {words:?} at row {row}"
            );
            if seen.last() != Some(&words.len()) {
                seen.push(words.len());
            }
        }
        if chunk == 64 {
            // One chunk: one running hypothesis, the whole utterance's (no word twice).
            assert_eq!(run, vec![(64, vec![2, 3, 1])]);
        } else {
            assert!(seen.ends_with(&[1, 2, 3]), "chunk {chunk}: {run:?}");
            // The second word shows while its segment is open (rows 21..47).
            let first_23 = run.iter().find(|(_, w)| w.len() == 2).unwrap().0;
            assert!(first_23 > 21 && first_23 <= 47, "chunk {chunk}: {run:?}");
        }
    }
}

#[test]
fn no_final_state_falls_back_to_all_states() {
    let mut fst = StdFst::new();
    let a = fst.add_state();
    let b = fst.add_state();
    fst.set_start(a).unwrap();
    fst.add_tr(a, Tr::new(1, 7, 0.5, b)).unwrap();
    fst.add_tr(b, Tr::new(1, 0, 0.5, b)).unwrap();
    let graph = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&graph, DecoderConfig::default()).unwrap();
    let mut st = Stream::new("nofinal", Booster::None);
    let m = ScoreMatrix::zeros(4, 1);
    let res = decode_utterance(&dec, &mut st, &m, 2, None).unwrap();
    assert!(!res.segments[0].reached_final);
    assert_eq!(res.segments[0].best.words, vec![7]);
    assert_eq!(
        res.segments[0]
            .lattice
            .as_ref()
            .unwrap()
            .best_path()
            .unwrap()
            .words,
        vec![7]
    );
}

/// A zero-cost ε cycle — a self-loop of weight 0 on the start state, or two ε arcs whose
/// weights sum to 0 — lets a tie move a token's back-pointer round the cycle; it used to walk
/// that cycle for ever (issue 58, a hang). Both backends now name it, and a cycle of positive
/// cost still decodes (1-best: the word lattice needs an acyclic ε graph, and says so).
#[test]
fn a_zero_cost_epsilon_cycle_is_an_error_not_a_hang() {
    use ctx_cuda::shim::ShimDevice;
    use wfst_search::GpuDecoder;
    // 0 -a-> 1 -a-> 1 (final), with ε cycles of cost `w1 + w2` through 0 and 2 (or a self-loop).
    let graph = |self_loop: bool, w1: f32, w2: f32| {
        let mut f = StdFst::new();
        for _ in 0..3 {
            f.add_state();
        }
        f.set_start(0).unwrap();
        f.add_tr(0, Tr::new(1, 1, 0.5, 1)).unwrap();
        f.add_tr(1, Tr::new(1, 0, 0.5, 1)).unwrap();
        f.add_tr(2, Tr::new(2, 2, 0.5, 1)).unwrap();
        if self_loop {
            f.add_tr(0, Tr::new(0, 0, w1, 0)).unwrap();
        } else {
            f.add_tr(0, Tr::new(0, 0, w1, 2)).unwrap();
            f.add_tr(2, Tr::new(0, 0, w2, 0)).unwrap();
        }
        f.set_final(1, 0.0).unwrap();
        DecodingGraph::from_fst(&f, None).unwrap()
    };
    let scores = ScoreMatrix::new(4, 2, vec![-1.0; 8]).unwrap();
    for (self_loop, w1, w2, ok) in [
        (true, 0.0, 0.0, false),
        (false, 0.5, -0.5, false),
        (false, 0.5, 0.25, true),
        (true, 0.25, 0.0, true),
    ] {
        let g = graph(self_loop, w1, w2);
        let cfg = DecoderConfig {
            lattice: false,
            ..wide()
        };
        let dec = Decoder::new(&g, cfg).unwrap();
        let mut st = Stream::new("utt-cycle", Booster::None);
        let cpu = decode_utterance(&dec, &mut st, &scores, 2, None);
        let mut gpu = GpuDecoder::new(dec.clone(), Box::new(ShimDevice::new())).unwrap();
        let mut streams = vec![Stream::new("utt-cycle", Booster::None)];
        let shim = gpu
            .decode_utterances(&mut streams, &[&scores], 2, None)
            .remove(0);
        let case = format!("self-loop {self_loop}, weights {w1} + {w2}");
        if ok {
            assert_eq!(cpu.unwrap().words(), vec![1], "{case}");
            assert_eq!(shim.unwrap().words(), vec![1], "{case}");
        } else {
            for e in [cpu.unwrap_err(), shim.unwrap_err()] {
                assert!(matches!(e, DecodeError::EpsilonCycle { .. }), "{case}: {e}");
                assert!(e.to_string().contains("utt-cycle"), "{e}");
            }
        }
    }
}

//! Open-vocabulary contexts in the search (issue 42): a stream's context graph entered at the
//! class slot must decode exactly as the main graph with the context spliced in at every slot
//! arc (Kaldi GrammarFst's expansion, built here as a plain FST): same best words and cost,
//! same lattice; a stream without a context must decode as the graph without slot arcs.

mod common;

use common::{random_graph, random_scores, Rng, LABELS};
use ctx_core::context_list::ContextList;
use ctx_core::scores::ScoreMatrix;
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::path::Path;
use std::sync::Arc;
use wfst_search::{
    decode_utterance, Booster, DecodeError, Decoder, DecoderConfig, SegmentResult, Stream,
};

/// The slot's output label in the random graphs (above their words 1..=5).
const SLOT: u32 = 9;

fn wide() -> DecoderConfig {
    DecoderConfig {
        beam: 1000.0,
        max_active: 1_000_000,
        lattice_beam: 3.0,
        acoustic_scale: 0.8,
        prune_interval: 2,
        lattice: true,
    }
}

/// A context over the random graphs' two non-blank tokens (input labels 2 and 3): "p" reads
/// token 1, "q" token 2, "r" tokens 1 1 (a repeat).
fn context(topo: CtcTopology, text: &str) -> ContextGraph {
    let list = ContextList::parse(text, Path::new("ctx.tsv"), 2.0, true).unwrap();
    let spell = |w: &str| match w {
        "p" => Some(vec![1]),
        "q" => Some(vec![2]),
        "r" => Some(vec![1, 1]),
        _ => None,
    };
    ContextGraph::compile(&list, spell, topo).unwrap()
}

/// `main` with `n` slot arcs (ε:SLOT at a random cost between random states, forward so no ε
/// cycle can form).
fn with_slots(rng: &mut Rng, mut main: StdFst, n: usize) -> StdFst {
    let states = main.num_states() as u32;
    for _ in 0..n {
        let s = rng.below(states as u64) as u32;
        let d = rng.below(states as u64) as u32;
        main.add_tr(s, Tr::new(0, SLOT, 0.5 + rng.unit(), d))
            .unwrap();
    }
    main
}

/// The expansion the search must equal: each slot arc `s → r` replaced by an ε arc into the
/// copy of the context that returns to `r` (one copy per return state), each final context
/// state left by an ε arc to `r` at its final cost; context words written from `base` on.
fn expand(main: &StdFst, ctx: &ContextGraph, base: u32) -> StdFst {
    let cg = &ctx.graph;
    let mut out = StdFst::new();
    for _ in 0..main.num_states() {
        out.add_state();
    }
    out.set_start(main.start().unwrap()).unwrap();
    let mut copies: std::collections::BTreeMap<u32, u32> = Default::default();
    for s in 0..main.num_states() as u32 {
        if let Some(f) = main.final_weight(s).unwrap() {
            out.set_final(s, f).unwrap();
        }
        let trs: Vec<_> = main.get_trs(s).unwrap().trs().to_vec();
        for tr in trs {
            if tr.olabel != SLOT {
                out.add_tr(s, tr).unwrap();
                continue;
            }
            let r = tr.nextstate;
            let first = *copies.entry(r).or_insert_with(|| {
                let first = out.num_states() as u32;
                for _ in 0..cg.num_states() {
                    out.add_state();
                }
                for c in 0..cg.num_states() as u32 {
                    for a in cg.emitting(c).chain(cg.non_emitting(c)) {
                        let ol = if cg.olabel[a] > 0 {
                            base + cg.olabel[a] - 1
                        } else {
                            0
                        };
                        let tr = Tr::new(cg.ilabel[a], ol, cg.weight[a], first + cg.next[a]);
                        out.add_tr(first + c, tr).unwrap();
                    }
                    let fc = cg.final_cost[c as usize];
                    if fc.is_finite() {
                        out.add_tr(first + c, Tr::new(0, 0, fc, r)).unwrap();
                    }
                }
                first
            });
            out.add_tr(s, Tr::new(0, 0, *tr.weight.value(), first + cg.start))
                .unwrap();
        }
    }
    out
}

/// `main` without its slot arcs.
fn without_slots(main: &StdFst) -> StdFst {
    let mut out = main.clone();
    for s in 0..out.num_states() as u32 {
        let keep: Vec<_> = out
            .get_trs(s)
            .unwrap()
            .trs()
            .iter()
            .filter(|t| t.olabel != SLOT)
            .cloned()
            .collect();
        out.delete_trs(s).unwrap();
        for t in keep {
            out.add_tr(s, t).unwrap();
        }
    }
    out
}

fn decode(dec: &Decoder<'_>, stream: &mut Stream, scores: &ScoreMatrix) -> Option<SegmentResult> {
    match decode_utterance(dec, stream, scores, 2, None) {
        Ok(mut r) => Some(r.segments.remove(0)),
        Err(DecodeError::NoSurvivors { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

/// A lattice's word sequences with their costs.
type Sequences = Vec<(Vec<u32>, f32)>;

/// Best words, cost, and the lattice's word sequences of a segment.
fn summary(seg: &SegmentResult) -> (Vec<u32>, f32, Sequences) {
    let lat = seg.lattice.as_ref().unwrap();
    let seqs = lat.word_sequences().into_iter().collect();
    (seg.best.words.clone(), seg.best.cost(), seqs)
}

fn assert_same(case: usize, got: &SegmentResult, want: &SegmentResult) {
    let (gw, gc, gs) = summary(got);
    let (ww, wc, ws) = summary(want);
    assert_eq!(gw, ww, "case {case}: best words");
    // (NaN on both sides: the lattice's best path is not the search's, when no final state is
    // reached.)
    assert!(
        (gc.is_nan() && wc.is_nan()) || (gc - wc).abs() < 1e-3,
        "case {case}: cost {gc} vs {wc}"
    );
    assert_eq!(got.reached_final, want.reached_final, "case {case}");
    assert_eq!(
        gs.iter().map(|x| &x.0).collect::<Vec<_>>(),
        ws.iter().map(|x| &x.0).collect::<Vec<_>>(),
        "case {case}: lattice word sequences"
    );
    for ((_, a), (_, b)) in gs.iter().zip(&ws) {
        assert!((a - b).abs() < 1e-3, "case {case}: lattice cost {a} vs {b}");
    }
}

#[test]
fn a_context_decodes_as_the_graph_with_the_context_spliced_in() {
    let mut rng = Rng(42);
    let mut checked = 0;
    let mut used_context = 0;
    for case in 0..160 {
        let topo = if case % 2 == 0 {
            CtcTopology::Normal
        } else {
            CtcTopology::Compact
        };
        let ctx = context(topo, "p q\t2\nq\t1.5\nr p\t-1\np r q\t3");
        let main = random_graph(&mut rng, 4 + (case % 5) as u32, 4, 3);
        let main = with_slots(&mut rng, main, 2);
        let rows = 3 + case % 6;
        let scores = random_scores(&mut rng, rows, LABELS as usize);
        let graph = DecodingGraph::from_fst(&main, None).unwrap();
        let dec = Decoder::new(&graph, wide())
            .unwrap()
            .with_context_slot(SLOT)
            .unwrap();
        let base = dec.slot().unwrap().word_base;
        assert_eq!(base, SLOT + 1);
        let ctx = Arc::new(ctx);
        // With the context: as the expanded graph.
        let expanded = expand(&main, &ctx, base);
        let eg = DecodingGraph::from_fst(&expanded, None).unwrap();
        let edec = Decoder::new(&eg, wide()).unwrap();
        let mut s = Stream::new(format!("case{case}"), Booster::None);
        s.set_context(Some(ctx.clone()));
        let got = decode(&dec, &mut s, &scores);
        let want = decode(&edec, &mut Stream::new("x", Booster::None), &scores);
        match (got, want) {
            (Some(g), Some(w)) => {
                assert_same(case, &g, &w);
                let cw = g.context.as_ref().expect("decoded with a context");
                if g.best.words.iter().any(|&w| cw.word(w).is_some()) {
                    used_context += 1;
                }
                checked += 1;
            }
            (None, None) => {}
            (g, w) => panic!("case {case}: {} vs {}", g.is_some(), w.is_some()),
        }
        // Without a context: as the graph without slot arcs.
        let plain = DecodingGraph::from_fst(&without_slots(&main), None).unwrap();
        let pdec = Decoder::new(&plain, wide()).unwrap();
        let got = decode(&dec, &mut Stream::new("y", Booster::None), &scores);
        let want = decode(&pdec, &mut Stream::new("z", Booster::None), &scores);
        match (got, want) {
            (Some(g), Some(w)) => {
                assert_same(case, &g, &w);
                assert!(g.context.is_none());
            }
            (None, None) => {}
            (g, w) => panic!(
                "case {case} (no context): {} vs {}",
                g.is_some(),
                w.is_some()
            ),
        }
    }
    assert!(checked > 100, "{checked}");
    assert!(
        used_context > 10,
        "{used_context} best paths through the context"
    );
}

/// The CUDA kernels (on the CPU shim) over a graph with a slot: streams without a context equal
/// the CPU backend (the slot's arcs go up at +∞ and are never followed); a stream with a
/// context is refused with the way out, not decoded wrongly.
#[test]
fn the_shim_skips_the_slot_and_refuses_contexts_clearly() {
    use ctx_cuda::shim::ShimDevice;
    use wfst_search::GpuDecoder;
    let mut rng = Rng(11);
    let mut checked = 0;
    for case in 0..40 {
        let main = random_graph(&mut rng, 4 + (case % 5) as u32, 4, 3);
        let main = with_slots(&mut rng, main, 2);
        let scores = random_scores(&mut rng, 3 + case % 5, LABELS as usize);
        let graph = DecodingGraph::from_fst(&main, None).unwrap();
        let dec = Decoder::new(&graph, wide())
            .unwrap()
            .with_context_slot(SLOT)
            .unwrap();
        let cpu = format!(
            "{:?}",
            decode_utterance(&dec, &mut Stream::new("u", Booster::None), &scores, 2, None)
        );
        let mut gpu = GpuDecoder::new(dec.clone(), Box::new(ShimDevice::new())).unwrap();
        let mut streams = vec![Stream::new("u", Booster::None)];
        let got = gpu.decode_utterances(&mut streams, &[&scores], 2, None);
        assert_eq!(format!("{:?}", got[0]), cpu, "case {case}");
        checked += cpu.starts_with("Ok") as usize;
    }
    assert!(checked > 20, "{checked}");
    let main = with_slots(&mut rng, random_graph(&mut Rng(3), 6, 4, 3), 2);
    let graph = DecodingGraph::from_fst(&main, None).unwrap();
    let dec = Decoder::new(&graph, wide())
        .unwrap()
        .with_context_slot(SLOT)
        .unwrap();
    let mut gpu = GpuDecoder::new(dec, Box::new(ShimDevice::new())).unwrap();
    let mut s = Stream::new("named", Booster::None);
    s.set_context(Some(Arc::new(context(CtcTopology::Compact, "p q"))));
    let m = random_scores(&mut rng, 3, LABELS as usize);
    let e = gpu
        .advance(&mut [s], &[&m], None)
        .remove(0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("utterance named") && e.contains("--backend cpu"),
        "{e}"
    );
}

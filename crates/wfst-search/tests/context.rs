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
    ContextGraph::compile(&list, spell, topo, None).unwrap()
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

/// The CUDA backend with open-vocabulary contexts (the device pool of context graphs): a batch
/// of streams — one without a context, two sharing context A, one with context B (the other
/// topology, negative weights) — decodes each stream exactly as the CPU backend decodes it
/// alone, bit for bit (`Debug` text: words, costs, times, partials, lattices), on the shim's
/// thread schedules and on a GPU when one answers; wide and narrow beams, max-active cuts,
/// endpoints, chunk sizes.
#[test]
fn cuda_lanes_follow_their_contexts_as_the_cpu_does() {
    use wfst_search::{EndpointConfig, GpuDecoder};
    let mut rng = Rng(11);
    let a = Arc::new(context(
        CtcTopology::Normal,
        "p q\t2\nq\t1.5\nr p\t-1\np r q\t3",
    ));
    let b = Arc::new(context(
        CtcTopology::Compact,
        "q p\t4\np\t-2\nr\t1\nq r\t2.5",
    ));
    let ctxs = [None, Some(a.clone()), Some(b), Some(a)];
    let (mut decoded, mut used_context) = (0, 0);
    for case in 0..48usize {
        let cfg = if case % 3 == 0 {
            wide()
        } else {
            DecoderConfig {
                beam: 3.0 + (case % 4) as f32,
                max_active: 3 + case % 5,
                lattice_beam: 1.0 + (case % 3) as f32,
                acoustic_scale: 1.0,
                prune_interval: 1 + case % 3,
                lattice: case % 5 != 4,
            }
        };
        let main = random_graph(&mut rng, 4 + (case % 5) as u32, 4, 3);
        let main = with_slots(&mut rng, main, 1 + case % 3);
        let graph = DecodingGraph::from_fst(&main, None).unwrap();
        let dec = Decoder::new(&graph, cfg)
            .unwrap()
            .with_silence(&[1])
            .with_context_slot(SLOT)
            .unwrap();
        let ep = EndpointConfig::kaldi(0.25);
        let ep = (case % 4 == 1).then_some(&ep);
        let chunk = 1 + case % 3;
        let utts: Vec<ScoreMatrix> = (0..ctxs.len())
            .map(|i| random_scores(&mut rng, 3 + (case + 2 * i) % 9, LABELS as usize))
            .collect();
        let stream = |i: usize| {
            let mut s = Stream::new(format!("c{case}u{i}"), Booster::None);
            s.set_context(ctxs[i].clone());
            s
        };
        let cpu: Vec<String> = (0..ctxs.len())
            .map(|i| {
                let r = decode_utterance(&dec, &mut stream(i), &utts[i], chunk, ep);
                if let Ok(u) = &r {
                    decoded += 1;
                    let words = u.segments.iter().flat_map(|s| {
                        let cw = s.context.clone();
                        s.best
                            .words
                            .iter()
                            .map(move |&w| cw.as_ref().and_then(|c| c.word(w).map(str::to_owned)))
                    });
                    used_context += words.flatten().count().min(1);
                }
                format!("{r:?}")
            })
            .collect();
        for (label, dev) in common::devices() {
            let name = format!("{} ({label})", dev.name());
            // Small scratch in half the cases: frames outgrow it, the buffers grow and the
            // frame is replayed (lane contexts uploaded again).
            let mut gpu = GpuDecoder::new(dec.clone(), dev).unwrap();
            if case % 2 == 1 {
                gpu = gpu.with_scratch(2, 3, 2);
            }
            let mut streams: Vec<Stream> = (0..ctxs.len()).map(stream).collect();
            let refs: Vec<&ScoreMatrix> = utts.iter().collect();
            let got = gpu.decode_utterances(&mut streams, &refs, chunk, ep);
            for (i, g) in got.iter().enumerate() {
                assert_eq!(format!("{g:?}"), cpu[i], "{name}: case {case} stream {i}");
            }
            // Lanes following contexts: still five launches and one copy back per attempt.
            let st = gpu.stats();
            let attempts = st.steps + st.replays;
            assert!(
                st.launches <= 5 * attempts && st.readbacks <= 2 * attempts,
                "{name}: case {case}: {st:?}"
            );
        }
    }
    assert!(decoded > 120, "{decoded}");
    assert!(
        used_context > 30,
        "{used_context} utterances wrote a context word"
    );
}

/// A stream's context switched between chunks on the device takes effect at its next segment,
/// as on the CPU; a context reading score columns the chunk lacks is that utterance's error.
#[test]
fn cuda_context_switches_at_segment_boundaries_and_checks_columns() {
    use ctx_cuda::shim::ShimDevice;
    use wfst_search::{EndpointConfig, GpuDecoder};
    let mut rng = Rng(23);
    let a = Arc::new(context(CtcTopology::Normal, "p q\t2\nr p\t3"));
    let b = Arc::new(context(CtcTopology::Compact, "q\t3\np p\t2"));
    let ep = EndpointConfig::kaldi(0.25);
    let mut segments = 0;
    for case in 0..24usize {
        let main = random_graph(&mut rng, 5 + (case % 4) as u32, 4, 3);
        let main = with_slots(&mut rng, main, 2);
        let graph = DecodingGraph::from_fst(&main, None).unwrap();
        let dec = Decoder::new(&graph, wide())
            .unwrap()
            .with_silence(&[1])
            .with_context_slot(SLOT)
            .unwrap();
        let chunks: Vec<ScoreMatrix> = (0..5)
            .map(|_| random_scores(&mut rng, 6 + case % 5, LABELS as usize))
            .collect();
        // Chunk k is fed after the context is set to plan[k].
        let plan = [
            Some(a.clone()),
            Some(b.clone()),
            None,
            Some(a.clone()),
            Some(b.clone()),
        ];
        let mut cpu_stream = Stream::new("s", Booster::None);
        let mut cpu = Vec::new();
        for (k, c) in chunks.iter().enumerate() {
            cpu_stream.set_context(plan[k].clone());
            cpu.push(format!("{:?}", dec.feed(&mut cpu_stream, c, Some(&ep))));
        }
        cpu.push(format!("{:?}", dec.finish(&mut cpu_stream)));
        let last = cpu.len() - 1;
        let mut gpu = GpuDecoder::new(dec.clone(), Box::new(ShimDevice::new()))
            .unwrap()
            .with_scratch(2, 4, 4);
        let mut streams = [Stream::new("s", Booster::None)];
        for (k, c) in chunks.iter().enumerate() {
            streams[0].set_context(plan[k].clone());
            let r = gpu.advance(&mut streams, &[c], Some(&ep)).remove(0);
            segments += r.as_ref().map_or(0, Vec::len);
            assert_eq!(format!("{r:?}"), cpu[k], "case {case} chunk {k}");
        }
        assert_eq!(
            format!("{:?}", gpu.finish(&mut streams[0])),
            cpu[last],
            "case {case}"
        );
    }
    assert!(segments > 10, "{segments} endpoint segments");
    // Context B reads token 2 (input label 3): two columns are one too few.
    let main = with_slots(&mut rng, random_graph(&mut Rng(3), 6, 4, 3), 2);
    let main = {
        // Only labels 1 and 2 in the main graph, so that it alone fits two columns.
        let mut m = main;
        for s in 0..m.num_states() as u32 {
            let trs: Vec<_> = m.get_trs(s).unwrap().trs().to_vec();
            m.delete_trs(s).unwrap();
            for mut t in trs {
                if t.ilabel == 3 {
                    t.ilabel = 2;
                }
                m.add_tr(s, t).unwrap();
            }
        }
        m
    };
    let graph = DecodingGraph::from_fst(&main, None).unwrap();
    let dec = Decoder::new(&graph, wide())
        .unwrap()
        .with_context_slot(SLOT)
        .unwrap();
    let mut gpu = GpuDecoder::new(dec, Box::new(ShimDevice::new())).unwrap();
    let mut s = Stream::new("narrow", Booster::None);
    s.set_context(Some(b));
    let m = random_scores(&mut rng, 3, 2);
    let e = gpu
        .advance(&mut [s], &[&m], None)
        .remove(0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("narrow"), "{e}");
}

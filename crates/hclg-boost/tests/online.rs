//! The context registry and the online pipeline on random graphs: per-stream contexts in one
//! batch equal each stream decoded alone with its context, a switch at chunk k equals the old
//! context before k and the new one after, arrays sorted and unique, endpoint lattice biasing
//! with the stream's context, CPU and CUDA kernels (CPU shim; a GPU when one answers) alike,
//! and every bad input a named error.

use ctx_core::bias::BiasList;
use ctx_core::context_list::ContextList;
use ctx_core::scores::ScoreMatrix;
use ctx_core::symbols::SymbolTable;
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::phrase_arcs::phrase_arcs;
use ctx_graph::StdFst;
use hclg_boost::{Chunk, ContextRegistry, Engine, HclgBoostError, OnlinePipeline, PipelineConfig};
use lattice_rescorer::prefix_biased_best_path;
use rustfst::prelude::*;
use std::sync::Arc;
use wfst_search::{Booster, Decoder, DecoderConfig, EndpointConfig, Stream};

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

const LABELS: u32 = 4;
const WORDS: u32 = 6;

/// A random graph: emitting arcs anywhere with words 1..=6 on a third of them, forward ε arcs
/// (acyclic, as lattices need) with words on some, a few finals.
fn random_graph(rng: &mut Rng, states: u32) -> DecodingGraph {
    DecodingGraph::from_fst(&random_fst(rng, states), None).unwrap()
}

/// [`random_graph`] as an FST.
fn random_fst(rng: &mut Rng, states: u32) -> StdFst {
    let mut fst = StdFst::new();
    for _ in 0..states {
        fst.add_state();
    }
    fst.set_start(0).unwrap();
    for s in 0..states {
        for _ in 0..2 + rng.below(3) {
            let il = 1 + rng.below(LABELS as u64) as u32;
            let ol = if rng.below(3) == 0 {
                1 + rng.below(WORDS as u64) as u32
            } else {
                0
            };
            let d = rng.below(states as u64) as u32;
            fst.add_tr(s, Tr::new(il, ol, 2.0 * rng.unit(), d)).unwrap();
        }
        if s + 1 < states && rng.below(2) == 0 {
            let d = s + 1 + rng.below((states - s - 1) as u64) as u32;
            let ol = if rng.below(3) == 0 {
                1 + rng.below(WORDS as u64) as u32
            } else {
                0
            };
            fst.add_tr(s, Tr::new(0, ol, 0.5 + rng.unit(), d)).unwrap();
        }
        if rng.below(3) == 0 {
            fst.set_final(s, rng.unit()).unwrap();
        }
    }
    fst
}

fn words() -> SymbolTable {
    let mut t = SymbolTable::with_epsilon();
    for w in 1..=WORDS + 1 {
        t.add(&format!("w{w}"));
    }
    t
}

fn scores(rng: &mut Rng, rows: usize) -> ScoreMatrix {
    let data = (0..rows * LABELS as usize)
        .map(|_| (rng.below(10) as f32) * 0.45 - 3.0)
        .collect();
    ScoreMatrix::new(rows, LABELS as usize, data).unwrap()
}

/// A random list of 1–4 phrases of 1–3 words (w7 is in the table but on no arc).
fn random_list(rng: &mut Rng) -> BiasList {
    let phrases: Vec<String> = (0..1 + rng.below(4))
        .map(|_| {
            (0..1 + rng.below(3))
                .map(|_| format!("w{}", 1 + rng.below(WORDS as u64 + 1)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    BiasList::from_phrases(&phrases, false)
}

fn config() -> DecoderConfig {
    DecoderConfig {
        beam: 8.0,
        max_active: 50,
        lattice_beam: 4.0,
        ..DecoderConfig::default()
    }
}

/// The shim and the CPU backend (and the GPU when one answers).
fn backends() -> Vec<ctx_cuda::Backend> {
    let mut v = vec![ctx_cuda::Backend::Cpu, ctx_cuda::Backend::Shim];
    match ctx_cuda::cuda::CudaDevice::open() {
        Ok(_) => v.push(ctx_cuda::Backend::Cuda),
        Err(e) => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("GPU runs SKIPPED (CPU and shim only): {e}"));
        }
    }
    v
}

/// Feeds each utterance in chunks of `chunk` rows, all streams in lockstep batches; `switch`
/// (stream, chunk index, new context) applied before that chunk. Returns per stream the words
/// of its segments' output paths, with the Debug text of its segments and partials.
fn run_pipeline(
    p: &mut OnlinePipeline<'_>,
    utts: &[ScoreMatrix],
    contexts: &[Option<&str>],
    chunk: usize,
    switch: &[(usize, usize, Option<&str>)],
) -> Vec<String> {
    let n = utts.len();
    for (i, c) in contexts.iter().enumerate() {
        p.open(100 + i as u64, *c).unwrap();
    }
    let mut out = vec![String::new(); n];
    let max_chunks = utts.iter().map(|u| u.rows().div_ceil(chunk)).max().unwrap();
    for k in 0..max_chunks {
        for &(i, at, c) in switch {
            if at == k {
                p.set_context(100 + i as u64, c).unwrap();
            }
        }
        let slices: Vec<(usize, ScoreMatrix)> = (0..n)
            .filter(|&i| k * chunk < utts[i].rows())
            .map(|i| {
                (
                    i,
                    utts[i].slice_rows(k * chunk..((k + 1) * chunk).min(utts[i].rows())),
                )
            })
            .collect();
        let batch: Vec<Chunk<'_>> = slices
            .iter()
            .map(|(i, m)| Chunk {
                id: 100 + *i as u64,
                scores: m,
                first: k == 0,
                last: (k + 1) * chunk >= utts[*i].rows(),
            })
            .collect();
        for ((i, _), r) in slices.iter().zip(p.feed(&batch)) {
            let r = r.unwrap();
            for s in &r.segments {
                out[*i] += &format!("{:?}|{:?}|{:?};", s.path, s.segment.best, s.segment.lattice);
            }
            out[*i] += &format!("p{:?};", r.partial);
        }
    }
    assert_eq!(p.open_streams(), 0, "every stream closed by its last chunk");
    out
}

/// Decodes one utterance alone with the CPU decoder: `boosters[k]` for chunk k, partials and
/// segments in the pipeline's format (`rescore`: the automaton per chunk index at the end).
fn run_alone(
    dec: &Decoder<'_>,
    ep: Option<&EndpointConfig>,
    m: &ScoreMatrix,
    chunk: usize,
    booster_at: &dyn Fn(usize) -> Booster,
    rescore_at: &dyn Fn(usize) -> Option<wfst_search::PhraseAutomaton>,
) -> String {
    run_alone_open(dec, ep, m, chunk, booster_at, rescore_at, &|_| None)
}

/// [`run_alone`] with an open-vocabulary context per chunk (`open_at`).
fn run_alone_open(
    dec: &Decoder<'_>,
    ep: Option<&EndpointConfig>,
    m: &ScoreMatrix,
    chunk: usize,
    booster_at: &dyn Fn(usize) -> Booster,
    rescore_at: &dyn Fn(usize) -> Option<wfst_search::PhraseAutomaton>,
    open_at: &dyn Fn(usize) -> Option<Arc<ContextGraph>>,
) -> String {
    let mut s = Stream::new("alone", Booster::None);
    let mut out = String::new();
    let chunks = m.rows().div_ceil(chunk);
    for k in 0..chunks {
        s.set_booster(booster_at(k));
        s.set_context(open_at(k));
        let mut segs = dec
            .feed_rows(&mut s, m, k * chunk..((k + 1) * chunk).min(m.rows()), ep)
            .unwrap();
        if k + 1 == chunks && s.in_segment() && s.segment_rows() > 0 {
            segs.push(dec.finish(&mut s).unwrap());
        }
        for seg in segs {
            let path = match (rescore_at(k), &seg.lattice) {
                (Some(a), Some(l)) => prefix_biased_best_path(l, &a)
                    .map(|b| b.path)
                    .unwrap_or(seg.best.clone()),
                _ => seg.best.clone(),
            };
            out += &format!("{:?}|{:?}|{:?};", path, seg.best, seg.lattice);
        }
        let partial = if s.in_segment() {
            s.partial().words
        } else {
            Vec::new()
        };
        out += &format!("p{partial:?};");
    }
    out
}

#[test]
fn registry_arrays_are_sorted_unique_pooled_and_reported() {
    let syms = words();
    let mut rng = Rng(7);
    for case in 0..40 {
        let g = random_graph(&mut rng, 6 + case % 7);
        let mut reg = ContextRegistry::new(&g, &syms, -2.0, -2.0).unwrap();
        let lists: Vec<(String, BiasList)> = (0..4)
            .map(|i| (format!("c{i}"), random_list(&mut rng)))
            .collect();
        let reports = reg.add_many(&lists).unwrap();
        for ((name, list), r) in lists.iter().zip(&reports) {
            let ids: Vec<Vec<u32>> = list
                .phrases
                .iter()
                .filter_map(|p| p.iter().map(|w| syms.id(w)).collect::<Option<Vec<u32>>>())
                .collect();
            let want = phrase_arcs(&g, &ids);
            let got = reg.pool_arcs(name).unwrap();
            assert_eq!(got, want.arcs.as_slice(), "case {case} {name}");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
            // The device's rule (binary search) finds every arc of the list, and only those.
            let Booster::ArcSet(b) = reg.booster(name).unwrap() else {
                assert!(got.is_empty());
                continue;
            };
            for a in 0..g.num_arcs() as u32 {
                assert_eq!(b.contains_sorted(a), got.contains(&a));
            }
            // Its slot is where its array lies in the pool.
            let offset = (got.as_ptr() as usize - reg.pool().as_ptr() as usize) / 4;
            assert_eq!(b.slot().unwrap().offset as usize, offset);
            assert_eq!(r.arcs, got.len());
            assert_eq!(r.pool_bytes, 4 * got.len());
            assert_eq!(r.oov_phrases, list.phrases.len() - ids.len());
        }
        // Removing contexts leaves holes, then compaction: the others keep their arrays.
        let before: Vec<Vec<u32>> = (1..4)
            .map(|i| reg.pool_arcs(&format!("c{i}")).unwrap().to_vec())
            .collect();
        let (_, gen0) = reg.pool_key();
        reg.remove("c0").unwrap();
        reg.remove("c2").unwrap();
        for (i, b) in [(1, &before[0]), (3, &before[2])] {
            assert_eq!(reg.pool_arcs(&format!("c{i}")).unwrap(), b.as_slice());
            if let Booster::ArcSet(x) = reg.booster(&format!("c{i}")).unwrap() {
                let s = x.slot().unwrap();
                assert_eq!(s.generation, reg.pool_key().1);
                assert_eq!(&reg.pool()[s.offset as usize..][..b.len()], b.as_slice());
            }
        }
        reg.compact();
        assert_eq!(reg.holes(), 0);
        assert_eq!(reg.pool().len(), before[0].len() + before[2].len());
        if reg.pool_key().1 == gen0 {
            assert!(before[1].is_empty() && reports[0].arcs == 0);
        }
        assert!(matches!(
            reg.remove("c0"),
            Err(HclgBoostError::UnknownContext(_))
        ));
    }
}

#[test]
fn empty_and_oov_lists_load_unbiased_with_a_warning() {
    let syms = words();
    let g = random_graph(&mut Rng(3), 8);
    let mut reg = ContextRegistry::new(&g, &syms, -2.0, -2.0).unwrap();
    let r = reg.add("empty", &BiasList::default()).unwrap();
    assert!(r.warning().unwrap().contains("empty"), "{:?}", r.warning());
    let r = reg
        .add(
            "oov",
            &BiasList::from_phrases(&["speedbird one", "zulu"], false),
        )
        .unwrap();
    assert_eq!(
        (r.phrases, r.kept, r.oov_phrases, r.oov_words),
        (2, 0, 2, 3)
    );
    assert!(r.warning().unwrap().contains("out-of-vocabulary"));
    assert!(matches!(reg.booster("oov").unwrap(), Booster::None));
    assert!(matches!(
        reg.add("oov", &BiasList::default()),
        Err(HclgBoostError::DuplicateContext(_))
    ));
    assert!(ContextRegistry::new(&g, &syms, f32::NAN, -2.0).is_err());
    assert!(ContextRegistry::new(&g, &syms, -2.0, 1.0).is_err());
}

/// Per-stream contexts in one batch give each stream exactly its result decoded alone with its
/// context (words, costs, lattices, partials), on every backend; a switch at chunk k equals the
/// old context before k and the new after.
#[test]
fn per_stream_contexts_and_switches_equal_each_stream_alone() {
    let syms = words();
    let mut differ = 0;
    let mut switch_matters = 0;
    for case in 0..24u64 {
        let mut rng = Rng(500 + case);
        let g = random_graph(&mut rng, 5 + (case % 8) as u32);
        let dec = Decoder::new(&g, config()).unwrap().with_silence(&[1]);
        let ep_cfg = EndpointConfig::kaldi(0.25);
        let ep = (case % 2 == 0).then_some(ep_cfg);
        let lists: Vec<(String, BiasList)> = ["a", "b", "c"]
            .iter()
            .map(|n| (n.to_string(), random_list(&mut rng)))
            .collect();
        let n = 2 + (case % 4) as usize;
        let utts: Vec<ScoreMatrix> = (0..n)
            .map(|i| scores(&mut rng, 6 + (case as usize * 5 + 3 * i) % 15))
            .collect();
        let names = [Some("a"), Some("b"), None, Some("c")];
        let contexts: Vec<Option<&str>> = (0..n).map(|i| names[i % 4]).collect();
        let chunk = 2 + (case % 3) as usize;
        // Stream 0 switches a -> c at chunk 2; stream 1 b -> none at chunk 1.
        let switches = [(0usize, 2usize, Some("c")), (1, 1, None)];
        let rescore = case % 3 != 0;
        for backend in backends() {
            let mut reg = ContextRegistry::new(&g, &syms, -1.5, -2.0).unwrap();
            reg.add_many(&lists).unwrap();
            let engine = Engine::open(dec.clone(), backend).unwrap();
            let mut p = OnlinePipeline::new(
                engine,
                reg,
                PipelineConfig {
                    boost_search: true,
                    rescore_endpoints: rescore,
                    endpoint: ep.clone(),
                    threads: 2,
                },
            )
            .unwrap();
            let got = run_pipeline(&mut p, &utts, &contexts, chunk, &switches);
            let reg = p.registry();
            let ctx_at = |i: usize, k: usize| -> Option<&str> {
                let mut c = contexts[i];
                for &(s, at, to) in &switches {
                    if s == i && k >= at {
                        c = to;
                    }
                }
                c
            };
            for i in 0..n {
                let want = run_alone(
                    &dec,
                    ep.as_ref(),
                    &utts[i],
                    chunk,
                    &|k| ctx_at(i, k).map_or(Booster::None, |c| reg.booster(c).unwrap()),
                    &|k| {
                        ctx_at(i, k)
                            .filter(|_| rescore)
                            .and_then(|c| reg.automaton(c).unwrap().cloned())
                    },
                );
                assert_eq!(got[i], want, "{backend}: case {case} stream {i}");
                if backend == ctx_cuda::Backend::Cpu {
                    // The same stream with no context at all.
                    let plain = run_alone(
                        &dec,
                        ep.as_ref(),
                        &utts[i],
                        chunk,
                        &|_| Booster::None,
                        &|_| None,
                    );
                    differ += usize::from(plain != want);
                    if i == 0 {
                        let old = run_alone(
                            &dec,
                            ep.as_ref(),
                            &utts[0],
                            chunk,
                            &|_| reg.booster("a").unwrap(),
                            &|_| reg.automaton("a").unwrap().cloned().filter(|_| rescore),
                        );
                        switch_matters += usize::from(old != want);
                    }
                }
            }
            if let Engine::Device(gpu) = p.engine() {
                assert_eq!(
                    gpu.arc_pool(),
                    Some((
                        p.registry().pool_key().0,
                        p.registry().pool_key().1,
                        p.registry().pool().len()
                    )),
                    "the registry's pool is on the device"
                );
            }
        }
    }
    assert!(differ > 10, "contexts change results: {differ}");
    assert!(
        switch_matters > 3,
        "switches change results: {switch_matters}"
    );
}

#[test]
fn bad_input_is_a_named_error() {
    let syms = words();
    let mut rng = Rng(11);
    let g = random_graph(&mut rng, 8);
    let dec = Decoder::new(&g, config()).unwrap();
    let mut reg = ContextRegistry::new(&g, &syms, -2.0, -2.0).unwrap();
    reg.add("a", &BiasList::from_phrases(&["w1 w2"], false))
        .unwrap();
    reg.add("empty", &BiasList::default()).unwrap();
    let mut p =
        OnlinePipeline::new(Engine::Cpu(dec.clone()), reg, PipelineConfig::default()).unwrap();
    assert!(matches!(
        p.open(1, Some("nope")),
        Err(HclgBoostError::UnknownContext(_))
    ));
    assert!(p.open(1, Some("a")).unwrap().is_none());
    assert!(matches!(
        p.open(1, None),
        Err(HclgBoostError::StreamOpen(1))
    ));
    // An empty context: opened with a warning, decodes unbiased.
    let w = p.open(2, Some("empty")).unwrap().unwrap();
    assert!(w.contains("'empty'") && w.contains("unbiased"), "{w}");
    assert!(matches!(
        p.set_context(1, Some("nope")),
        Err(HclgBoostError::UnknownContext(_))
    ));
    assert!(matches!(
        p.set_context(9, None),
        Err(HclgBoostError::UnknownStream(9))
    ));
    assert!(matches!(
        p.remove_context("a"),
        Err(HclgBoostError::ContextInUse { .. })
    ));
    let m = scores(&mut rng, 4);
    let c = |id, first, last| Chunk {
        id,
        scores: &m,
        first,
        last,
    };
    let r = p.feed(&[
        c(1, false, false),
        c(3, true, false),
        c(2, true, false),
        c(2, false, false),
    ]);
    assert!(matches!(
        r[0],
        Err(HclgBoostError::ChunkFlags { id: 1, .. })
    ));
    assert!(matches!(r[1], Err(HclgBoostError::UnknownStream(3))));
    assert!(r[2].is_ok());
    assert!(matches!(r[3], Err(HclgBoostError::TwiceInBatch(2))));
    let r = p.feed(&[c(1, true, true), c(2, true, true)]);
    assert!(r[0].as_ref().unwrap().last && !r[0].as_ref().unwrap().segments.is_empty());
    assert!(matches!(
        r[1],
        Err(HclgBoostError::ChunkFlags { id: 2, .. })
    ));
    let r = p.feed(&[c(1, false, false)]);
    assert!(matches!(r[0], Err(HclgBoostError::AfterLast(1))));
    // A width the graph cannot read is the engine's named error; the stream is closed.
    let narrow = ScoreMatrix::new(2, 1, vec![0.0; 2]).unwrap();
    let r = p.feed(&[Chunk {
        id: 2,
        scores: &narrow,
        first: false,
        last: false,
    }]);
    let e = r[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("utterance 2") && e.contains("columns"), "{e}");
    assert!(p.feed(&[c(2, false, false)])[0].is_err());
    // Now unused: removable; a stream id can be reused after its stream closed.
    p.remove_context("a").unwrap();
    assert!(p.open(1, None).is_ok());
    // Rescoring needs lattices.
    let no_lat = Decoder::new(
        &g,
        DecoderConfig {
            lattice: false,
            ..config()
        },
    )
    .unwrap();
    let reg = ContextRegistry::new(&g, &syms, -2.0, -2.0).unwrap();
    let e = OnlinePipeline::new(
        Engine::Cpu(no_lat),
        reg,
        PipelineConfig {
            rescore_endpoints: true,
            ..PipelineConfig::default()
        },
    );
    assert!(e.is_err());
}

/// A stream can end with an empty last chunk (a client that hangs up between chunks): its
/// open segment is finished, as a last chunk with rows would.
#[test]
fn an_empty_last_chunk_finishes_the_segment() {
    let syms = words();
    let mut rng = Rng(21);
    let g = random_graph(&mut rng, 10);
    let dec = Decoder::new(&g, config()).unwrap();
    let m = scores(&mut rng, 9);
    let empty = ScoreMatrix::new(0, LABELS as usize, Vec::new()).unwrap();
    let mut outs = Vec::new();
    for backend in backends() {
        let reg = ContextRegistry::new(&g, &syms, -2.0, -2.0).unwrap();
        let mut p = OnlinePipeline::new(
            Engine::open(dec.clone(), backend).unwrap(),
            reg,
            PipelineConfig::default(),
        )
        .unwrap();
        p.open(5, None).unwrap();
        let c = |scores, first, last| Chunk {
            id: 5,
            scores,
            first,
            last,
        };
        let a = p.feed(&[c(&m, true, false)]).pop().unwrap().unwrap();
        assert!(a.segments.is_empty());
        let b = p.feed(&[c(&empty, false, true)]).pop().unwrap().unwrap();
        assert_eq!(b.segments.len(), 1);
        assert_eq!(b.segments[0].segment.rows, 9);
        assert_eq!(p.open_streams(), 0);
        outs.push(format!("{:?}", b.segments[0].path));
    }
    let mut s = Stream::new("alone", Booster::None);
    let want = wfst_search::decode_utterance(&dec, &mut s, &m, 9, None).unwrap();
    assert_eq!(outs[0], format!("{:?}", want.segments[0].best));
    assert!(outs.iter().all(|o| *o == outs[0]));
}

/// Contexts added and removed while streams run (the pool grows, then compaction moves the
/// arrays and changes the layout generation): on every backend each stream still decodes
/// exactly as alone with the context it named at each chunk, and the device holds the
/// registry's current pool.
#[test]
fn contexts_added_and_removed_while_streams_run() {
    let syms = words();
    let mut compacted = 0;
    for case in 0..12u64 {
        let mut rng = Rng(900 + case);
        let g = random_graph(&mut rng, 6 + (case % 6) as u32);
        let dec = Decoder::new(&g, config()).unwrap();
        let lists: Vec<BiasList> = (0..4).map(|_| random_list(&mut rng)).collect();
        let utts: Vec<ScoreMatrix> = (0..3).map(|i| scores(&mut rng, 10 + i)).collect();
        let chunk = 3;
        let mut outs: Vec<Vec<String>> = Vec::new();
        for backend in backends() {
            let mut reg = ContextRegistry::new(&g, &syms, -1.5, -2.0).unwrap();
            reg.add("a", &lists[0]).unwrap();
            reg.add("b", &lists[1]).unwrap();
            let engine = Engine::open(dec.clone(), backend).unwrap();
            let mut p = OnlinePipeline::new(engine, reg, PipelineConfig::default()).unwrap();
            let ids = [1u64, 2, 3];
            p.open(1, Some("a")).unwrap();
            p.open(2, Some("b")).unwrap();
            p.open(3, None).unwrap();
            let mut got = vec![String::new(); 3];
            for k in 0..4 {
                match k {
                    1 => {
                        // New contexts while the streams run; stream 3 takes one.
                        p.add_contexts(&[
                            ("c".to_string(), lists[2].clone()),
                            ("d".to_string(), lists[3].clone()),
                        ])
                        .unwrap();
                        p.set_context(3, Some("d")).unwrap();
                    }
                    2 => {
                        // Stream 1 leaves "a"; "a" and "c" removed (compaction may follow).
                        p.set_context(1, Some("d")).unwrap();
                        p.remove_context("a").unwrap();
                        p.remove_context("c").unwrap();
                        assert!(p.registry().pool_arcs("d").is_ok());
                        compacted += usize::from(p.registry().pool_key().1 > 0);
                    }
                    _ => {}
                }
                let slices: Vec<ScoreMatrix> = utts
                    .iter()
                    .map(|m| m.slice_rows(k * chunk..((k + 1) * chunk).min(m.rows())))
                    .collect();
                let batch: Vec<Chunk<'_>> = ids
                    .iter()
                    .zip(&slices)
                    .enumerate()
                    .map(|(i, (&id, m))| Chunk {
                        id,
                        scores: m,
                        first: k == 0,
                        last: (k + 1) * chunk >= utts[i].rows(),
                    })
                    .collect();
                for (i, r) in p.feed(&batch).into_iter().enumerate() {
                    let r = r.unwrap();
                    for s in &r.segments {
                        got[i] += &format!("{:?};", s.path);
                    }
                    got[i] += &format!("p{:?};", r.partial);
                }
                if let Engine::Device(gpu) = p.engine() {
                    let (id, gen) = p.registry().pool_key();
                    assert_eq!(gpu.arc_pool(), Some((id, gen, p.registry().pool().len())));
                }
            }
            outs.push(got);
        }
        // Alone on the CPU, with the boosters of the same lists.
        let mut reg = ContextRegistry::new(&g, &syms, -1.5, -2.0).unwrap();
        for (n, l) in ["a", "b", "c", "d"].iter().zip(&lists) {
            reg.add(n, l).unwrap();
        }
        let plan: [&dyn Fn(usize) -> Option<&'static str>; 3] = [
            &|k| Some(if k < 2 { "a" } else { "d" }),
            &|_| Some("b"),
            &|k| if k < 1 { None } else { Some("d") },
        ];
        for i in 0..3 {
            let want = run_alone(
                &dec,
                None,
                &utts[i],
                chunk,
                &|k| plan[i](k).map_or(Booster::None, |c| reg.booster(c).unwrap()),
                &|_| None,
            );
            // run_alone also prints the segment's best and lattice; compare the paths only.
            let want: String = want
                .split(';')
                .filter(|x| !x.is_empty())
                .map(|x| match x.split_once('|') {
                    Some((path, _)) => format!("{path};"),
                    None => format!("{x};"),
                })
                .collect();
            for o in &outs {
                assert_eq!(o[i], want, "case {case} stream {i}");
            }
        }
    }
    assert!(
        compacted >= 4,
        "compaction ran while streams ran: {compacted}"
    );
}

/// The class slot's output label in the open-vocabulary tests (no word of the table).
const SLOT: u32 = 9;

/// An open-vocabulary context over the random graphs' labels 2–4 ("x", "y", "z": one token
/// each, compact CTC layout, label 1 the blank).
fn open_context(text: &str) -> Arc<ContextGraph> {
    let list = ContextList::parse(text, std::path::Path::new("open.tsv"), 3.0, true).unwrap();
    let spell = |w: &str| match w {
        "x" => Some(vec![1]),
        "y" => Some(vec![2]),
        "z" => Some(vec![3]),
        _ => None,
    };
    Arc::new(ContextGraph::compile(&list, spell, CtcTopology::Compact, None).unwrap())
}

/// Open-vocabulary contexts in the online pipeline (issue 42): a context's open graph is
/// followed through the class slot beside its arc discounts, per stream in one batch, equal to
/// each stream decoded alone with the same booster and context (CPU, shim, GPU); a switch takes
/// effect at the next segment; a context's open graph on a decoder without the slot is refused.
#[test]
fn open_vocabulary_contexts_follow_the_stream_as_alone() {
    let syms = words();
    let a = open_context("x y\t3\nz\t2");
    let b = open_context("y z x\t4\ny\t-1");
    let (mut used, mut differ) = (0, 0);
    for case in 0..16u64 {
        let mut rng = Rng(900 + case);
        let mut fst = random_fst(&mut rng, 5 + (case % 6) as u32);
        let states = fst.num_states() as u64;
        for _ in 0..2 {
            let (s, d) = (rng.below(states) as u32, rng.below(states) as u32);
            fst.add_tr(s, Tr::new(0, SLOT, 0.5 + rng.unit(), d))
                .unwrap();
        }
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let dec = Decoder::new(&g, config())
            .unwrap()
            .with_context_slot(SLOT)
            .unwrap();
        let base = dec.slot().unwrap().word_base;
        let ep = (case % 2 == 0).then(|| EndpointConfig::kaldi(0.25));
        let lists: Vec<(String, BiasList)> = ["a", "b", "c"]
            .iter()
            .map(|n| (n.to_string(), random_list(&mut rng)))
            .collect();
        let open = |n: &str| match n {
            "a" => Some(a.clone()),
            "b" => Some(b.clone()),
            _ => None,
        };
        let n = 4;
        let utts: Vec<ScoreMatrix> = (0..n)
            .map(|i| scores(&mut rng, 13 + (case as usize * 3 + 5 * i) % 12))
            .collect();
        let contexts = [Some("a"), Some("b"), None, Some("c")];
        let chunk = 2 + (case % 3) as usize;
        // Stream 0 switches a -> b at chunk 2; stream 3 c -> a at chunk 1.
        let switches = [(0usize, 2usize, Some("b")), (3, 1, Some("a"))];
        for backend in backends() {
            let mut reg = ContextRegistry::new(&g, &syms, -1.5, -2.0).unwrap();
            reg.add_many(&lists).unwrap();
            reg.set_open("a", Some(a.clone())).unwrap();
            reg.set_open("b", Some(b.clone())).unwrap();
            assert_eq!(reg.report("b").unwrap().open_phrases, 2);
            let engine = Engine::open(dec.clone(), backend).unwrap();
            let cfg = PipelineConfig {
                boost_search: true,
                rescore_endpoints: false,
                endpoint: ep.clone(),
                threads: 2,
            };
            let mut p = OnlinePipeline::new(engine, reg, cfg).unwrap();
            let got = run_pipeline(&mut p, &utts, &contexts, chunk, &switches);
            let reg = p.registry();
            let ctx_at = |i: usize, k: usize| -> Option<&str> {
                let mut c = contexts[i];
                for &(s, at, to) in &switches {
                    if s == i && k >= at {
                        c = to;
                    }
                }
                c
            };
            for i in 0..n {
                let want = run_alone_open(
                    &dec,
                    ep.as_ref(),
                    &utts[i],
                    chunk,
                    &|k| ctx_at(i, k).map_or(Booster::None, |c| reg.booster(c).unwrap()),
                    &|_| None,
                    &|k| ctx_at(i, k).and_then(open),
                );
                assert_eq!(got[i], want, "{backend}: case {case} stream {i}");
                if backend == ctx_cuda::Backend::Cpu {
                    // Context words are ids from the slot's word base on.
                    let words = want.split("words: [").skip(1).flat_map(|t| {
                        t.split(']')
                            .next()
                            .unwrap_or("")
                            .split(", ")
                            .map(str::to_string)
                    });
                    used += usize::from(
                        words
                            .filter_map(|w| w.parse::<u32>().ok())
                            .any(|w| w >= base),
                    );
                    let arcs_only = run_alone(
                        &dec,
                        ep.as_ref(),
                        &utts[i],
                        chunk,
                        &|k| ctx_at(i, k).map_or(Booster::None, |c| reg.booster(c).unwrap()),
                        &|_| None,
                    );
                    differ += usize::from(arcs_only != want);
                }
            }
        }
    }
    assert!(
        used > 5,
        "{used} streams decoded with an open-vocabulary context"
    );
    assert!(differ > 5, "open graphs change results: {differ}");
    // A context with an open graph on a decoder without the slot: a named error.
    let g = random_graph(&mut Rng(1), 6);
    let dec = Decoder::new(&g, config()).unwrap();
    let mut reg = ContextRegistry::new(&g, &syms, -1.5, -2.0).unwrap();
    reg.add("a", &BiasList::from_phrases(&["w1".to_string()], false))
        .unwrap();
    reg.set_open("a", Some(a)).unwrap();
    let mut p = OnlinePipeline::new(
        Engine::open(dec, ctx_cuda::Backend::Cpu).unwrap(),
        reg,
        PipelineConfig::default(),
    )
    .unwrap();
    let e = p.open(1, Some("a")).unwrap_err().to_string();
    assert!(e.contains("'a'") && e.contains("class slot"), "{e}");
}

//! The CTC WFST decoder against exhaustive answers on small random CTC graphs: the normal
//! topology accepts exactly the CTC collapse rules, decoding equals an unpruned search over all
//! paths for both topologies, word boosting equals decoding TLG ∘ B, streaming in any chunk size
//! equals offline, and bad inputs are refused.

use ctc_wfst::check::{check_normalised, check_topology};
use ctc_wfst::{greedy_tokens, ContextBoost, CtcConfig, CtcDecoder, CtcError, CtcInput};
use ctx_core::scores::ScoreMatrix;
use ctx_core::symbols::SymbolTable;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::{build_t, unit_label, CtcTopology, BLANK_LABEL};
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeSet;
use wfst_search::{Booster, DecoderConfig};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

const UNITS: u32 = 3;

/// All output sequences T produces for the frame labels `x` (columns; 0 = blank).
fn outputs(t: &StdFst, x: &[u32]) -> BTreeSet<Vec<u32>> {
    // (state, position, output) explored with ε arcs.
    let mut out = BTreeSet::new();
    let mut todo = vec![(t.start().unwrap(), 0usize, Vec::<u32>::new())];
    let mut seen = BTreeSet::new();
    while let Some((s, i, o)) = todo.pop() {
        if !seen.insert((s, i, o.clone())) {
            continue;
        }
        if i == x.len() && t.is_final(s).unwrap() {
            out.insert(o.clone());
        }
        for tr in t.get_trs(s).unwrap().trs() {
            let mut o2 = o.clone();
            if tr.olabel != 0 {
                o2.push(tr.olabel);
            }
            if tr.ilabel == 0 {
                todo.push((tr.nextstate, i, o2));
            } else if i < x.len() && tr.ilabel == x[i] + 1 {
                todo.push((tr.nextstate, i + 1, o2));
            }
        }
    }
    out
}

fn collapse(x: &[u32]) -> Vec<u32> {
    let mut y = Vec::new();
    let mut prev = u32::MAX;
    for &c in x {
        if c != 0 && c != prev {
            y.push(c);
        }
        prev = c;
    }
    y
}

#[test]
fn the_normal_topology_accepts_exactly_the_ctc_collapse() {
    let normal = build_t(CtcTopology::Normal, UNITS, 0).unwrap();
    let compact = build_t(CtcTopology::Compact, UNITS, 0).unwrap();
    let mut strings = vec![vec![]];
    for _ in 0..5 {
        let mut next = Vec::new();
        for s in &strings {
            for c in 0..=UNITS {
                let mut s2: Vec<u32> = s.clone();
                s2.push(c);
                next.push(s2);
            }
        }
        for x in &next {
            let want = collapse(x);
            let n = outputs(&normal, x);
            assert_eq!(n, BTreeSet::from([want.clone()]), "normal on {x:?}");
            // Compact also reads a repeat without blank as two tokens, never anything else:
            // every reading merges to the same runs and is at least as long.
            let c = outputs(&compact, x);
            assert!(c.contains(&want), "compact on {x:?}: {c:?}");
            for y in &c {
                assert_eq!(collapse(y), collapse(&want), "compact on {x:?} gave {y:?}");
                assert!(y.len() >= want.len(), "compact on {x:?} gave {y:?}");
            }
        }
        strings = next;
    }
    assert_eq!(
        outputs(&compact, &[1, 1]),
        BTreeSet::from([vec![1], vec![1, 1]])
    );
    assert_eq!(outputs(&normal, &[1, 1]), BTreeSet::from([vec![1]]));
    assert_eq!(outputs(&normal, &[1, 0, 1]), BTreeSet::from([vec![1, 1]]));
}

/// A random word grammar over units: words 1..=`words`, each spelled by one or two units, a
/// two-state word loop with random weights (the "LG"), composed with T.
fn random_tlg(rng: &mut Rng, topo: CtcTopology, words: u32) -> StdFst {
    let mut lg = StdFst::new();
    let s0 = lg.add_state();
    let s1 = lg.add_state();
    lg.set_start(s0).unwrap();
    lg.set_final(s0, 0.0).unwrap();
    lg.set_final(s1, rng.unit() * 2.0).unwrap();
    for w in 1..=words {
        let spelling: Vec<u32> = (0..1 + rng.below(2))
            .map(|_| 1 + rng.below(UNITS as usize) as u32)
            .collect();
        for (from, to) in [(s0, s1), (s1, s0), (s1, s1)] {
            if rng.below(3) == 0 && from != s0 {
                continue;
            }
            let mut cur = from;
            for (k, &u) in spelling.iter().enumerate() {
                let last = k + 1 == spelling.len();
                let next = if last { to } else { lg.add_state() };
                let (o, wt) = if k == 0 {
                    (w, rng.unit() * 3.0)
                } else {
                    (0, 0.0)
                };
                lg.add_tr(cur, Tr::new(u, o, wt, next)).unwrap();
                cur = next;
            }
        }
    }
    let t = build_t(topo, UNITS, 0).unwrap();
    ctx_graph::compile::compose_sorted(&t, &lg, "TLG").unwrap()
}

fn random_logprobs(rng: &mut Rng, rows: usize) -> ScoreMatrix {
    let cols = UNITS as usize + 1;
    let mut data = Vec::with_capacity(rows * cols);
    for _ in 0..rows {
        let logits: Vec<f32> = (0..cols).map(|_| rng.unit() * 6.0).collect();
        let lse = logits.iter().map(|x| x.exp()).sum::<f32>().ln();
        data.extend(logits.iter().map(|x| x - lse));
    }
    ScoreMatrix::new(rows, cols, data).unwrap()
}

/// The cheapest cost of any path reading all rows (no pruning): Viterbi over (row, state) with
/// the ε closure relaxed to a fixed point.
fn exhaustive_best(g: &DecodingGraph, m: &ScoreMatrix, scale: f32) -> f32 {
    let n = g.num_states();
    let close = |c: &mut Vec<f32>| loop {
        let mut changed = false;
        for s in 0..n {
            if !c[s].is_finite() {
                continue;
            }
            for a in g.non_emitting(s as u32) {
                let v = c[s] + g.weight[a];
                let d = g.next[a] as usize;
                if v < c[d] - 1e-7 {
                    c[d] = v;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    };
    let mut cur = vec![f32::INFINITY; n];
    cur[g.start as usize] = 0.0;
    close(&mut cur);
    for t in 0..m.rows() {
        let mut next = vec![f32::INFINITY; n];
        for (s, &c) in cur.iter().enumerate() {
            if !c.is_finite() {
                continue;
            }
            for a in g.emitting(s as u32) {
                let v = c + g.weight[a] - scale * m.row(t)[g.ilabel[a] as usize - 1];
                let d = g.next[a] as usize;
                next[d] = next[d].min(v);
            }
        }
        close(&mut next);
        cur = next;
    }
    (0..n)
        .map(|s| cur[s] + g.final_cost[s])
        .fold(f32::INFINITY, f32::min)
}

/// The words `a`..`e` (ids 1..5) of the random TLGs.
fn word_table() -> SymbolTable {
    let mut table = SymbolTable::new();
    for w in ["<eps>", "a", "b", "c", "d", "e"] {
        table.add(w);
    }
    table
}

/// Normal topology for even cases, compact for odd ones.
fn topology(case: usize) -> CtcTopology {
    if case.is_multiple_of(2) {
        CtcTopology::Normal
    } else {
        CtcTopology::Compact
    }
}

fn wide() -> CtcConfig {
    CtcConfig {
        search: DecoderConfig {
            beam: 1000.0,
            max_active: 1_000_000,
            lattice_beam: 1.0,
            acoustic_scale: 1.0,
            ..DecoderConfig::default()
        },
        ..CtcConfig::default()
    }
}

#[test]
fn decoding_equals_the_exhaustive_search_for_both_topologies() {
    let mut rng = Rng(0x5eed);
    let mut compared = 0;
    for case in 0..60 {
        let topo = topology(case);
        let fst = random_tlg(&mut rng, topo, 3 + case as u32 % 3);
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let dec = CtcDecoder::new(&g, wide()).unwrap();
        let m = random_logprobs(&mut rng, 3 + case % 5);
        let want = exhaustive_best(&g, &m, 1.0);
        let r = dec.decode_batch(
            &[CtcInput {
                id: "u",
                scores: &m,
                booster: Booster::None,
                context: None,
            }],
            2,
        );
        match r.into_iter().next().unwrap() {
            Ok(u) if u.segments[0].reached_final => {
                let got = u.segments[0].best.cost();
                assert!(
                    (got - want).abs() < 1e-3,
                    "case {case} {topo:?}: {got} vs {want}"
                );
                compared += 1;
            }
            // No path reads these rows to a final state: the exhaustive search agrees.
            Ok(_) | Err(_) => assert!(!want.is_finite(), "case {case}: {want}"),
        }
    }
    assert!(compared > 40, "{compared}");
}

/// TLG ∘ B with B the single-state word acceptor of 001 Fig. 4 (boosted words at −score).
fn compose_b(tlg: &StdFst, words: u32, boost: &[(u32, f32)]) -> StdFst {
    let mut b = StdFst::new();
    let s = b.add_state();
    b.set_start(s).unwrap();
    b.set_final(s, 0.0).unwrap();
    for w in 1..=words {
        let c = boost.iter().find(|x| x.0 == w).map_or(0.0, |x| -x.1);
        b.add_tr(s, Tr::new(w, w, c, s)).unwrap();
    }
    ctx_graph::compile::compose_sorted(tlg, &b, "TLG∘B").unwrap()
}

#[test]
fn word_boosting_equals_decoding_the_composed_tlg_b() {
    let mut rng = Rng(77);
    let table = word_table();
    let mut differs = 0;
    for case in 0..40 {
        let topo = topology(case);
        let fst = random_tlg(&mut rng, topo, 5);
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let boost = vec![(2u32, 2.5f32), (4, 1.0 + rng.unit())];
        let entries: Vec<(String, f32)> = boost
            .iter()
            .map(|&(w, s)| (table.symbol(w).unwrap().to_string(), s))
            .collect();
        let dec = CtcDecoder::new(&g, wide()).unwrap();
        let ctx = ContextBoost::words(&g, &table, &entries, 1000.0).unwrap();
        assert_eq!(ctx.report.applied, 2);
        let gb = DecodingGraph::from_fst(&compose_b(&fst, 5, &boost), None).unwrap();
        let decb = CtcDecoder::new(&gb, wide()).unwrap();
        let m = random_logprobs(&mut rng, 4 + case % 4);
        let one = |d: &CtcDecoder, b: Booster| {
            d.decode_batch(
                &[CtcInput {
                    id: "u",
                    scores: &m,
                    booster: b,
                    context: None,
                }],
                3,
            )
            .remove(0)
        };
        let plain = one(&dec, Booster::None);
        match (one(&dec, ctx.booster.clone()), one(&decb, Booster::None)) {
            (Ok(a), Ok(b)) => {
                let (ca, cb) = (a.segments[0].best.cost(), b.segments[0].best.cost());
                assert!((ca - cb).abs() < 1e-3, "case {case}: {ca} vs {cb}");
                assert_eq!(a.words(), b.words(), "case {case}");
                if plain.as_ref().map(|p| p.words()).ok() != Some(a.words()) {
                    differs += 1;
                }
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("case {case}: {a:?} vs {b:?}"),
        }
    }
    assert!(differs > 3, "boosting changed {differs} results");
}

#[test]
fn streaming_in_any_chunk_size_equals_offline() {
    let mut rng = Rng(4242);
    for case in 0..12 {
        let topo = topology(case);
        let fst = random_tlg(&mut rng, topo, 4);
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let cfg = CtcConfig {
            search: DecoderConfig {
                beam: 8.0,
                max_active: 50,
                lattice_beam: 4.0,
                acoustic_scale: 1.0,
                ..DecoderConfig::default()
            },
            ..CtcConfig::default()
        };
        let dec = CtcDecoder::new(&g, cfg).unwrap();
        let mats: Vec<ScoreMatrix> = (0..3).map(|_| random_logprobs(&mut rng, 12)).collect();
        let inputs: Vec<CtcInput> = mats
            .iter()
            .map(|m| CtcInput {
                id: "u",
                scores: m,
                booster: Booster::None,
                context: None,
            })
            .collect();
        let offline: Vec<_> = dec
            .decode_batch(&inputs, 100)
            .into_iter()
            .map(|r| r.ok().map(|u| (u.words(), u.segments[0].best.cost())))
            .collect();
        for chunk in [1, 2, 5, 12] {
            let mut st = dec.streaming(None).unwrap();
            for id in 0..3u64 {
                st.open(id + 10, Booster::None).unwrap();
            }
            let mut t = 0;
            let mut failed = [false; 3];
            while t < 12 {
                let end = (t + chunk).min(12);
                let parts: Vec<ScoreMatrix> = mats.iter().map(|m| m.slice_rows(t..end)).collect();
                let batch: Vec<(u64, &ScoreMatrix)> = (0..3)
                    .filter(|&i| !failed[i])
                    .map(|i| (i as u64 + 10, &parts[i]))
                    .collect();
                if st.push(&batch).is_err() {
                    // A chunk that leaves no token alive: find which, as offline did.
                    for (i, f) in failed.iter_mut().enumerate() {
                        *f |= offline[i].is_none();
                    }
                }
                t = end;
            }
            for (i, off) in offline.iter().enumerate() {
                let fin = st.close(i as u64 + 10);
                let got = fin
                    .ok()
                    .flatten()
                    .map(|s| (s.best.words.clone(), s.best.cost()));
                match (off, got) {
                    (Some((w, c)), Some((w2, c2))) => {
                        assert_eq!(w, &w2, "case {case} chunk {chunk} stream {i}");
                        assert!((c - c2).abs() < 1e-3 || (c.is_nan() && c2.is_nan()));
                    }
                    (None, _) => {}
                    (Some(_), None) => panic!("case {case} chunk {chunk} stream {i}"),
                }
            }
            assert_eq!(st.num_open(), 0);
        }
    }
}

#[test]
fn bad_inputs_are_refused_with_the_utterance_and_frame() {
    let fst = build_t(CtcTopology::Normal, UNITS, 0).unwrap();
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    // Logits instead of log-probabilities.
    let m = ScoreMatrix::new(2, 4, vec![0.0, -1.0, -2.0, -3.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
    let e = check_normalised("utt7", &m, 1e-2).unwrap_err().to_string();
    assert!(
        e.contains("utt7, frame 0") && e.contains("not normalised"),
        "{e}"
    );
    let dec = CtcDecoder::new(&g, CtcConfig::default())
        .unwrap()
        .with_tokens(5);
    let mut rng = Rng(3);
    let ok = random_logprobs(&mut rng, 3);
    let e = dec.prepare("utt8", &ok).unwrap_err().to_string();
    assert!(
        e.contains("utt8: 4 score columns, but tokens.txt has 5"),
        "{e}"
    );
    // A graph with no blank self-loop (T without them) is not a CTC graph.
    let mut no_loop = fst.clone();
    for s in 0..no_loop.num_states() as StateId {
        let trs: Vec<Tr<TropicalWeight>> = no_loop
            .get_trs(s)
            .unwrap()
            .trs()
            .iter()
            .filter(|t| !(t.ilabel == BLANK_LABEL && t.nextstate == s))
            .cloned()
            .collect();
        no_loop.delete_trs(s).unwrap();
        for t in trs {
            no_loop.add_tr(s, t).unwrap();
        }
    }
    let gl = DecodingGraph::from_fst(&no_loop, None).unwrap();
    assert!(matches!(check_topology(&gl, 0), Err(CtcError::Topology(_))));
    // The same graph read with another blank column has no blank loop either.
    assert!(check_topology(&g, 2).is_err());
    assert!(check_topology(&g, 0).is_ok());
    // A boosted word not in words.txt is reported, the others applied; a boost over half the
    // beam is flagged.
    let mut words = SymbolTable::new();
    for w in ["<eps>", "x", "y"] {
        words.add(w);
    }
    let tlg = random_tlg(&mut rng, CtcTopology::Normal, 2);
    let g2 = DecodingGraph::from_fst(&tlg, None).unwrap();
    let c = ContextBoost::words(
        &g2,
        &words,
        &[("x".into(), 3.0), ("zzz".into(), 1.0), ("y".into(), 9.0)],
        15.0,
    )
    .unwrap();
    assert_eq!(c.report.applied, 2);
    assert_eq!(c.report.oov, vec!["zzz".to_string()]);
    assert_eq!(c.report.over_half_beam, vec![("y".to_string(), 9.0)]);
    let _ = unit_label(1);
}

#[test]
fn greedy_collapses_repeats_and_drops_blanks() {
    // argmax per row: 1 1 0 1 2 2 0 0 3
    let rows = [1u32, 1, 0, 1, 2, 2, 0, 0, 3];
    let mut data = Vec::new();
    for &r in &rows {
        let mut row = vec![-5.0f32; 4];
        row[r as usize] = -0.1;
        data.extend(row);
    }
    let m = ScoreMatrix::new(rows.len(), 4, data).unwrap();
    assert_eq!(greedy_tokens(&m, 0), vec![1, 1, 2, 3]);
    let mut shape = ctc_wfst::PosteriorShape::default();
    shape.add(&m, 0);
    assert!((shape.blank_share() - 3.0 / 9.0).abs() < 1e-9);
}

#[test]
fn blank_penalty_and_word_insertion_penalty_change_what_they_should() {
    let mut rng = Rng(99);
    let fst = random_tlg(&mut rng, CtcTopology::Normal, 3);
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    let wip = CtcDecoder::new(
        &g,
        CtcConfig {
            word_insertion_penalty: 0.75,
            ..wide()
        },
    )
    .unwrap();
    let n_words = (0..g.num_arcs()).filter(|&a| g.olabel[a] != 0).count();
    let diff: f32 = (0..g.num_arcs())
        .map(|a| wip.graph().weight[a] - g.weight[a])
        .sum();
    assert!((diff - 0.75 * n_words as f32).abs() < 1e-3);
    let bp = CtcDecoder::new(
        &g,
        CtcConfig {
            blank_penalty: 1.5,
            ..wide()
        },
    )
    .unwrap();
    let m = random_logprobs(&mut rng, 3);
    let p = bp.prepare("u", &m).unwrap();
    assert!((p.row(1)[0] - (m.row(1)[0] - 1.5)).abs() < 1e-6);
    assert_eq!(p.row(1)[2], m.row(1)[2]);
}

/// The shim (and the GPU when one answers): the CUDA kernels run on the CPU.
fn device_backends() -> Vec<ctx_cuda::Backend> {
    let mut v = vec![ctx_cuda::Backend::Shim];
    match ctx_cuda::cuda::CudaDevice::open() {
        Ok(_) => v.push(ctx_cuda::Backend::Cuda),
        Err(e) => eprintln!("GPU runs SKIPPED (shim only): {e}"),
    }
    v
}

/// What a streaming run gave: per pushed batch the partials and segments (words, cost bits) of
/// each channel, or the error; then each channel's closing segment.
type StreamLog = (
    Vec<Result<Vec<(Vec<u32>, Vec<(Vec<u32>, u32)>)>, String>>,
    Vec<String>,
);

fn stream_run(
    dec: &CtcDecoder,
    backend: ctx_cuda::Backend,
    mats: &[ScoreMatrix],
    boosters: &[Booster],
    chunk: usize,
    endpoint: Option<wfst_search::EndpointConfig>,
) -> StreamLog {
    let mut st = dec.streaming_on(endpoint, backend).unwrap();
    assert_eq!(
        st.backend().0 == "cpu",
        backend == ctx_cuda::Backend::Cpu,
        "{:?}",
        st.backend()
    );
    for (i, b) in boosters.iter().enumerate() {
        st.open(i as u64 + 7, b.clone()).unwrap();
    }
    let rows = mats.iter().map(|m| m.rows()).max().unwrap();
    let mut log = Vec::new();
    let mut t = 0;
    while t < rows {
        let parts: Vec<(u64, ScoreMatrix)> = mats
            .iter()
            .enumerate()
            .filter(|(_, m)| t < m.rows())
            .map(|(i, m)| (i as u64 + 7, m.slice_rows(t..(t + chunk).min(m.rows()))))
            .collect();
        let batch: Vec<(u64, &ScoreMatrix)> = parts.iter().map(|(id, m)| (*id, m)).collect();
        log.push(
            st.push(&batch)
                .map(|rs| {
                    rs.into_iter()
                        .map(|r| {
                            let segs = r
                                .segments
                                .iter()
                                .map(|s| (s.best.words.clone(), s.best.cost().to_bits()))
                                .collect();
                            (r.partial, segs)
                        })
                        .collect()
                })
                .map_err(|e| e.to_string()),
        );
        t += chunk;
    }
    let closing = (0..mats.len())
        .map(|i| match st.close(i as u64 + 7) {
            Ok(Some(s)) => format!("{:?} {:08x}", s.best.words, s.best.cost().to_bits()),
            Ok(None) => "none".into(),
            Err(e) => format!("error: {e}"),
        })
        .collect();
    (log, closing)
}

#[test]
fn streaming_on_the_cuda_backend_equals_the_cpu_channels() {
    let mut rng = Rng(9090);
    let table = word_table();
    let mut boosted_differs = 0;
    let mut compared = 0;
    let mut endpoints = 0;
    for case in 0..16 {
        let topo = topology(case);
        let fst = random_tlg(&mut rng, topo, 5);
        let g = DecodingGraph::from_fst(&fst, None).unwrap();
        let dec = CtcDecoder::new(&g, wide()).unwrap();
        let entries = vec![("b".to_string(), 2.5f32), ("d".to_string(), 1.5)];
        let ctx = ContextBoost::words(&g, &table, &entries, 1000.0).unwrap();
        // Four channels of different lengths, two of them word-boosted.
        let mats: Vec<ScoreMatrix> = (0..4)
            .map(|i| random_logprobs(&mut rng, 8 + 3 * i))
            .collect();
        let boosters = [
            Booster::None,
            ctx.booster.clone(),
            Booster::None,
            ctx.booster.clone(),
        ];
        // Every fourth case with Kaldi's endpoint rules at 0.5 s frames (blank is silence).
        let endpoint = (case % 4 == 3).then(|| wfst_search::EndpointConfig::kaldi(0.5));
        for chunk in [1, 3, 20] {
            let cpu = stream_run(
                &dec,
                ctx_cuda::Backend::Cpu,
                &mats,
                &boosters,
                chunk,
                endpoint.clone(),
            );
            let plain = stream_run(
                &dec,
                ctx_cuda::Backend::Cpu,
                &mats,
                &[Booster::None, Booster::None, Booster::None, Booster::None],
                chunk,
                endpoint.clone(),
            );
            if plain.1[1] != cpu.1[1] || plain.1[3] != cpu.1[3] {
                boosted_differs += 1;
            }
            endpoints += cpu
                .0
                .iter()
                .flatten()
                .flatten()
                .map(|(_, segs)| segs.len())
                .sum::<usize>();
            for b in device_backends() {
                let dev = stream_run(&dec, b, &mats, &boosters, chunk, endpoint.clone());
                assert_eq!(dev, cpu, "case {case} chunk {chunk} backend {b:?}");
                compared += 1;
            }
        }
    }
    assert!(compared >= 48);
    assert!(endpoints > 3, "{endpoints} segments ended at endpoints");
    assert!(
        boosted_differs > 3,
        "boosting changed {boosted_differs} runs"
    );
}

//! The CUDA backend's kernels against the CPU backend, on the CPU shim (`ctx_cuda::shim`, always)
//! and on a GPU (when one answers; otherwise the test says it skipped it): on random graphs with
//! ε cycles, negative costs, arc boosting, narrow beams and max-active cuts, in mixed batches and
//! chunk sizes, every utterance's result — words, costs, word times, partial hypotheses, token
//! counts and the pruned word lattice — must be the same, bit for bit (compared through their
//! `Debug` text, which prints every float exactly).

mod common;

use common::{devices, Rng, LABELS};
use ctx_core::scores::ScoreMatrix;
use ctx_cuda::shim::ShimDevice;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::StdFst;
use rustfst::prelude::*;
use wfst_search::{
    decode_utterance, ArcSetBooster, Booster, Decoder, DecoderConfig, EndpointConfig, GpuDecoder,
    Stream, WordBooster,
};

/// A random graph with up to two ε arcs per state (forward only, or anywhere — cycles of
/// positive weight — with `cycles`; the word lattice needs an acyclic ε graph), words on some
/// arcs of both kinds, a few finals.
fn random_graph(rng: &mut Rng, states: u32, cycles: bool) -> StdFst {
    let mut fst = StdFst::new();
    for _ in 0..states {
        fst.add_state();
    }
    fst.set_start(0).unwrap();
    for s in 0..states {
        for _ in 0..1 + rng.below(4) {
            let il = 1 + rng.below(LABELS as u64) as u32;
            let ol = if rng.below(3) == 0 {
                1 + rng.below(6) as u32
            } else {
                0
            };
            let d = rng.below(states as u64) as u32;
            fst.add_tr(s, Tr::new(il, ol, 2.0 * rng.unit(), d)).unwrap();
        }
        for _ in 0..rng.below(3) {
            if !cycles && s + 1 == states {
                break;
            }
            let d = if cycles {
                rng.below(states as u64) as u32
            } else {
                s + 1 + rng.below((states - s - 1) as u64) as u32
            };
            let ol = if rng.below(2) == 0 { 7 } else { 0 };
            // Quantised weights: equal path costs (ties) are common.
            let w = (rng.below(4) as f32) * 0.5 + 0.25;
            fst.add_tr(s, Tr::new(0, ol, w, d)).unwrap();
        }
        if rng.below(3) == 0 {
            fst.set_final(s, rng.unit()).unwrap();
        }
    }
    fst
}

/// Scores in [−3, 1.5): positive log-likelihoods make negative acoustic costs, so token costs
/// go below zero (the packing must order them).
fn scores(rng: &mut Rng, rows: usize) -> ScoreMatrix {
    let data = (0..rows * LABELS as usize)
        .map(|_| (rng.below(10) as f32) * 0.45 - 3.0)
        .collect();
    ScoreMatrix::new(rows, LABELS as usize, data).unwrap()
}

fn run_case(case: u64, cfg: &DecoderConfig, boosted: bool, chunk: usize, endpoint: bool) -> usize {
    let mut rng = Rng(1000 + case);
    let fst = random_graph(&mut rng, 4 + (case % 9) as u32, !cfg.lattice);
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&g, cfg.clone()).unwrap().with_silence(&[1]);
    let ep = EndpointConfig::kaldi(0.25);
    let ep = endpoint.then_some(&ep);
    // A batch of utterances of different lengths, each with its own booster.
    let n = 1 + (case % 5) as usize;
    let utts: Vec<ScoreMatrix> = (0..n)
        .map(|i| scores(&mut rng, 3 + ((case as usize + 3 * i) % 14)))
        .collect();
    let boosters: Vec<Booster> = (0..n)
        .map(|i| {
            if !boosted || i % 3 == 2 {
                return Booster::None;
            }
            if (i + case as usize) % 2 == 1 {
                // Word boosting: words 1..=7 at costs of both signs (ε-arc words included).
                let mut table: Vec<(u32, f32)> = Vec::new();
                for w in 1..=7 {
                    if rng.below(2) == 0 {
                        table.push((w, (rng.below(7) as f32) * 0.5 - 2.0));
                    }
                }
                return Booster::Words(WordBooster::new(&g, table).unwrap());
            }
            // Emitting arcs at random; ε arcs only where the boosted weight stays positive (a
            // negative ε cycle is an error both backends report, tested on its own).
            let discount = -1.0 - i as f32;
            let arcs: Vec<u32> = (0..g.num_arcs() as u32)
                .filter(|&a| {
                    rng.below(3) == 0
                        && ((a as usize) < g.num_emitting()
                            || g.weight[a as usize] + discount > 0.1)
                })
                .collect();
            Booster::ArcSet(ArcSetBooster::new(&g, arcs, discount).unwrap())
        })
        .collect();
    let cpu_res: Vec<_> = (0..n)
        .map(|i| {
            let mut s = Stream::new(format!("u{i}"), boosters[i].clone());
            decode_utterance(&dec, &mut s, &utts[i], chunk, ep)
        })
        .collect();
    let cpu: Vec<String> = cpu_res.iter().map(|r| format!("{r:?}")).collect();
    // The segments alone (resident scores decode in one chunk: no partial hypotheses).
    let cpu_segments: Vec<String> = cpu_res
        .iter()
        .map(|r| format!("{:?}", r.as_ref().map(|u| &u.segments)))
        .collect();
    let mut ok = 0;
    for (label, dev) in devices() {
        let name = format!("{} ({label})", dev.name());
        let mut gpu = GpuDecoder::new(dec.clone(), dev).unwrap();
        if case % 3 == 1 {
            // Scratch far too small: every buffer grows and frames are replayed.
            gpu = gpu.with_scratch(1, 2, 1);
        }
        if !gpu.is_gpu() {
            // One block per lane of 1 to 32 threads (fibers on the shim): the frames must not
            // depend on the block size, nor on the order the threads reach each barrier.
            gpu = gpu.with_block_threads([1, 3, 8, 32][(case / 3 % 4) as usize]);
        }
        let mut streams: Vec<Stream> = (0..n)
            .map(|i| Stream::new(format!("u{i}"), boosters[i].clone()))
            .collect();
        let refs: Vec<&ScoreMatrix> = utts.iter().collect();
        let res = gpu.decode_utterances(&mut streams, &refs, chunk, ep);
        let st = gpu.stats();
        let rows: usize = utts.iter().map(|m| m.rows()).sum();
        assert!(st.frames <= rows as u64 && st.arcs > 0);
        // The step's structure, from the backend's own counters: five launches and one copy
        // back per attempt (two when the body outgrew the last step's), every attempt beyond
        // the steps a replay after an overflow.
        let attempts = st.steps + st.replays;
        assert!(
            st.launches <= 5 * attempts && st.launches >= 5 * st.steps,
            "{name}: {st:?}"
        );
        assert!(
            st.readbacks >= st.steps && st.readbacks <= 2 * attempts,
            "{name}: {st:?}"
        );
        if case % 3 == 1 {
            assert!(
                st.replays > 0,
                "{name}: tiny scratch never replayed: {st:?}"
            );
        }
        // The same utterances from scores already on the device (riva's condition).
        let resident = gpu.upload_scores(&refs).unwrap();
        let mut streams: Vec<Stream> = (0..n)
            .map(|i| Stream::new(format!("u{i}"), boosters[i].clone()))
            .collect();
        let res_dev = gpu.decode_resident(&mut streams, &resident, ep);
        gpu.free_scores(resident);
        for i in 0..n {
            let got = format!("{:?}", res_dev[i].as_ref().map(|u| &u.segments));
            assert_eq!(
                got, cpu_segments[i],
                "{name}: resident scores, case {case} utt {i} (cfg {cfg:?})"
            );
        }
        for i in 0..n {
            let got = format!("{:?}", res[i]);
            assert_eq!(
                got, cpu[i],
                "{name}: case {case} utt {i} (boosted {boosted}, chunk {chunk}, cfg {cfg:?})"
            );
        }
    }
    for i in 0..n {
        ok += cpu[i].starts_with("Ok") as usize;
        if std::env::var_os("SHOW").is_some() && !cpu[i].starts_with("Ok") {
            eprintln!("{}", &cpu[i][..cpu[i].len().min(200)]);
        }
    }
    ok
}

fn wide() -> DecoderConfig {
    DecoderConfig {
        beam: 1000.0,
        max_active: 1_000_000,
        lattice_beam: 3.0,
        acoustic_scale: 0.8,
        prune_interval: 3,
        lattice: true,
    }
}

#[test]
fn shim_equals_cpu_on_random_graphs() {
    let mut decoded = 0;
    for case in 0..60 {
        decoded += run_case(case, &wide(), false, 1 + (case as usize % 4), false);
    }
    assert!(decoded > 60, "only {decoded} utterances decoded");
}

#[test]
fn shim_equals_cpu_with_arc_boosting_and_negative_costs() {
    let mut decoded = 0;
    for case in 0..60 {
        decoded += run_case(100 + case, &wide(), true, 2 + (case as usize % 3), false);
    }
    assert!(decoded > 60, "only {decoded} utterances decoded");
}

#[test]
fn shim_equals_cpu_under_narrow_beams_and_max_active() {
    let mut decoded = 0;
    for case in 0..80 {
        let cfg = DecoderConfig {
            beam: 1.5 + (case % 5) as f32,
            max_active: 2 + (case as usize % 6),
            lattice_beam: 1.0 + (case % 3) as f32,
            acoustic_scale: 1.0,
            prune_interval: 1 + (case as usize % 4),
            lattice: case % 4 != 3,
        };
        decoded += run_case(
            200 + case,
            &cfg,
            case % 2 == 0,
            1 + (case as usize % 5),
            case % 3 == 0,
        );
    }
    assert!(decoded > 80, "only {decoded} utterances decoded");
}

#[test]
fn shim_rejects_word_automata_and_bad_scores() {
    let mut rng = Rng(5);
    let fst = random_graph(&mut rng, 6, false);
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&g, wide()).unwrap();
    let mut gpu = GpuDecoder::new(dec, Box::new(ShimDevice::new())).unwrap();
    assert_eq!(gpu.device_name(), "cpu-shim");
    let stack = Booster::Stack(vec![Booster::None, Booster::None]);
    let mut streams = vec![Stream::new("a", stack), Stream::new("b", Booster::None)];
    let narrow = ScoreMatrix::new(2, 1, vec![0.0, 0.0]).unwrap();
    let good = scores(&mut rng, 4);
    let res = gpu.advance(&mut streams, &[&good, &narrow], None);
    let a = res[0].as_ref().unwrap_err().to_string();
    assert!(a.contains("utterance a") && a.contains("stack"), "{a}");
    let b = res[1].as_ref().unwrap_err().to_string();
    assert!(b.contains("utterance b") && b.contains("columns"), "{b}");
}

#[test]
fn out_of_device_memory_is_one_clear_error() {
    let mut rng = Rng(9);
    let fst = random_graph(&mut rng, 40, false);
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&g, wide()).unwrap();
    // A graph larger than the device.
    let e = GpuDecoder::new(dec.clone(), Box::new(ShimDevice::with_memory(256))).unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("out of GPU memory allocating the graph's"),
        "{m}"
    );
    // The graph fits, a batch of 64 streams does not: every stream gets the error, with the way
    // out.
    let cpu = dec.clone();
    let mut gpu = GpuDecoder::new(dec, Box::new(ShimDevice::with_memory(3_000_000))).unwrap();
    let m = scores(&mut rng, 4);
    let mut streams: Vec<Stream> = (0..64)
        .map(|i| Stream::new(format!("u{i}"), Booster::None))
        .collect();
    let chunks = vec![&m; 64];
    for r in gpu.advance(&mut streams, &chunks, None) {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("out of GPU memory") && e.contains("--gpu-batch"),
            "{e}"
        );
    }
    // Fewer streams fit, and decode as the CPU does.
    decodes_as_the_cpu(&mut gpu, &cpu, &[&m, &m]);
}

/// Fresh streams of `utts` through `gpu` give the CPU decoder's results (the check after a
/// refused batch: the decoder is still sound, not merely not failing).
fn decodes_as_the_cpu(gpu: &mut GpuDecoder, cpu: &Decoder, utts: &[&ScoreMatrix]) {
    let fresh = || -> Vec<Stream> {
        (0..utts.len())
            .map(|i| Stream::new(format!("u{i}"), Booster::None))
            .collect()
    };
    let want: Vec<String> = fresh()
        .iter_mut()
        .zip(utts)
        .map(|(s, m)| format!("{:?}", decode_utterance(cpu, s, m, usize::MAX, None)))
        .collect();
    let got: Vec<String> = gpu
        .decode_utterances(&mut fresh(), utts, usize::MAX, None)
        .iter()
        .map(|r| format!("{r:?}"))
        .collect();
    assert!(want.iter().all(|w| w.starts_with("Ok(")), "{want:?}");
    assert_eq!(got, want);
}

#[test]
fn a_batch_beyond_the_grid_is_refused_before_any_launch() {
    let mut rng = Rng(11);
    let fst = random_graph(&mut rng, 6, false);
    let g = DecodingGraph::from_fst(&fst, None).unwrap();
    let dec = Decoder::new(&g, wide()).unwrap();
    let cpu = dec.clone();
    let mut gpu = GpuDecoder::new(dec, Box::new(ShimDevice::new())).unwrap();
    let m = scores(&mut rng, 2);
    let n = wfst_search::GPU_MAX_BATCH + 1;
    let mut streams: Vec<Stream> = (0..n)
        .map(|i| Stream::new(format!("u{i}"), Booster::None))
        .collect();
    let chunks = vec![&m; n];
    let res = gpu.advance(&mut streams, &chunks, None);
    assert_eq!(res.len(), n);
    let e = res[n - 1].as_ref().unwrap_err().to_string();
    assert!(
        e.contains("65536 streams") && e.contains("--gpu-batch"),
        "{e}"
    );
    assert_eq!(gpu.stats().launches, 0);
    // A batch within the grid decodes as the CPU does.
    decodes_as_the_cpu(&mut gpu, &cpu, &[&m, &m, &m]);
}

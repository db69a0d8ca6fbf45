//! `ctxbench throughput`: decoder-only speed of a backend against the number of concurrent
//! streams (002 Table 2, 001 Tables 2–3): the quick set's utterances, cycled to N streams, each
//! decoded offline as one segment; simulation excluded from the time. On the CPU backend N
//! streams share `--threads` threads; on a device they advance as one batch.

use crate::data::registry;
use crate::pipeline::{Setup, SetupOptions};
use anyhow::{anyhow, bail, Result};
use clap::Args;
use ctx_core::scores::ScoreMatrix;
use ctx_cuda::{Backend, Opened};
use ctx_data::dataset::Subset;
use ctx_data::graphs::DEFAULT_BPE_SIZE;
use ctx_graph::compile::GraphKind;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;
use wfst_search::{decode_utterance, Booster, Decoder, DecoderConfig, GpuDecoder, Stream};

/// Arguments of `ctxbench throughput`.
#[derive(Debug, Args)]
pub struct ThroughputArgs {
    /// Dataset name (datasets.toml); its quick subset unless --full.
    #[arg(long, default_value = "atco2-sim-1h")]
    pub dataset: String,
    /// The full set's utterances instead of the quick subset's.
    #[arg(long)]
    pub full: bool,
    /// hclg, tlg-normal or tlg-compact.
    #[arg(long, default_value = "hclg")]
    pub kind: String,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry.
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// cpu, cuda, auto or shim.
    #[arg(long, default_value = "cpu")]
    pub backend: Backend,
    /// Concurrent streams, one measurement each.
    #[arg(long, value_delimiter = ',', default_value = "1,16,128")]
    pub streams: Vec<usize>,
    /// CPU threads: the CPU backend's decoding threads; on a device, the host threads that
    /// commit each step's frames (lattice, traces, endpoints) per stream.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Record lattices (as the lattice decoder of 002 does).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub lattice: bool,
    /// The search beam (default: the engine's).
    #[arg(long)]
    pub beam: Option<f32>,
    /// The lattice beam (default: the engine's).
    #[arg(long)]
    pub lattice_beam: Option<f32>,
    /// Tokens expanded per frame at most (default: the engine's).
    #[arg(long)]
    pub max_active: Option<usize>,
    /// On a device, the scores already there before the clock starts (riva-asrlib-decoder's
    /// condition: an acoustic model's output stays on the GPU); else each chunk is uploaded
    /// inside the timed decode.
    #[arg(long)]
    pub resident: bool,
    /// Append the rows to this CSV (header written when the file is new).
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// Runs `ctxbench throughput`: checks the flags, simulates the scores, opens the backend, then
/// one timed decode per stream count (a table line each, and a CSV row with `--csv`).
pub fn run_throughput(a: &ThroughputArgs) -> Result<()> {
    check(a)?;
    let (setup, mats) = scores(a)?;
    let utts = &setup.dataset.utterances;
    let d = DecoderConfig::default();
    let config = DecoderConfig {
        acoustic_scale: setup.acoustic_scale,
        lattice: a.lattice,
        beam: a.beam.unwrap_or(d.beam),
        lattice_beam: a.lattice_beam.unwrap_or(d.lattice_beam),
        max_active: a.max_active.unwrap_or(d.max_active),
        ..d
    };
    config.validate()?;
    let dec = Decoder::new(&setup.csr, config)?.with_silence(&setup.silence);
    let mut gpu = match ctx_cuda::open(a.backend)? {
        Opened::Cpu => None,
        Opened::Device(d) => Some(GpuDecoder::new(dec.clone(), d)?),
    };
    let (backend, device) = describe(a, gpu.as_ref());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.max(1))
        .build()?;
    println!("| backend | device | streams | audio s | decode s | RTFx | frames/s | arcs/s | launches/step | readbacks/step | step ms | host ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut lines = Vec::new();
    for &n in &a.streams {
        let pick: Vec<usize> = (0..n).map(|i| i % utts.len()).collect();
        let audio: f64 = pick.iter().map(|&i| utts[i].duration_s).sum();
        let frames: usize = pick.iter().map(|&i| mats[i].rows()).sum();
        let before = gpu.as_ref().map(|g| g.stats());
        let secs = pool.install(|| timed_decode(a, &setup, &dec, gpu.as_mut(), &mats, &pick))?;
        let c = counters(gpu.as_ref(), before, secs);
        println!(
            "| {backend} | {device} | {n} | {audio:.1} | {secs:.3} | {:.1} | {:.0} | {} | {} | {} | {} | {} |",
            audio / secs,
            frames as f64 / secs,
            c[0], c[1], c[2], c[3], c[4]
        );
        lines.push(format!(
            "{},{},{},\"{}\",{},{},{:.3},{:.4},{:.2},{:.0},{},{}",
            a.dataset,
            setup.graph.kind.name(),
            backend,
            device,
            a.threads,
            n,
            audio,
            secs,
            audio / secs,
            frames as f64 / secs,
            c.join(","),
            if a.resident { "resident" } else { "host" }
        ));
    }
    match &a.csv {
        Some(p) => append_csv(p, &lines),
        None => Ok(()),
    }
}

/// Refuses flags that cannot run: no stream, resident scores without a device, a device batch
/// above its row limit.
fn check(a: &ThroughputArgs) -> Result<()> {
    if a.streams.contains(&0) {
        bail!("--streams: every stream count must be at least 1");
    }
    if a.resident && a.backend == ctx_cuda::Backend::Cpu {
        bail!("--resident: scores resident on a device need --backend cuda, auto or shim");
    }
    if a.backend != ctx_cuda::Backend::Cpu {
        if let Some(n) = a.streams.iter().find(|&&n| n > wfst_search::GPU_MAX_BATCH) {
            bail!(
                "--streams {n}: a device batch holds at most {} streams (one grid row each)",
                wfst_search::GPU_MAX_BATCH
            );
        }
    }
    Ok(())
}

/// The set's setup and every utterance's simulated scores (made before any clock starts).
fn scores(a: &ThroughputArgs) -> Result<(Setup, Vec<ScoreMatrix>)> {
    let reg = registry(&a.registry)?;
    let kind =
        GraphKind::parse(&a.kind).ok_or_else(|| anyhow!("unknown graph kind '{}'", a.kind))?;
    let subset = if a.full { Subset::Full } else { Subset::Quick };
    let setup = Setup::load(
        &reg,
        &a.dataset,
        &SetupOptions {
            gboost_otf: false,
            subset,
            kind,
            bpe_size: DEFAULT_BPE_SIZE,
            cache: &a.cache,
            noise: None,
            snr_db: None,
            gboost: None,
            hclg_bias: None,
            context_slot: None,
        },
    )?;
    if setup.dataset.utterances.is_empty() {
        bail!("dataset {} has no utterances to decode", a.dataset);
    }
    let mats = setup
        .dataset
        .utterances
        .iter()
        .map(|u| setup.scores(u))
        .collect::<Result<_>>()?;
    Ok((setup, mats))
}

/// The backend's and device's names as the table prints them.
fn describe(a: &ThroughputArgs, gpu: Option<&GpuDecoder<'_>>) -> (&'static str, String) {
    let (backend, device) = match gpu {
        Some(g) if g.is_gpu() => (
            "cuda",
            format!("{} + {} host thread(s)", g.device_name(), a.threads),
        ),
        Some(g) => (
            "shim",
            format!("{} + {} host thread(s)", g.device_name(), a.threads),
        ),
        None => ("cpu", format!("{} thread(s)", a.threads)),
    };
    if a.resident {
        (backend, format!("{device}, scores resident"))
    } else {
        (backend, device)
    }
}

/// Seconds to decode the utterances `pick` (indices into the set) as concurrent streams: one
/// device batch, or the CPU threads sharing them (resident scores uploaded before the clock).
fn timed_decode(
    a: &ThroughputArgs,
    setup: &Setup,
    dec: &Decoder<'_>,
    gpu: Option<&mut GpuDecoder<'_>>,
    mats: &[ScoreMatrix],
    pick: &[usize],
) -> Result<f64> {
    let utts = &setup.dataset.utterances;
    let mut t = Instant::now();
    match gpu {
        Some(g) => {
            let mut streams: Vec<Stream> = pick
                .iter()
                .map(|&i| Stream::new(utts[i].id.clone(), Booster::None))
                .collect();
            let refs: Vec<&ScoreMatrix> = pick.iter().map(|&i| &mats[i]).collect();
            let longest = refs.iter().map(|m| m.rows()).max().unwrap_or(1);
            let res = if a.resident {
                let scores = g.upload_scores(&refs)?;
                t = Instant::now();
                let res = g.decode_resident(&mut streams, &scores, None);
                g.free_scores(scores);
                res
            } else {
                g.decode_utterances(&mut streams, &refs, longest, None)
            };
            for r in res {
                r?;
            }
        }
        None => {
            pick.par_iter()
                .map(|&i| {
                    let mut s = Stream::new(utts[i].id.clone(), Booster::None);
                    let m = &mats[i];
                    decode_utterance(dec, &mut s, m, m.rows(), None).map(|_| ())
                })
                .collect::<wfst_search::Result<()>>()?;
        }
    }
    Ok(t.elapsed().as_secs_f64())
}

/// The device's work per batched frame step since `before`: arcs relaxed per second,
/// launches, copies back, the device's and the host's milliseconds — where a step's time goes
/// (empty on the CPU backend, which relaxes the same arcs uncounted).
fn counters(
    gpu: Option<&GpuDecoder<'_>>,
    before: Option<wfst_search::GpuStats>,
    secs: f64,
) -> [String; 5] {
    match (gpu, before) {
        (Some(g), Some(b)) => {
            let a = g.stats();
            let steps = (a.steps - b.steps).max(1) as f64;
            [
                format!("{:.0}", (a.arcs - b.arcs) as f64 / secs),
                format!("{:.1}", (a.launches - b.launches) as f64 / steps),
                format!("{:.1}", (a.readbacks - b.readbacks) as f64 / steps),
                format!("{:.3}", 1e3 * (a.step_s - b.step_s) / steps),
                format!("{:.3}", 1e3 * (a.host_s - b.host_s) / steps),
            ]
        }
        _ => Default::default(),
    }
}

/// Appends CSV rows to `p` (the header first when the file is new), atomically.
fn append_csv(p: &std::path::Path, lines: &[String]) -> Result<()> {
    let mut text = if p.exists() {
        std::fs::read_to_string(p)?
    } else {
        "dataset,graph,backend,device,threads,streams,audio_s,decode_s,rtfx,frames_per_s,\
         arcs_per_s,launches_per_step,readbacks_per_step,step_ms,host_ms,scores\n"
            .to_string()
    };
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
    Ok(())
}

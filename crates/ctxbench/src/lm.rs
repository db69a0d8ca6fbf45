//! `ctxbench lm train` (text → ARPA by interpolated modified Kneser-Ney), `ctxbench lm ppl`
//! (log10 probability and perplexity of a text under an ARPA model), `ctxbench lm arrays`
//! (NGPU-LM's arrays and their query speed) and `ctxbench lm from-sphinx` (pocketsphinx's binary
//! trie LM as ARPA).

use anyhow::{bail, Context, Result};
use ctx_core::arpa::ArpaLm;
use ctx_core::io::open_read;
use ctx_data::kneser_ney::{estimate, Discounts, KnOptions};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `ctxbench lm` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum LmCommand {
    /// Estimate an n-gram LM from text (one sentence per line, words separated by spaces).
    Train(TrainArgs),
    /// Score a text (one sentence per line) with an ARPA LM: total log10 probability, perplexity.
    Ppl {
        /// The ARPA model (plain or gzip).
        #[arg(long)]
        lm: PathBuf,
        /// The text.
        #[arg(long)]
        text: PathBuf,
    },
    /// Build NGPU-LM arrays from an ARPA (004) and time batched full-vocabulary queries against
    /// per-token back-off queries: states, arcs, bytes per n-gram, queries per second.
    Arrays(ArraysArgs),
    /// Convert pocketsphinx's binary trie LM (`en-us.lm.bin`; plain or gzip) to ARPA, every
    /// order (pocketsphinx's own converters crash in its trigrams).
    FromSphinx {
        /// The binary LM.
        #[arg(long)]
        bin: PathBuf,
        /// The ARPA file to write.
        #[arg(long)]
        out: PathBuf,
        /// The logmath base its values were written in (pocketsphinx's default).
        #[arg(long, default_value_t = 1.0001)]
        log_base: f64,
    },
}

/// Settings of `ctxbench lm arrays`.
#[derive(Debug, Clone, clap::Args)]
pub struct ArraysArgs {
    /// The ARPA model (plain or gzip).
    #[arg(long)]
    pub lm: PathBuf,
    /// The model's labels: one per line, or `label id` lines (tokens.txt; `<eps>`, `<blk>` and
    /// `#k` are skipped). Default: the LM's own vocabulary.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// States per batched query (B).
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Batched steps to time (each advances B states over the whole vocabulary).
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Threads for the batched queries.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Where the batched queries run: `cpu` (rayon), `cuda` (the kernels of kernels/ngpu_lm.cu
    /// on a GPU; timings include the copies of states and results), `auto` or `shim`.
    #[arg(long, default_value = "cpu")]
    pub backend: ctx_cuda::Backend,
    /// Write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// On a device, the walk's steps back to back with nothing copied between them (the
    /// picked scores read once at the end): the device's own query rate, reported with the
    /// bytes it writes per second against the card's memory bandwidth.
    #[arg(long)]
    pub resident: bool,
}

/// Settings of `ctxbench lm train`.
#[derive(Debug, Clone, clap::Args)]
pub struct TrainArgs {
    /// Training text, one sentence per line (plain or gzip).
    #[arg(long)]
    pub text: PathBuf,
    /// Model order.
    #[arg(long, default_value_t = 3)]
    pub order: usize,
    /// Output ARPA file (`.gz` to compress).
    #[arg(long)]
    pub out: PathBuf,
    /// Per order from bigrams up, drop n-grams seen at most this often, e.g. `0,1`.
    #[arg(long, value_delimiter = ',')]
    pub prune: Vec<u64>,
    /// Lower-case the text first.
    #[arg(long)]
    pub lowercase: bool,
    /// Train a BPE model with this many pieces on the text and estimate a token-level LM over its
    /// pieces (NGPU-LM style) instead of a word LM.
    #[arg(long, requires = "bpe_out")]
    pub bpe_size: Option<usize>,
    /// Where to write that BPE model.
    #[arg(long)]
    pub bpe_out: Option<PathBuf>,
}

fn read_sentences(path: &Path, lowercase: bool) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for (i, line) in open_read(path)?.lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}", path.display(), i + 1))?;
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| {
                if lowercase {
                    w.to_lowercase()
                } else {
                    w.to_owned()
                }
            })
            .collect();
        if !words.is_empty() {
            out.push(words);
        }
    }
    if out.is_empty() {
        bail!("{}: no sentences", path.display());
    }
    Ok(out)
}

/// Peak resident set size of this process in MB (Linux `VmHWM`; `None` elsewhere).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Runs an `lm` subcommand, printing a summary.
pub fn run_lm(cmd: &LmCommand) -> Result<()> {
    match cmd {
        LmCommand::Arrays(a) => run_arrays(a)?,
        LmCommand::Train(a) => {
            // One threshold per order from bigrams up; an extra value is an error, not ignored.
            if a.prune.len() + 1 > a.order.max(1) {
                bail!(
                    "--prune has {} values for a {}-gram LM: at most {} (one per order from \
                     bigrams up)",
                    a.prune.len(),
                    a.order,
                    a.order.saturating_sub(1)
                );
            }
            let mut sentences = read_sentences(&a.text, a.lowercase)?;
            if let (Some(size), Some(out)) = (a.bpe_size, &a.bpe_out) {
                let lines: Vec<String> = sentences.iter().map(|s| s.join(" ")).collect();
                let bpe = ctx_data::bpe::Bpe::train(&lines, size)
                    .with_context(|| format!("training BPE on {}", a.text.display()))?;
                bpe.write(out)?;
                println!("wrote BPE model {} ({} pieces)", out.display(), bpe.len());
                sentences = ctx_data::bpe::encode_sentences(&bpe, &lines);
            }
            let words: usize = sentences.iter().map(Vec::len).sum();
            let t0 = Instant::now();
            let opts = KnOptions {
                order: a.order,
                discounts: Discounts::Estimate {
                    fallback: [0.5, 1.0, 1.5],
                },
                prune: a.prune.clone(),
            };
            let (lm, rep) = estimate(&sentences, &opts)
                .with_context(|| format!("estimating from {}", a.text.display()))?;
            let secs = t0.elapsed().as_secs_f64();
            lm.write(&a.out)?;
            println!(
                "{} sentences, {words} words, estimated in {secs:.2} s",
                sentences.len()
            );
            for n in 1..=lm.order() {
                let d = rep.discounts[n - 1];
                let fb = if rep.fallback_orders.contains(&n) {
                    " (fallback)"
                } else {
                    ""
                };
                println!(
                    "{n}-grams: {:>9}  pruned {:>8}  D1 {:.3} D2 {:.3} D3+ {:.3}{fb}",
                    lm.count(n),
                    rep.pruned[n - 1],
                    d[0],
                    d[1],
                    d[2]
                );
            }
            if let Some(mb) = peak_rss_mb() {
                println!("peak resident memory {mb:.0} MB");
            }
            println!("wrote {}", a.out.display());
        }
        LmCommand::FromSphinx { bin, out, log_base } => {
            let t = Instant::now();
            let lm = ctx_core::sphinx_lm::read_sphinx_bin(bin, *log_base)?;
            lm.write(out)?;
            let counts: Vec<String> = (1..=lm.order())
                .map(|n| format!("{} {n}-grams", lm.count(n)))
                .collect();
            println!(
                "{}: {} in {:.1} s; wrote {}",
                bin.display(),
                counts.join(", "),
                t.elapsed().as_secs_f64(),
                out.display()
            );
        }
        LmCommand::Ppl { lm, text } => {
            let model = ArpaLm::read(lm)?;
            let sentences = read_sentences(text, false)?;
            let (mut total, mut tokens, mut oov) = (0.0, 0usize, 0usize);
            for (i, s) in sentences.iter().enumerate() {
                let sc = model
                    .score_sentence(s, true, true)
                    .with_context(|| format!("{} sentence {}", text.display(), i + 1))?;
                total += sc.log10_prob;
                tokens += sc.tokens;
                oov += sc.oov;
            }
            println!(
                "{} sentences, {tokens} tokens (incl. </s>), {oov} OOV mapped to <unk>: log10 p = {total:.2}, perplexity = {:.2}",
                sentences.len(),
                10f64.powf(-total / tokens.max(1) as f64)
            );
        }
    }
    Ok(())
}

/// The labels of `--labels` (see [`ArraysArgs::labels`]).
fn read_labels(path: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut last_id: Option<u32> = None;
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            [] => {}
            [l] | [l, _] => {
                // An id, when given, is the label's column: a number, in ascending order (the
                // labels are taken in file order); a negative id is refused as such, not blamed on
                // the vocabulary.
                if let [_, id] = f.as_slice() {
                    let v: u32 = id.parse().map_err(|_| {
                        anyhow::anyhow!(
                            "{} line {}: label id '{id}' is not a whole number ≥ 0",
                            path.display(),
                            n + 1
                        )
                    })?;
                    if last_id.is_some_and(|p| v <= p) {
                        bail!(
                            "{} line {}: label id {v} after {}: ids must ascend (the labels are \
                             read in file order)",
                            path.display(),
                            n + 1,
                            last_id.unwrap_or_default()
                        );
                    }
                    last_id = Some(v);
                }
                if *l == "<eps>" || *l == "<blk>" || (l.starts_with('#') && l.len() > 1) {
                    continue;
                }
                out.push(l.to_string());
            }
            _ => bail!(
                "{} line {}: expected `label` or `label id`",
                path.display(),
                n + 1
            ),
        }
    }
    Ok(out)
}

/// `ctxbench lm arrays`.
fn run_arrays(a: &ArraysArgs) -> Result<()> {
    if a.batch == 0 || a.steps == 0 {
        bail!("--batch and --steps must be at least 1");
    }
    let lm = ArpaLm::read(&a.lm)?;
    let labels = match &a.labels {
        Some(p) => read_labels(p)?,
        None => ngpu_lm::NgramLm::labels_of(&lm),
    };
    let t0 = Instant::now();
    let (arr, rep) = ngpu_lm::NgramLm::from_arpa(&lm, &labels)
        .with_context(|| format!("building arrays from {}", a.lm.display()))?;
    let build_s = t0.elapsed().as_secs_f64();
    let v = arr.vocab_size();
    println!(
        "{}: order {}, {} n-grams -> {} states, {} arcs ({} prefix states added, {} labels missing), {:.1} MB, {:.1} bytes per n-gram, built in {build_s:.2} s",
        a.lm.display(),
        arr.order(),
        rep.ngrams,
        rep.states,
        rep.arcs,
        rep.added_prefixes,
        rep.missing_labels,
        rep.bytes as f64 / 1e6,
        rep.bytes_per_ngram()
    );
    // Batched: B states advanced over V labels per step, each row then moving to a seeded random
    // label's next state (a walk through the LM, like decoding).
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.max(1))
        .build()?;
    let mut rng = ctx_data::rng::Rng::new(0x1a77);
    let mut states = vec![arr.bos_state(); a.batch];
    let (mut scores, mut next) = (vec![0f32; a.batch * v], vec![0u32; a.batch * v]);
    let (mut device, device_name) = match ctx_cuda::open(a.backend)? {
        ctx_cuda::Opened::Cpu => (None, "cpu".to_string()),
        ctx_cuda::Opened::Device(d) => {
            let dl = ngpu_lm::DeviceLm::new(&arr, d)?;
            let name = dl.device_name();
            (Some(dl), name)
        }
    };
    let mut batched_s = 0.0;
    let mut checksum = 0.0f64;
    let mut resident: Option<ngpu_lm::ResidentWalk> = None;
    if a.resident {
        let Some(d) = device.as_mut() else {
            bail!("--resident: the walk stays on a device: --backend cuda, auto or shim");
        };
        // The same walk as below (the same labels in the same order), on the device.
        let labels: Vec<u32> = (0..a.steps * a.batch)
            .map(|_| rng.below(v) as u32)
            .collect();
        let w = d.walk_resident(&states, &labels)?;
        batched_s = w.seconds;
        checksum += w.picked.iter().map(|&x| x as f64).sum::<f64>();
        resident = Some(w);
    } else {
        for _ in 0..a.steps {
            let t = Instant::now();
            match device.as_mut() {
                Some(d) => d.advance(&states, &mut scores, &mut next)?,
                None => pool.install(|| arr.advance(&states, &mut scores, &mut next))?,
            }
            batched_s += t.elapsed().as_secs_f64();
            for (b, s) in states.iter_mut().enumerate() {
                let l = rng.below(v);
                checksum += scores[b * v + l] as f64;
                *s = next[b * v + l];
            }
        }
    }
    let batched_qps = (a.steps * a.batch * v) as f64 / batched_s.max(1e-12);
    // Per token: the ARPA back-off query for every label of a few rows (hash lookups per level,
    // what a CPU LM without full-vocabulary queries does).
    let ids: Vec<Option<u32>> = labels.iter().map(|l| lm.word_id(l)).collect();
    let rows = a.steps.min(20);
    let mut hist: Vec<u32> = lm.word_id(ctx_core::arpa::BOS).into_iter().collect();
    let t = Instant::now();
    let mut per_token_n = 0usize;
    for _ in 0..rows {
        for id in ids.iter().flatten() {
            checksum += lm.log10_prob(&hist, *id).unwrap_or(0.0) as f64;
            per_token_n += 1;
        }
        if let Some(id) = ids[rng.below(v)] {
            hist.push(id);
        }
    }
    let per_token_s = t.elapsed().as_secs_f64();
    let per_token_qps = per_token_n as f64 / per_token_s.max(1e-12);
    // Written per step: a score and a next state per cell.
    let write_gbs = (a.steps * a.batch * v * 8) as f64 / batched_s.max(1e-12) / 1e9;
    let peak_gbs = device.as_ref().and_then(|d| d.peak_bandwidth_gbs());
    if let Some(w) = &resident {
        println!(
            "resident walk: {} launches, {} copies back; {write_gbs:.1} GB/s written{}",
            w.launches,
            w.readbacks,
            peak_gbs.map_or(String::new(), |p| format!(
                " of the card's {p:.0} GB/s ({:.0}%)",
                100.0 * write_gbs / p
            ))
        );
    }
    println!(
        "batched full-vocabulary queries on {device_name}: B {} x V {v}, {} steps, {} thread(s): {:.3} s, {:.1} M label scores/s; per-token back-off queries: {:.1} M/s; ratio {:.1}x (checksum {checksum:.3})",
        a.batch,
        a.steps,
        a.threads,
        batched_s,
        batched_qps / 1e6,
        per_token_qps / 1e6,
        batched_qps / per_token_qps
    );
    if let Some(p) = &a.json {
        let j = serde_json::json!({
            "lm": a.lm.display().to_string(),
            "order": arr.order(),
            "vocab": v,
            "ngrams": rep.ngrams,
            "states": rep.states,
            "arcs": rep.arcs,
            "added_prefixes": rep.added_prefixes,
            "missing_labels": rep.missing_labels,
            "bytes": rep.bytes,
            "bytes_per_ngram": rep.bytes_per_ngram(),
            "build_s": build_s,
            "batch": a.batch,
            "steps": a.steps,
            "threads": a.threads,
            "device": device_name,
            "batched_s": batched_s,
            "batched_label_scores_per_s": batched_qps,
            "resident": a.resident,
            "written_gb_per_s": write_gbs,
            "device_peak_gb_per_s": peak_gbs,
            "per_token_queries_per_s": per_token_qps,
        });
        ctx_core::io::write_atomic(p, |w| {
            w.write_all(serde_json::to_string_pretty(&j).expect("json").as_bytes())
        })?;
    }
    Ok(())
}

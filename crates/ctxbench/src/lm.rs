//! `ctxbench lm train` (text → ARPA by interpolated modified Kneser-Ney) and `ctxbench lm ppl`
//! (log10 probability and perplexity of a text under an ARPA model).

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
        LmCommand::Train(a) => {
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

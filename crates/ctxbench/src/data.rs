//! `ctxbench data list|stats|prepare`: the datasets of datasets.toml.

use anyhow::{Context, Result};
use clap::Subcommand;
use ctx_data::acoustic::{CtcSim, HybridSim};
use ctx_data::bpe::Bpe;
use ctx_data::dataset::{Dataset, Subset};
use ctx_data::registry::Registry;
use std::path::PathBuf;

/// Dataset commands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// List the datasets of the registry.
    List {
        /// The registry (default: datasets.toml found from the current folder upwards).
        #[arg(long)]
        registry: Option<PathBuf>,
    },
    /// Print a dataset's figures: utterances, hours, words, list sizes, OOV rate of the lists.
    Stats {
        /// Dataset name.
        name: String,
        /// Only the quick subset.
        #[arg(long)]
        quick: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// The registry.
        #[arg(long)]
        registry: Option<PathBuf>,
    },
    /// Export simulated acoustic scores of a dataset so any decoder can read the same inputs.
    Scores {
        /// Dataset name.
        name: String,
        /// hybrid or ctc.
        #[arg(long, value_enum, default_value = "hybrid")]
        model: SimModel,
        /// Only the quick subset.
        #[arg(long)]
        quick: bool,
        /// Output: an archive file (ark, ark-text) or a folder (npy).
        #[arg(long)]
        out: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "ark")]
        format: ScoreFormat,
        /// HMM states per phone (hybrid).
        #[arg(long, default_value_t = 1)]
        states_per_phone: usize,
        /// BPE pieces (ctc; the same model the TLG graph uses).
        #[arg(long, default_value_t = ctx_data::graphs::DEFAULT_BPE_SIZE)]
        bpe_size: usize,
        /// Only the first N utterances.
        #[arg(long)]
        limit: Option<usize>,
        /// The registry.
        #[arg(long)]
        registry: Option<PathBuf>,
    },
    /// Write a dataset as a data folder (text, utt2dur, lists, entities, LM text, stats.json).
    Prepare {
        /// Dataset name.
        name: String,
        /// Only the quick subset.
        #[arg(long)]
        quick: bool,
        /// Output folder (default: data/<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The registry.
        #[arg(long)]
        registry: Option<PathBuf>,
    },
}

/// Which simulated model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimModel {
    /// Pdf log-likelihoods for HCLG decoding (30 ms frames).
    Hybrid,
    /// Token log-probs with blank at column 0 for TLG decoding (40 ms frames).
    Ctc,
}

/// Output format of exported scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScoreFormat {
    /// One Kaldi binary archive (`<out>`), readable by `copy-matrix` and our decoders.
    Ark,
    /// One Kaldi text archive.
    ArkText,
    /// A folder of `<utt>.npy` files (float32, rows = frames).
    Npy,
}

/// Reads the registry given, or finds datasets.toml from the current folder upwards.
pub fn registry(path: &Option<PathBuf>) -> Result<Registry> {
    Ok(match path {
        Some(p) => Registry::read(p)?,
        None => Registry::discover(&std::env::current_dir()?)?,
    })
}

fn subset(quick: bool) -> Subset {
    if quick {
        Subset::Quick
    } else {
        Subset::Full
    }
}

/// Runs a data command.
pub fn run_data(cmd: &DataCommand) -> Result<()> {
    match cmd {
        DataCommand::List { registry: r } => {
            let reg = registry(r)?;
            for (name, spec) in &reg.datasets {
                let (kind, desc) = (spec.kind_name(), spec.description());
                println!("{name:<16} {kind:<9} {desc}");
            }
        }
        DataCommand::Stats {
            name,
            quick,
            json,
            registry: r,
        } => {
            let reg = registry(r)?;
            let ds = Dataset::load(&reg, name, subset(*quick))
                .with_context(|| format!("loading dataset {name}"))?;
            let s = ds.stats();
            if *json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print_stats(&s);
            }
        }
        DataCommand::Scores {
            name,
            model,
            quick,
            out,
            format,
            states_per_phone,
            bpe_size,
            limit,
            registry: r,
        } => {
            let reg = registry(r)?;
            let ds = Dataset::load(&reg, name, subset(*quick))
                .with_context(|| format!("loading dataset {name}"))?;
            let (mats, audio) = simulate_scores(
                &reg,
                &ds,
                name,
                *model,
                *states_per_phone,
                *bpe_size,
                *limit,
            )?;
            write_scores(out, *format, &mats)?;
            let cols = mats.first().map_or(0, |(_, m)| m.cols());
            println!(
                "wrote {} ({} utterances, {:.2} h of audio, {cols} columns)",
                out.display(),
                mats.len(),
                audio / 3600.0
            );
        }
        DataCommand::Prepare {
            name,
            quick,
            out,
            registry: r,
        } => {
            let reg = registry(r)?;
            let ds = Dataset::load(&reg, name, subset(*quick))
                .with_context(|| format!("loading dataset {name}"))?;
            let out = out
                .clone()
                .unwrap_or_else(|| PathBuf::from("data").join(&ds.name));
            let dir = ds.prepare(&out)?;
            // The lexicon the dataset needs: every word of the references, the lists and the LM
            // text, pronounced by the shipped CMUdict and the fallbacks (unreadable words counted).
            let pron = ctx_data::dataset::shipped_pronouncer(&reg)?;
            let mut words: std::collections::BTreeSet<&str> = ds.lm_vocabulary();
            for u in &ds.utterances {
                words.extend(u.words.iter().map(String::as_str));
            }
            let named = ds.doc_lists.values().flat_map(|m| m.values());
            for l in ds
                .lists
                .values()
                .chain(ds.global_lists.values())
                .chain(named)
            {
                words.extend(l.phrases.iter().flatten().map(String::as_str));
            }
            let mut lex = ctx_core::lexicon::Lexicon::new();
            let mut unreadable = Vec::new();
            for w in words {
                match pron.pronounce(w) {
                    Ok((prons, _)) => {
                        for phones in prons {
                            lex.push(ctx_core::lexicon::LexiconEntry {
                                word: w.to_string(),
                                prob: 1.0,
                                phones,
                            });
                        }
                    }
                    Err(_) => unreadable.push(w),
                }
            }
            lex.write(&dir.join("lexicon.txt"), false)?;
            if !unreadable.is_empty() {
                eprintln!(
                    "warning: {} word(s) have no pronunciation and are not in lexicon.txt: {}",
                    unreadable.len(),
                    unreadable.join(" ")
                );
            }
            println!(
                "wrote {} ({} utterances, lexicon of {} pronunciations)",
                dir.display(),
                ds.utterances.len(),
                lex.len()
            );
        }
    }
    Ok(())
}

/// `data stats` as aligned lines.
fn print_stats(s: &ctx_data::dataset::DatasetStats) {
    println!("dataset               {}", s.name);
    println!("utterances            {}", s.utterances);
    if s.documents > 0 {
        println!("documents             {}", s.documents);
    }
    println!("hours                 {:.2}", s.hours);
    println!("words                 {}", s.words);
    println!("entities              {}", s.entities);
    println!("median list entities  {}", s.median_list_entities);
    println!(
        "list OOV rate         {:.1}% of distinct words, {:.1}% of tokens",
        100.0 * s.list_oov_rate,
        100.0 * s.list_oov_token_rate
    );
    if let Some(nc) = s.no_callsign_share {
        println!("NO_CALLSIGN share     {:.1}%", 100.0 * nc);
    }
    println!("LM text words         {}", s.lm_words);
    for (k, v) in &s.global_lists {
        println!("{:<21} {v} phrases", format!("{k} list"));
    }
    for (k, v) in &s.doc_lists {
        println!("{:<21} median {v} phrases a document", format!("{k} list"));
    }
}

/// Simulated scores of the first `limit` utterances of `ds` (dataset `name`) by the model kind
/// asked, with the seconds of audio they cover.
fn simulate_scores(
    reg: &Registry,
    ds: &Dataset,
    name: &str,
    model: SimModel,
    states_per_phone: usize,
    bpe_size: usize,
    limit: Option<usize>,
) -> Result<(Vec<(String, ctx_core::scores::ScoreMatrix)>, f64)> {
    let knobs = reg
        .get(name)?
        .acoustic()
        .cloned()
        .expect("Dataset::load refuses lm-text entries");
    let utts = &ds.utterances[..limit.unwrap_or(usize::MAX).min(ds.utterances.len())];
    let pron = ctx_data::dataset::shipped_pronouncer(reg)?;
    let hybrid = HybridSim::new(knobs.clone(), states_per_phone)
        .with_training_text(ds.lm_text.iter().flat_map(|l| l.split_whitespace()));
    let ctc = match model {
        SimModel::Ctc => Some(
            CtcSim::new(
                crate::pipeline::ctc_knobs(reg, name, None)?,
                Bpe::train(&ds.lm_text, bpe_size)?,
            )
            .with_vocabulary(ds.lm_text.iter().flat_map(|l| l.split_whitespace())),
        ),
        SimModel::Hybrid => None,
    };
    let mut mats = Vec::with_capacity(utts.len());
    let mut audio = 0.0;
    for u in utts {
        let (m, _) = match &ctc {
            Some(c) => c.simulate(&u.id, &u.words, u.duration_s)?,
            None => hybrid.simulate(&u.id, &u.words, u.duration_s, &pron)?,
        };
        audio += u.duration_s;
        mats.push((u.id.clone(), m));
    }
    Ok((mats, audio))
}

/// Writes `mats` as a Kaldi archive (binary or text) or a folder of `.npy` files, never half.
fn write_scores(
    out: &std::path::Path,
    format: ScoreFormat,
    mats: &[(String, ctx_core::scores::ScoreMatrix)],
) -> Result<()> {
    match format {
        ScoreFormat::Ark | ScoreFormat::ArkText => {
            ctx_core::scores::write_ark(
                out,
                mats.iter().map(|(k, m)| (k.as_str(), m)),
                format == ScoreFormat::Ark,
            )?;
        }
        ScoreFormat::Npy => {
            // Written to a temporary folder renamed at the end: never a half folder.
            let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
            std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
            for (k, m) in mats {
                ctx_core::scores::write_npy(&tmp.join(format!("{k}.npy")), m)?;
            }
            if out.exists() {
                std::fs::remove_dir_all(out)
                    .with_context(|| format!("replacing {}", out.display()))?;
            }
            std::fs::rename(&tmp, out)
                .with_context(|| format!("moving scores to {}", out.display()))?;
        }
    }
    Ok(())
}

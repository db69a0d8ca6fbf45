//! `ctxbench data list|stats|prepare`: the datasets of datasets.toml.

use anyhow::{Context, Result};
use clap::Subcommand;
use ctx_data::dataset::{Dataset, Subset};
use ctx_data::registry::{DatasetSpec, Registry};
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
                let (kind, desc) = match spec {
                    DatasetSpec::Earnings { description, .. } => ("earnings", description),
                    DatasetSpec::AtcSim { description, .. } => ("atc-sim", description),
                    DatasetSpec::LmText { description, .. } => ("lm-text", description),
                };
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
            }
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
            println!(
                "wrote {} ({} utterances)",
                dir.display(),
                ds.utterances.len()
            );
        }
    }
    Ok(())
}

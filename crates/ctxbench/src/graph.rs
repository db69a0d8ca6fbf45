//! `ctxbench graph build`: the decoding graph of a dataset, with sizes and build times.

use crate::data::registry;
use anyhow::{anyhow, Context, Result};
use clap::Subcommand;
use ctx_data::dataset::Subset;
use ctx_data::graphs::{dataset_graph, DEFAULT_BPE_SIZE};
use ctx_graph::compile::GraphKind;
use ctx_graph::rustfst::fst_traits::ExpandedFst;
use std::path::PathBuf;

/// Graph commands.
#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Build (or load from the cache) a dataset's HCLG or TLG and print its size and build time.
    Build {
        /// Dataset name (datasets.toml).
        #[arg(long)]
        dataset: String,
        /// hclg, tlg-normal or tlg-compact.
        #[arg(long, default_value = "hclg")]
        kind: String,
        /// BPE pieces for TLG graphs.
        #[arg(long, default_value_t = DEFAULT_BPE_SIZE)]
        bpe_size: usize,
        /// The quick subset's graph (its LM may be pruned harder: `quick_prune` in datasets.toml).
        #[arg(long)]
        quick: bool,
        /// Graph cache folder.
        #[arg(long, default_value = "cache/graphs")]
        cache: PathBuf,
        /// The registry.
        #[arg(long)]
        registry: Option<PathBuf>,
    },
    /// Write a dataset's graph for other tools: HCLG.fst or TLG.fst (OpenFst vector binary),
    /// words.txt, tokens.txt (CTC) and a README.md stating the input-label convention.
    Export {
        /// Dataset name (datasets.toml).
        #[arg(long)]
        dataset: String,
        /// hclg, tlg-normal or tlg-compact.
        #[arg(long, default_value = "hclg")]
        kind: String,
        /// BPE pieces for TLG graphs.
        #[arg(long, default_value_t = DEFAULT_BPE_SIZE)]
        bpe_size: usize,
        /// HCLG only: transition-id input labels and a final.mdl, as Kaldi writes graphs.
        #[arg(long)]
        transition_ids: bool,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// The quick subset's graph (its LM may be pruned harder: `quick_prune` in datasets.toml).
        #[arg(long)]
        quick: bool,
        /// Graph cache folder.
        #[arg(long, default_value = "cache/graphs")]
        cache: PathBuf,
        /// The registry.
        #[arg(long)]
        registry: Option<PathBuf>,
    },
}

fn subset(quick: bool) -> Subset {
    if quick {
        Subset::Quick
    } else {
        Subset::Full
    }
}

/// Runs a graph command.
pub fn run_graph(cmd: &GraphCommand) -> Result<()> {
    match cmd {
        GraphCommand::Export {
            dataset,
            kind,
            bpe_size,
            transition_ids,
            out,
            quick,
            cache,
            registry: r,
        } => {
            let reg = registry(r)?;
            let k = GraphKind::parse(kind).ok_or_else(|| {
                anyhow!("unknown graph kind '{kind}' (hclg, tlg-normal, tlg-compact)")
            })?;
            if *transition_ids && k != GraphKind::Hclg {
                anyhow::bail!("--transition-ids is for HCLG graphs");
            }
            let rep = dataset_graph(&reg, dataset, k, *bpe_size, cache, subset(*quick))
                .with_context(|| format!("building the {kind} graph of {dataset}"))?;
            let mut g = rep.graph;
            let tm = if *transition_ids {
                Some(crate::export::to_transition_ids(&mut g)?)
            } else {
                None
            };
            let p = ctx_graph::external::export_graph(out, &g)?;
            if let Some(tm) = tm {
                tm.write(&out.join("final.mdl"), true)?;
                crate::export::note_transition_ids(out)?;
            }
            println!("{}", p.display());
        }
        GraphCommand::Build {
            dataset,
            kind,
            bpe_size,
            quick,
            cache,
            registry: r,
        } => {
            let reg = registry(r)?;
            let k = GraphKind::parse(kind).ok_or_else(|| {
                anyhow!("unknown graph kind '{kind}' (hclg, tlg-normal, tlg-compact)")
            })?;
            let rep = dataset_graph(&reg, dataset, k, *bpe_size, cache, subset(*quick))
                .with_context(|| format!("building the {kind} graph of {dataset}"))?;
            if !rep.skipped_words.is_empty() {
                eprintln!(
                    "warning: {} LM word(s) have no pronunciation and were left out with {} n-gram(s) (first: {})",
                    rep.skipped_words.len(),
                    rep.skipped_ngrams,
                    rep.skipped_words.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
                );
            }
            let g = &rep.graph;
            println!(
                "{:<24} {:>10} {:>10} {:>9}",
                "step", "states", "arcs", "seconds"
            );
            for s in &g.steps {
                println!(
                    "{:<24} {:>10} {:>10} {:>9.2}",
                    s.name, s.states, s.arcs, s.seconds
                );
            }
            println!(
                "{} of {dataset}: {} states, {} arcs, {} score columns; {} in {:.1} s (LM estimate {:.1} s)",
                g.kind.name(),
                g.fst.num_states(),
                ctx_graph::compile::num_arcs(&g.fst),
                g.num_columns,
                if rep.cached { "loaded from the cache" } else { "built" },
                rep.seconds,
                rep.lm_seconds
            );
        }
    }
    Ok(())
}

//! `ctxbench`: the command line of the contextual-biasing benchmark workspace.

use anyhow::Result;
use clap::{Parser, Subcommand};
use ctxbench::commands::{
    run_fidelity, run_merge, run_plot, run_regress, run_run, run_table, FidelityArgs, MergeArgs,
    RegressArgs, RenderArgs, RunArgs,
};
use ctxbench::data::{run_data, DataCommand};
use ctxbench::decode::{run_decode, DecodeArgs};
use ctxbench::export::{run_export, ExportArgs};
use ctxbench::graph::{run_graph, GraphCommand};
use ctxbench::lm::{run_lm, LmCommand};
use ctxbench::score::{run_score, run_score_fbai, Format, ScoreArgs};
use ctxbench::throughput::{run_throughput, ThroughputArgs};

#[derive(Parser)]
#[command(
    name = "ctxbench",
    version,
    about = "Benchmark harnesses for contextual biasing in ASR decoding"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score hypotheses against references: WER (S/D/I), NE-WER, U-WER, NE-A, per-class WER, P/R/F1.
    Score(ScoreArgs),
    /// Train or evaluate n-gram language models.
    #[command(subcommand)]
    Lm(LmCommand),
    /// List, describe and prepare the datasets of datasets.toml.
    #[command(subcommand)]
    Data(DataCommand),
    /// Build decoding graphs (HCLG, TLG) of the datasets.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Decode a dataset (simulated acoustics) or your own scores, graph and data dir
    /// (--scores/--graph/--words/--data), and score the baseline and the biasing methods.
    Decode(Box<DecodeArgs>),
    /// Write a dataset as files other tools read: graph (OpenFst), scores (ark/npy), Kaldi data
    /// dir, entities, lists, and a datasets.toml `files` entry that decodes them back.
    Export(ExportArgs),
    /// Run experiment files: expand the sweep grid, decode and score the missing points, write
    /// results/<id>/ (points.csv/.parquet, table.md/.tex, plots, run.json).
    Run(RunArgs),
    /// Join the points of sharded runs (`run --shard K/N`) and write the results.
    Merge(MergeArgs),
    /// Render an experiment's table (Markdown and LaTeX) from its points.csv.
    Table(RenderArgs),
    /// Render an experiment's plots (PNG and SVG) from its points.csv.
    Plot(RenderArgs),
    /// Rerun the regression experiments on the quick subsets and compare with results/baselines.
    Regress(RegressArgs),
    /// Each method's effect (row − baseline) beside the paper's, over every table: writes
    /// results/fidelity/ (README.md, effects.csv); `--check` fails when one lost the paper's sign.
    Fidelity(FidelityArgs),
    /// Decoder-only speed of a backend (cpu, cuda, shim) against the number of streams.
    Throughput(ThroughputArgs),
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Score(args) if args.format == Some(Format::Fbai) => {
            print!("{}", run_score_fbai(&args)?.render());
        }
        Command::Score(args) => {
            let report = run_score(&args)?;
            for w in &report.warnings {
                eprintln!("warning: {w}");
            }
            print!(
                "{}",
                report.render(args.per_utt || report.format == Format::Nlp)
            );
            if let Some(p) = &args.json {
                report.write_json(p)?;
                eprintln!("wrote {}", p.display());
            }
        }
        Command::Lm(cmd) => run_lm(&cmd)?,
        Command::Decode(args) => run_decode(&args)?,
        Command::Export(a) => {
            let p = run_export(&a)?;
            println!("{}", p.display());
        }
        Command::Data(cmd) => run_data(&cmd)?,
        Command::Graph(cmd) => run_graph(&cmd)?,
        Command::Run(a) => run_run(&a)?,
        Command::Merge(a) => run_merge(&a)?,
        Command::Table(a) => run_table(&a)?,
        Command::Plot(a) => run_plot(&a)?,
        Command::Regress(a) => run_regress(&a)?,
        Command::Fidelity(a) => run_fidelity(&a)?,
        Command::Throughput(a) => run_throughput(&a)?,
    }
    Ok(())
}

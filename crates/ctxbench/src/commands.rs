//! The experiment commands of the CLI: `run`, `merge`, `table`, `plot`, `regress`, and the
//! `results/README.md` index they keep up to date.

use crate::data::registry;
use crate::experiment::{self, Experiment, Overrides, Value};
use crate::methods::catalog;
use crate::regress;
use crate::results::{Points, Store};
use crate::run::{self, Plan, RunOptions};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Options shared by the experiment commands.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Results root.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry (default: datasets.toml found from the current folder).
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// Override a setting of every point (KEY=VALUE; repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Run on the quick subsets (`--set subset=quick`; results under results/quick/).
    #[arg(long)]
    pub quick: bool,
}

impl Common {
    fn overrides(&self) -> Result<Overrides> {
        let mut o = Overrides::parse(&self.set, catalog())?;
        if self.quick {
            let subset = crate::key!(crate::settings::Common, subset);
            o.0.retain(|(k, _)| k != subset);
            o.0.push((subset.into(), Value::Str("quick".into())));
        }
        Ok(o)
    }

    fn out(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            if self.quick {
                PathBuf::from("results/quick")
            } else {
                PathBuf::from("results")
            }
        })
    }
}

/// Arguments of `ctxbench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Experiment files.
    pub experiments: Vec<PathBuf>,
    /// Every experiment of --experiments-dir marked `reproduce = true`.
    #[arg(long)]
    pub reproduce: bool,
    /// The quick tour: every experiment marked `tour = true` (one or two tables per paper), on
    /// the quick subsets (implies --quick; `make reproduce-quick`).
    #[arg(long, conflicts_with = "reproduce")]
    pub tour: bool,
    /// Where experiment files live (for --reproduce, --tour and the index).
    #[arg(long, default_value = "experiments")]
    pub experiments_dir: PathBuf,
    /// Run only shard K of N (a deterministic slice of the grid; join with `ctxbench merge`).
    #[arg(long)]
    pub shard: Option<String>,
    /// Recompute points that already have a result.
    #[arg(long)]
    pub force: bool,
    /// Check the experiments (keys, types, datasets, lists) and list their points; decode nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run grids of more than 10,000 points (refused otherwise: most are a sweep typo).
    #[arg(long)]
    pub allow_large: bool,
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
}

/// Arguments of `ctxbench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Results roots of the shards (their `--out`); the points are copied into `--out`.
    #[arg(long = "from")]
    pub from: Vec<PathBuf>,
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
}

/// Arguments of `ctxbench table` and `ctxbench plot`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Results root.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Print the LaTeX table instead of the Markdown one (`table`).
    #[arg(long)]
    pub latex: bool,
}

/// Arguments of `ctxbench regress`.
#[derive(Debug, Args)]
pub struct RegressArgs {
    /// Experiment files (default: every one marked `regress = true`).
    pub experiments: Vec<PathBuf>,
    /// Where experiment files live.
    #[arg(long, default_value = "experiments")]
    pub experiments_dir: PathBuf,
    /// Rewrite the baselines from this run.
    #[arg(long)]
    pub update: bool,
    /// Baseline folder.
    #[arg(long, default_value = "results/baselines")]
    pub baselines: PathBuf,
    /// Results root of the regression run.
    #[arg(long, default_value = "results/regress")]
    pub out: PathBuf,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry.
    #[arg(long)]
    pub registry: Option<PathBuf>,
}

fn load_all(paths: &[PathBuf]) -> Result<Vec<Experiment>> {
    paths
        .iter()
        .map(|p| Experiment::load(p, catalog()))
        .collect()
}

fn selected(
    paths: &[PathBuf],
    dir: &Path,
    keep: impl Fn(&Experiment) -> bool,
) -> Result<Vec<Experiment>> {
    if !paths.is_empty() {
        return load_all(paths);
    }
    let all = load_all(&experiment::discover(dir)?)?;
    Ok(all.into_iter().filter(|e| keep(e)).collect())
}

/// Runs `ctxbench run`.
pub fn run_run(a: &RunArgs) -> Result<()> {
    if a.experiments.is_empty() && !a.reproduce && !a.tour {
        bail!(
            "name experiment files, --reproduce for every experiment marked reproduce = true, \
             or --tour for the quick tour"
        );
    }
    if a.tour && !a.experiments.is_empty() {
        bail!("--tour runs the experiments marked tour = true; name files without it");
    }
    let exps = selected(&a.experiments, &a.experiments_dir, |e| {
        if a.tour {
            e.tour
        } else {
            e.reproduce
        }
    })?;
    if exps.is_empty() {
        bail!("no experiment to run");
    }
    let reg = registry(&a.common.registry)?;
    let mut common = a.common.clone();
    common.quick |= a.tour;
    let common = &common;
    let over = common.overrides()?;
    let shard = a.shard.as_deref().map(run::parse_shard).transpose()?;
    for e in &exps {
        let n = e.grid_size(&over);
        if n > experiment::MAX_POINTS && !a.allow_large {
            bail!(
                "{}: the grid has {n} points (rows × sweep values), more than {}: a typo in a sweep? \
                 --allow-large runs it",
                e.path.display(),
                experiment::MAX_POINTS
            );
        }
    }
    // Every experiment is expanded and checked before anything decodes.
    let plans = exps
        .into_iter()
        .map(|e| Plan::new(&reg, e, &over))
        .collect::<Result<Vec<_>>>()?;
    if a.dry_run {
        for p in &plans {
            println!(
                "{}: {} points in {} decoding groups",
                p.exp.id,
                p.points.len(),
                p.groups.len()
            );
            for (pt, k) in p.points.iter().zip(&p.keys) {
                println!("  {k}  {} [{}]", pt.label(), pt.method);
            }
        }
        return Ok(());
    }
    let opts = RunOptions {
        out: common.out(),
        cache: common.cache.clone(),
        overrides: over,
        shard,
        force: a.force,
        progress: std::io::stderr().is_terminal(),
    };
    for plan in &plans {
        let rep = run::run_plan(&reg, plan, &opts)?;
        eprintln!(
            "{}: {} points run, {} reused, {} missing ({:.0} s)",
            plan.exp.id, rep.ran, rep.reused, rep.missing, rep.seconds
        );
        if rep.missing == 0 {
            let dir = run::finish(plan, &opts, &rep)?;
            eprintln!("wrote {}", dir.display());
        } else if shard.is_some() {
            eprintln!(
                "{}: shard done; `ctxbench merge {}` once every shard has finished",
                plan.exp.id,
                plan.exp.path.display()
            );
        }
    }
    // The index of every experiment's results is a convenience: the run's exit code reflects
    // the run (a working folder without experiments/, or a broken file there, is a warning).
    if !a.experiments_dir.is_dir() {
        eprintln!(
            "note: no {} folder here: {}/README.md (the results index) not updated",
            a.experiments_dir.display(),
            opts.out.display()
        );
    } else if let Err(e) = write_index(&opts.out, &a.experiments_dir) {
        eprintln!(
            "warning: {}/README.md (the results index) not updated: {e:#}",
            opts.out.display()
        );
    }
    Ok(())
}

/// Runs `ctxbench merge`.
pub fn run_merge(a: &MergeArgs) -> Result<()> {
    let exp = Experiment::load(&a.experiment, catalog())?;
    let reg = registry(&a.common.registry)?;
    let over = a.common.overrides()?;
    let out = a.common.out();
    let store = Store::new(&out, &exp.id);
    for f in &a.from {
        let n = store.absorb(&f.join(&exp.id))?;
        eprintln!("{}: {n} points from {}", exp.id, f.display());
    }
    let plan = Plan::new(&reg, exp, &over)?;
    let opts = RunOptions {
        out: out.clone(),
        cache: a.common.cache.clone(),
        overrides: over,
        shard: None,
        force: false,
        progress: false,
    };
    let rep = run::RunReport {
        reused: plan.points.len(),
        ..Default::default()
    };
    let dir = run::finish(&plan, &opts, &rep)?;
    eprintln!("wrote {}", dir.display());
    Ok(())
}

/// Runs `ctxbench table`.
pub fn run_table(a: &RenderArgs) -> Result<()> {
    let exp = Experiment::load(&a.experiment, catalog())?;
    let dir = a.out.join(&exp.id);
    let pts = Points::read(&dir)?;
    let md = crate::table::write_tables(&exp, &pts, &dir)?;
    if a.latex {
        print!("{}", std::fs::read_to_string(dir.join("table.tex"))?);
    } else {
        print!("{md}");
    }
    Ok(())
}

/// Runs `ctxbench plot`.
pub fn run_plot(a: &RenderArgs) -> Result<()> {
    let exp = Experiment::load(&a.experiment, catalog())?;
    let dir = a.out.join(&exp.id);
    let pts = Points::read(&dir)?;
    for p in crate::plot::write_plots(&exp, &pts, &dir)? {
        println!("{p}");
    }
    Ok(())
}

/// Runs `ctxbench regress`; an error when any figure differs from its baseline.
pub fn run_regress(a: &RegressArgs) -> Result<()> {
    let exps = selected(&a.experiments, &a.experiments_dir, |e| e.regress)?;
    if exps.is_empty() {
        bail!("no experiment is marked regress = true");
    }
    let reg = registry(&a.registry)?;
    let subset = crate::key!(crate::settings::Common, subset);
    let over = Overrides(vec![(subset.into(), Value::Str("quick".into()))]);
    let plans = exps
        .into_iter()
        .map(|e| Plan::new(&reg, e, &over))
        .collect::<Result<Vec<_>>>()?;
    let opts = RunOptions {
        out: a.out.clone(),
        cache: a.cache.clone(),
        overrides: over.clone(),
        shard: None,
        force: true,
        progress: std::io::stderr().is_terminal(),
    };
    let mut fails = Vec::new();
    for plan in &plans {
        let rep = run::run_plan(&reg, plan, &opts)?;
        let dir = run::finish(plan, &opts, &rep)?;
        let got = regress::measured(&plan.exp, &Points::read(&dir)?)?;
        let path = a.baselines.join(format!("{}.json", plan.exp.id));
        if a.update {
            regress::write_baseline(&path, &got)?;
            eprintln!("{}: wrote {}", plan.exp.id, path.display());
            continue;
        }
        let base = regress::read_baseline(&path)?;
        let f = regress::compare(&plan.exp, &got, &base);
        for r in &got.ratios {
            eprintln!("{}: speed ratio '{}' = {:.3}", plan.exp.id, r.name, r.value);
        }
        eprintln!(
            "{}: {} points, {}",
            plan.exp.id,
            got.points.len(),
            if f.is_empty() { "pass" } else { "FAIL" }
        );
        fails.extend(f);
    }
    if !fails.is_empty() {
        for f in &fails {
            eprintln!("regression: {f}");
        }
        bail!("{} regression(s)", fails.len());
    }
    Ok(())
}

/// Writes `<root>/README.md`: every experiment file, what it reproduces, and its outputs.
pub fn write_index(root: &Path, experiments_dir: &Path) -> Result<()> {
    let mut s = String::from(
        "# Results\n\nWritten by `ctxbench run` (`make reproduce`: full sets, `make reproduce-quick`:\nthe quick tour, on quick subsets under `results/quick/`). One folder per experiment (docs/design.md §8):\n`points.csv` / `points.parquet` (one row per point), `table.md` / `table.tex` (the paper's\nlayout, its figures beside ours), plots, and `run.json` (machine, code version, seconds).\n\n| experiment | what | in `make reproduce` | in the quick tour | results | seconds |\n|---|---|---|---|---|---|\n",
    );
    let paths = experiment::discover(experiments_dir)?;
    for p in paths {
        let e =
            Experiment::load(&p, catalog()).with_context(|| format!("indexing {}", p.display()))?;
        let dir = root.join(&e.id);
        let mut links = Vec::new();
        if dir.join("table.md").exists() {
            links.push(format!("[table]({}/table.md)", e.id));
            links.push(format!("[csv]({}/points.csv)", e.id));
            for pl in &e.plots {
                if dir.join(format!("plot-{}.png", pl.name)).exists() {
                    links.push(format!("[plot {}]({}/plot-{}.png)", pl.name, e.id, pl.name));
                }
            }
        }
        let secs = std::fs::read_to_string(dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["seconds"].as_f64())
            .map_or("-".into(), |x| format!("{x:.0}"));
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            e.id,
            e.title,
            if e.reproduce { "yes" } else { "no" },
            if e.tour { "yes" } else { "no" },
            if links.is_empty() {
                "not run".to_string()
            } else {
                links.join(" ")
            },
            secs
        ));
    }
    s.push_str("\n`seconds` is the wall time of the last run that computed points (0 when every point was\nreused). Rerun any table with `ctxbench run experiments/<id>.toml`; re-render it with\n`ctxbench table experiments/<id>.toml`.\n");
    std::fs::create_dir_all(root)?;
    ctx_core::io::write_atomic(&root.join("README.md"), |w| w.write_all(s.as_bytes()))?;
    Ok(())
}

/// Arguments of `ctxbench fidelity`.
#[derive(Debug, Args)]
pub struct FidelityArgs {
    /// Where experiment files live.
    #[arg(long, default_value = "experiments")]
    pub experiments_dir: PathBuf,
    /// Results root (the tables' points.csv are read from `<out>/<id>/`).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Write nothing; fail when an effect that has the paper's sign in the committed
    /// `<out>/fidelity/effects.csv` lost it in the tables' points now.
    #[arg(long)]
    pub check: bool,
}

/// Runs `ctxbench fidelity`: writes `<out>/fidelity/` (README.md, effects.csv), or checks it.
pub fn run_fidelity(a: &FidelityArgs) -> Result<()> {
    use crate::fidelity;
    let exps = load_all(&experiment::discover(&a.experiments_dir)?)?;
    let effects = fidelity::collect(&exps, &a.out)?;
    let dir = a.out.join("fidelity");
    let sim = fidelity::Summary::of(
        effects
            .iter()
            .filter(|e| !e.is_speed() && e.columns == fidelity::Columns::Simulated),
    );
    eprintln!(
        "fidelity: {} effects; simulated accuracy: {} compared, {} with the paper's sign, {} opposite, {} within x2",
        effects.len(),
        sim.n,
        sim.same,
        sim.opposite,
        sim.within_x2
    );
    if a.check && !dir.join("effects.csv").exists() {
        bail!(
            "{}: no fidelity report to check against (write it with `ctxbench fidelity`)",
            dir.join("effects.csv").display()
        );
    }
    let committed = if dir.join("effects.csv").exists() {
        fidelity::agreeing_keys(&dir)?
    } else {
        Vec::new()
    };
    let lost = fidelity::lost_agreement(&committed, &effects);
    for l in &lost {
        eprintln!("fidelity: {l}");
    }
    if a.check {
        if !lost.is_empty() {
            bail!(
                "{} effect(s) lost the paper's sign since results/fidelity was written (a change \
                 on purpose: rerun `ctxbench fidelity` and give the cause in the experiment's \
                 [[paper]] cause)",
                lost.len()
            );
        }
        eprintln!(
            "fidelity: pass ({} effects with the paper's sign kept it)",
            committed.len()
        );
        return Ok(());
    }
    let titles = exps
        .iter()
        .map(|e| (e.id.clone(), e.title.clone()))
        .collect();
    std::fs::create_dir_all(&dir)?;
    let md = fidelity::render(&effects, &titles);
    ctx_core::io::write_atomic(&dir.join("README.md"), |w| w.write_all(md.as_bytes()))?;
    let csv = fidelity::to_csv(&effects);
    ctx_core::io::write_atomic(&dir.join("effects.csv"), |w| w.write_all(csv.as_bytes()))?;
    eprintln!("wrote {}", dir.display());
    Ok(())
}

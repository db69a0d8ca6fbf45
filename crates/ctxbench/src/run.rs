//! `ctxbench run` and `ctxbench merge`: expand experiments into points, decode and score the
//! missing ones (resumable, shardable), write the results contract, tables and plots.
//!
//! Points that share everything decoding depends on (dataset, graph and its boosts, decoder
//! settings) form one *group*: the group is decoded once and each of its points scores its own
//! output (the 1-best or a lattice-biased 1-best). A point's RTFx counts the shared decoding
//! plus its own rescoring, as a run of that method alone would.

use crate::experiment::{Experiment, Overrides, Point};
use crate::methods::{family_of, GroupContext};
use crate::results::{self, PointRecord, Points, Store};
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use ctx_data::dataset::{Dataset, Subset};
use ctx_data::registry::Registry;
use ctx_graph::cache::CacheKey;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

pub use crate::version::CODE_VERSION;

/// Where and how points run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results root (`results/`).
    pub out: PathBuf,
    /// Graph cache folder.
    pub cache: PathBuf,
    /// `--set` overrides.
    pub overrides: Overrides,
    /// Only groups `i` with `i % n == k - 1` (`(k, n)`, 1-based).
    pub shard: Option<(usize, usize)>,
    /// Recompute points even when a result exists.
    pub force: bool,
    /// Show a progress bar.
    pub progress: bool,
}

/// Parses `K/N` (1 ≤ K ≤ N).
pub fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| anyhow!("--shard '{s}' is not K/N"))?;
    let k: usize = k
        .parse()
        .map_err(|_| anyhow!("--shard '{s}': K is not a number"))?;
    let n: usize = n
        .parse()
        .map_err(|_| anyhow!("--shard '{s}': N is not a number"))?;
    if n == 0 || k == 0 || k > n {
        bail!("--shard '{s}': needs 1 <= K <= N");
    }
    Ok((k, n))
}

/// An experiment ready to run: its points, their keys and groups.
pub struct Plan {
    /// The experiment.
    pub exp: Experiment,
    /// Every point of the grid, in grid order.
    pub points: Vec<Point>,
    /// The key of each point.
    pub keys: Vec<String>,
    /// The dataset version of each point.
    pub data_versions: Vec<String>,
    /// Groups of point indices sharing one decoding, in run order.
    pub groups: Vec<Vec<usize>>,
}

/// The version of a dataset: a hash of its registry entry and of everything loaded from it.
fn dataset_version(reg: &Registry, ds: &Dataset) -> Result<String> {
    let base = ds.name.trim_end_matches("-quick");
    let mut k = CacheKey::new();
    k.add("spec", format!("{:?}", reg.get(base)?).as_bytes());
    for u in &ds.utterances {
        k.add("id", u.id.as_bytes());
        k.add("words", u.words.join(" ").as_bytes());
        k.add("dur", &u.duration_s.to_le_bytes());
        k.add("ent", format!("{:?}", u.entities).as_bytes());
    }
    k.add("lists", format!("{:?}", ds.lists).as_bytes());
    k.add("global", format!("{:?}", ds.global_lists).as_bytes());
    k.add("doc-lists", format!("{:?}", ds.doc_lists).as_bytes());
    for l in &ds.lm_text {
        k.add("lm", l.as_bytes());
    }
    Ok(k.hex()[..16].to_string())
}

impl Plan {
    /// Expands and checks an experiment: every dataset is loaded and every list name, target
    /// list and static list is checked before anything decodes.
    pub fn new(reg: &Registry, exp: Experiment, over: &Overrides) -> Result<Self> {
        let points = exp.points(over)?;
        crate::table::check_cells(&exp, &points)?;
        let file = exp.path.display().to_string();
        let planned = PlannedPoints::new(reg, points, &file)?;
        Ok(Self {
            exp,
            points: planned.points,
            keys: planned.keys,
            data_versions: planned.data_versions,
            groups: planned.groups,
        })
    }
}

/// Points checked against their datasets, keyed and grouped: what [`Plan`] holds besides the
/// experiment, and what `ctxbench decode` runs.
pub struct PlannedPoints {
    /// The points, in order.
    pub points: Vec<Point>,
    /// The key of each point.
    pub keys: Vec<String>,
    /// The dataset version of each point.
    pub data_versions: Vec<String>,
    /// Groups of point indices sharing one decoding, in run order.
    pub groups: Vec<Vec<usize>>,
}

impl PlannedPoints {
    /// Loads every dataset the points name, checks every list name, target list and static
    /// list before anything decodes, then keys and groups the points; `file` names their source
    /// in messages.
    pub fn new(reg: &Registry, points: Vec<Point>, file: &str) -> Result<Self> {
        let mut versions: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut keys = Vec::with_capacity(points.len());
        let mut data_versions = Vec::with_capacity(points.len());
        for p in &points {
            let c = Common::read(&p.settings)?;
            let name = c.dataset().to_string();
            let sub = c.subset.clone();
            let what = format!("{file}: row '{}'", p.label());
            let dv = match versions.entry((name.clone(), sub)) {
                Entry::Occupied(e) => e.get().clone(),
                Entry::Vacant(e) => {
                    let ds = Dataset::load(reg, &name, c.subset())
                        .with_context(|| format!("{what}: dataset '{name}'"))?;
                    let full = match c.subset() {
                        Subset::Quick => Dataset::load(reg, &name, Subset::Full)?,
                        Subset::Full => ds.clone(),
                    };
                    check_lists(&ds, &full, &points, &name).with_context(|| what.clone())?;
                    e.insert(dataset_version(reg, &ds)?).clone()
                }
            };
            let mut k = CacheKey::new();
            k.add("code", CODE_VERSION.as_bytes());
            k.add("data", dv.as_bytes());
            data_versions.push(dv);
            k.add("method", p.method.to_string().as_bytes());
            for (sk, v) in &p.settings {
                let v = v.to_string();
                k.add(sk, v.as_bytes());
                // A phrase file's content is part of the point: a changed file is a new point.
                if let Some(path) = v.trim_matches('"').strip_prefix("file:") {
                    let bytes = std::fs::read(path)
                        .with_context(|| format!("{what}: {sk} '{v}': cannot read the file"))?;
                    k.add("file", &bytes);
                }
            }
            keys.push(k.hex());
        }
        // Groups: first appearance order, then stable-sorted by setup so a setup loads once.
        let mut order: Vec<String> = Vec::new();
        let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, p) in points.iter().enumerate() {
            let k = family_of(&p.method).decode_key(p);
            if !by_key.contains_key(&k) {
                order.push(k.clone());
            }
            by_key.entry(k).or_default().push(i);
        }
        let mut groups: Vec<Vec<usize>> = order.iter().map(|k| by_key[k].clone()).collect();
        groups.sort_by_key(|g| {
            let p = &points[g[0]];
            family_of(&p.method).setup_key(p)
        });
        Ok(Self {
            points,
            keys,
            data_versions,
            groups,
        })
    }
}

/// Checks the list names of every point on dataset `name` against the loaded data.
fn check_lists(ds: &Dataset, full: &Dataset, points: &[Point], name: &str) -> Result<()> {
    for p in points
        .iter()
        .filter(|p| Common::read(&p.settings).is_ok_and(|c| c.dataset() == name))
    {
        family_of(&p.method).check_lists(ds, full, p)?;
    }
    Ok(())
}

/// What [`run_plan`] did.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// Points computed now.
    pub ran: usize,
    /// Points found in the store.
    pub reused: usize,
    /// Points of other shards not present.
    pub missing: usize,
    /// Seconds spent.
    pub seconds: f64,
}

/// Runs the missing points of a plan (all, or this shard's groups) and stores each at once.
pub fn run_plan(reg: &Registry, plan: &Plan, opts: &RunOptions) -> Result<RunReport> {
    let t0 = Instant::now();
    let store = Store::new(&opts.out, &plan.exp.id);
    let mut todo: Vec<&Vec<usize>> = Vec::new();
    let mut report = RunReport::default();
    for (gi, g) in plan.groups.iter().enumerate() {
        if let Some((k, n)) = opts.shard {
            if gi % n != k - 1 {
                continue;
            }
        }
        // A group is decoded again when any of its points is missing; its stored points are
        // then counted as reused once, where the decode's records are stored below.
        let mut need = false;
        for &i in g {
            if opts.force || store.get(&plan.keys[i])?.is_none() {
                need = true;
            }
        }
        if need {
            todo.push(g);
        } else {
            report.reused += g.len();
        }
    }
    let total: usize = todo.iter().map(|g| g.len()).sum();
    let pb = if opts.progress {
        ProgressBar::new(total as u64)
    } else {
        ProgressBar::hidden()
    };
    pb.set_style(
        ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} points, ETA {eta} {msg}",
        )
        .unwrap(),
    );
    pb.set_prefix(plan.exp.id.clone());
    let mut setup = None;
    for g in todo {
        let label = plan.points[g[0]].label();
        pb.set_message(label.clone());
        let first = &plan.points[g[0]];
        let cx = GroupContext {
            reg,
            cache: &opts.cache,
            points: &plan.points,
            keys: &plan.keys,
            data_versions: &plan.data_versions,
            sink: None,
        };
        let recs = family_of(&first.method)
            .run_group(&cx, g, &mut setup)
            .with_context(|| format!("{}: point '{label}'", plan.exp.id))?;
        for r in recs {
            let keep = opts.force || store.get(&r.key)?.is_none();
            if keep {
                store.put(&r)?;
                report.ran += 1;
            } else {
                report.reused += 1;
            }
            // suspend, not println: a hidden bar (no terminal, e.g. CI logs) prints nothing.
            pb.suspend(|| {
                eprintln!(
                    "  {} | {}: WER {} NE-WER {} RTFx {}",
                    plan.exp.id,
                    r.label,
                    fmt1(r.measures.get("wer")),
                    fmt1(r.measures.get("ne_wer")),
                    fmt1(r.measures.get("rtfx")),
                )
            });
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    for k in &plan.keys {
        if store.get(k)?.is_none() {
            report.missing += 1;
        }
    }
    report.seconds = t0.elapsed().as_secs_f64();
    Ok(report)
}

fn fmt1(v: Option<&f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1}"))
}

/// Writes points.csv/.parquet, run.json, the tables and plots of a complete plan; errors
/// naming the missing points otherwise.
pub fn finish(plan: &Plan, opts: &RunOptions, report: &RunReport) -> Result<PathBuf> {
    let store = Store::new(&opts.out, &plan.exp.id);
    let mut recs = Vec::new();
    let mut missing = Vec::new();
    for (p, k) in plan.points.iter().zip(&plan.keys) {
        match store.get(k)? {
            Some(r) => recs.push(r),
            None => missing.push(p.label()),
        }
    }
    if !missing.is_empty() {
        bail!(
            "{}: {} of {} points have no result yet: {}",
            plan.exp.id,
            missing.len(),
            plan.points.len(),
            missing.join("; ")
        );
    }
    let rows: Vec<(&Point, &PointRecord)> = plan.points.iter().zip(&recs).collect();
    let df = results::frame(plan.exp.catalog, &plan.exp.id, &rows)?;
    results::write_frame(&store.dir, &df)?;
    let run = serde_json::json!({
        "experiment": plan.exp.id,
        "file": plan.exp.path.display().to_string(),
        "code_version": CODE_VERSION,
        "git_commit": git_commit(),
        "machine": machine(),
        "points": plan.points.len(),
        "ran": report.ran,
        "reused": report.reused,
        "seconds": report.seconds,
        "overrides": opts.overrides.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        "finished_unix": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    });
    // A run that computed nothing keeps the run.json of the run that did (its machine and
    // seconds describe the figures).
    let run_json = store.dir.join("run.json");
    if report.ran > 0 || !run_json.exists() {
        let text = serde_json::to_string_pretty(&run)?;
        ctx_core::io::write_atomic(&run_json, |w| w.write_all(text.as_bytes()))?;
    }
    let pts = Points::read(&store.dir)?;
    crate::table::write_tables(&plan.exp, &pts, &store.dir)?;
    crate::plot::write_plots(&plan.exp, &pts, &store.dir)?;
    Ok(store.dir)
}

/// The commit of the working tree, if git answers.
pub fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// CPU model, core count and memory of this machine (Linux /proc; empty elsewhere).
pub fn machine() -> serde_json::Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let mem_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| (kb / 1024.0 / 1024.0 * 10.0).round() / 10.0);
    serde_json::json!({
        "cpu": model,
        "cores": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory_gb": mem_gb,
        "os": std::env::consts::OS,
    })
}

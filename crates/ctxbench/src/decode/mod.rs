//! `ctxbench decode`: one point of a method family, from command-line flags, through the same
//! family code and results format as `ctxbench run`.
//!
//! The flags are parsed once into a [`DecodeRequest`] — the registry, one experiment point per
//! output (`--methods none,sequences`: the 1-best and its lattice-biased rescoring share one
//! decode), and where files go — checked before anything loads a graph. [`DecodeRequest::run`]
//! hands the points to their family's `run_group` (writing hypotheses, CTM, lattices and
//! running partials through an [`OutputSink`]) and prints and writes the records as
//! `points.csv` rows. Flags are named like the settings they set (`--arcs-list` =
//! `arcs_list`); `--method` and `--set KEY=VALUE` reach every family and setting.

mod args;
mod flags;
mod method;
mod report;
mod sink;

use crate::data::registry;
use crate::experiment::{Overrides, Point, Value};
use crate::methods::{catalog, family_of, GroupContext, OutputSink, SetupCache};
use crate::results::{self, PointRecord};
use crate::run::PlannedPoints;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Result};
pub use args::{DecodeArgs, FilesArgs, FILES_DATASET};
use ctx_data::registry::Registry;
pub use flags::SettingFlags;
use method::{resolve_backend, warn_word_boost, DecodeMethod, Lists};
use report::print_figures;
use serde_json::json;
use sink::DecodeFiles;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// `ctxbench decode` parsed once: the points it runs (one per output, sharing one decode), the
/// registry they read, and where its files go.
pub struct DecodeRequest {
    /// The registry (datasets.toml, `--registry`, or the command line's files as `files`).
    pub reg: Registry,
    /// One point per output, in `--methods` order.
    pub points: Vec<Point>,
    /// The output name of each point (`none`, `sequences`, ...): its file names.
    pub outputs: Vec<String>,
    /// The graph cache folder.
    pub cache: PathBuf,
    /// The experiment id of the CSV rows.
    pub experiment: String,
    files: DecodeFiles,
    points_out: Option<PathBuf>,
    json: Option<PathBuf>,
}

impl DecodeRequest {
    /// Parses the flags into points, each checked as an experiment row is (the family's value
    /// checks); their lists are checked against the dataset when the points are planned
    /// ([`DecodeRequest::run`]), before any graph is built.
    pub fn from_args(a: &DecodeArgs) -> Result<Self> {
        let (reg, dataset) = match a.files.registry()? {
            Some(r) => (r, FILES_DATASET.to_string()),
            None => (
                registry(&a.registry)?,
                a.dataset.clone().ok_or_else(|| {
                    anyhow!("--dataset NAME, or --scores with --graph, --words and --data")
                })?,
            ),
        };
        let is_files = matches!(
            reg.get(&dataset)?,
            ctx_data::registry::DatasetSpec::Files(_)
        );
        if let Some(c) = a.settings.conflicts.first() {
            bail!("{c}");
        }
        for (old, new) in &a.settings.deprecated {
            eprintln!("warning: --{old} is deprecated; use --{new}");
        }
        // Defaults, the flags, the command's own (dataset, subset, backend), then --set.
        let mut st = catalog().defaults();
        let flags: Vec<(String, Value)> = a
            .settings
            .given
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        st.extend(flags.iter().cloned());
        let mut common = Common::read(&st)?;
        common.dataset = Some(dataset.clone());
        if a.quick {
            common.subset = "quick".into();
        }
        if a.no_endpointing {
            common.endpointing = Some(false);
        }
        common.backend = resolve_backend(a.backend)?;
        common.write(&mut st);
        let sets = Overrides::parse(&a.set, catalog())?.0;
        st.extend(sets.iter().cloned());
        let lists = Lists::of(&st)?;
        let method = DecodeMethod::of(a, &lists)?;
        // A flag or --set the method does not read would be dropped from its point: refuse it,
        // as an experiment refuses a --set no row reads.
        for (k, v) in flags.iter().chain(&sets) {
            if !catalog().reads(&method.widest, k) {
                let flag = if flags.iter().any(|(f, _)| f == k) {
                    format!("--{} {v}", k.replace('_', "-"))
                } else {
                    format!("--set {k}={v}")
                };
                bail!("{flag}: method {} has no setting '{k}'", method.base);
            }
        }
        let common = Common::read(&st)?;
        let subset = common.subset();
        // Every list is checked on the dataset by the family (PlannedPoints) before any graph
        // is built; here the dataset says only which precision/recall/F1 list it defaults to,
        // written into the settings so the CSV says which list they were.
        let ds = ctx_data::dataset::Dataset::load(&reg, &dataset, subset)?;
        if common.targets.is_none() && ds.global_lists.contains_key(ctx_data::dataset::RARE_LIST) {
            Common {
                targets: Some(ctx_data::dataset::RARE_LIST.to_string()),
                ..common.clone()
            }
            .write(&mut st);
        }
        warn_word_boost(&st, &common, is_files)?;
        let outputs = method.outputs(a);
        let points = method.points(a, &st, &outputs, &lists)?;
        let files = DecodeFiles {
            hyp_dir: a.hyp_dir.clone(),
            lattice_out: a.lattice_out.clone(),
            partials_out: a.partials_out.clone(),
            outputs: outputs.clone(),
            acoustic_scale: common.acoustic_scale.map(|x| x as f32),
            lattices: Mutex::new(String::new()),
            partials: Mutex::new(String::new()),
            lattice_words: Mutex::new(None),
        };
        let fam = family_of(&points[0].method);
        if (files.lattice_out.is_some() || files.partials_out.is_some()) && !fam.writes_outputs() {
            bail!(
                "--lattice-out and --partials-out: the {} family makes no lattices or partial hypotheses",
                fam.name()
            );
        }
        if files.hyp_dir.is_some() && !fam.writes_text() {
            bail!(
                "--hyp-dir: the {} family writes no hypothesis files",
                fam.name()
            );
        }
        Ok(Self {
            reg,
            points,
            outputs,
            cache: a.cache.clone(),
            experiment: a.experiment.clone(),
            files,
            points_out: a.points_out.clone(),
            json: a.json.clone(),
        })
    }

    /// Decodes (each group of points once, through its family), then prints the figures and
    /// writes the files asked for.
    pub fn run(self) -> Result<Vec<PointRecord>> {
        let planned = PlannedPoints::new(&self.reg, self.points, "ctxbench decode")?;
        let sink: &dyn OutputSink = &self.files;
        let cx = GroupContext {
            reg: &self.reg,
            cache: &self.cache,
            points: &planned.points,
            keys: &planned.keys,
            data_versions: &planned.data_versions,
            sink: Some(sink),
        };
        let mut setup: SetupCache = None;
        let mut records: Vec<Option<PointRecord>> = vec![None; planned.points.len()];
        for g in &planned.groups {
            let recs = family_of(&planned.points[g[0]].method).run_group(&cx, g, &mut setup)?;
            for (&i, r) in g.iter().zip(recs) {
                records[i] = Some(r);
            }
        }
        let records: Vec<PointRecord> = records
            .into_iter()
            .map(|r| r.ok_or_else(|| anyhow!("a point of the decode has no record")))
            .collect::<Result<_>>()?;
        self.files.finish()?;
        let st = setup.as_ref().map(|(_, s)| s);
        let realism = match st {
            Some(s) => report::ctc_realism(s)?,
            None => None,
        };
        print_figures(
            &planned.points,
            &records,
            &self.outputs,
            st,
            realism.as_ref(),
        );
        if let Some(p) = &self.points_out {
            let rows: Vec<(&Point, &PointRecord)> = planned.points.iter().zip(&records).collect();
            let df = results::frame(catalog(), &self.experiment, &rows)?;
            results::write_csv(p, &df)?;
            eprintln!("wrote {}", p.display());
        }
        if let Some(p) = &self.json {
            let outputs: Vec<serde_json::Value> = planned
                .points
                .iter()
                .zip(&records)
                .zip(&self.outputs)
                .map(|((pt, r), name)| {
                    let mut o = serde_json::Map::new();
                    o.insert("output".into(), json!(name));
                    o.insert("row".into(), json!(pt.row));
                    o.insert("method".into(), json!(pt.method.to_string()));
                    for (k, v) in &r.measures {
                        o.insert(k.clone(), json!(v));
                    }
                    serde_json::Value::Object(o)
                })
                .collect();
            let first = &planned.points[0];
            let settings: BTreeMap<&String, String> = first
                .settings
                .iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect();
            let v = json!({
                "dataset": Common::read(&first.settings)?.dataset(),
                "method": first.method.to_string(),
                "backend": Common::read(&first.settings)?.backend.to_string(),
                "device": records[0].device,
                "settings": settings,
                "code_version": records[0].code_version,
                "outputs": outputs,
                "ctc_realism": realism.as_ref().map(|r| json!({
                    "blank_argmax_share": r.shape.blank_share(),
                    "mean_max_posterior": r.shape.mean_max_prob(),
                    "mean_entropy": r.shape.mean_entropy(),
                    "greedy_wer": r.greedy.all.rate(),
                    "greedy_ne_wer": r.greedy.ne.rate(),
                })),
            });
            let text = serde_json::to_string_pretty(&v)?;
            ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
            eprintln!("wrote {}", p.display());
        }
        Ok(records)
    }
}

/// Runs `ctxbench decode`.
pub fn run_decode(a: &DecodeArgs) -> Result<()> {
    DecodeRequest::from_args(a)?.run().map(|_| ())
}

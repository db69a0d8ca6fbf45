//! Experiment files (`experiments/*.toml`) and presets (`configs/*.toml`): parsing, checking and
//! expanding the sweep grid into points (docs/design.md §8).
//!
//! An experiment names fixed settings, rows (one per line of the paper's table: a label, a
//! method and the row's own settings) and a sweep grid; every row is crossed with the grid.
//! Settings resolve in this order, later wins: built-in defaults, presets (`include`, in order),
//! the experiment's `[settings]`, the row, the sweep values, then `--set` from the command line
//! (a `--set` of a swept setting replaces the sweep by that one value). Unknown keys, settings a
//! row's method lacks and values of the wrong type are errors naming the key and the file.

mod catalog;
mod point;

use crate::settings::Common;
pub use crate::settings::{SettingSpec, Settings, Type, Value};
use anyhow::{anyhow, bail, Context, Result};
pub use catalog::{Catalog, Component, FamilySpec};
pub use point::{Method, Point};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Measure columns of points.csv, in order (percentages, seconds, sizes).
pub const MEASURES: &[&str] = &[
    "wer",
    "ne_wer",
    "u_wer",
    "fbai_wer",
    "fbai_u_wer",
    "fbai_b_wer",
    "ne_acc",
    "precision",
    "recall",
    "f1",
    "kw_precision",
    "kw_recall",
    "kw_fscore",
    "audio_s",
    "decode_s",
    "rtfx",
    "peak_mem_mb",
    "utterances",
    "graph_states",
    "graph_arcs",
    "lattice_density",
    "oracle_wer",
    "endpoints",
    "words_c0",
    "words_c1_2",
    "words_c3_10",
    "words_c11_100",
    "words_c101",
    "err_c0",
    "err_c1_2",
    "err_c3_10",
    "err_c11_100",
    "err_c101",
    "context_s",
    "phrases_kept",
    "phrases_dropped",
    "boosted_arcs",
    "active_tokens",
    "boosted_words",
    "boost_oov",
    "latency_compute_ms",
    "latency_queue_ms",
    "latency_total_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "batch_mean",
    "repeats",
    "keywords_in_lm",
    "phrases_duplicate",
    "wl_ngrams",
    "wl_nodes",
    "wl_build_s",
    "latency_p90_ms",
    "graph_mb",
    "contexts",
    "switch_ms",
    "context_kb",
    "context_host_kb",
    "pool_mb",
    "rescore_s",
    "unbiased_contexts",
    "segments",
    "audio_h",
    "documents",
    "list_entries",
    "am_s",
    "rtfx_am",
    "context_words",
];

/// A table of paper figures: one published row, group (column block) and its measures.
/// (Unknown keys are caught by checking `values` against the measure names.)
#[derive(Debug, Clone, Deserialize)]
pub struct PaperRow {
    /// Our row label it sits beside.
    pub row: String,
    /// The paper's column block (e.g. its test set).
    #[serde(default)]
    pub group: String,
    /// Our section it belongs to, when two sections share the row label (empty: any).
    #[serde(default)]
    pub section: String,
    /// Why our effect of this row differs from the paper's (the fidelity report prints it
    /// beside the effect; a measured cause, not a wish).
    #[serde(default)]
    pub cause: Option<String>,
    /// Measures by column name (wer, ne_wer, ...).
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

/// One column block of a table: points whose `group_by` setting has `value`, labelled `label`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The setting value.
    pub value: String,
    /// The header label.
    pub label: String,
}

/// How `ctxbench table` lays a table out.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// The setting whose values make column blocks (e.g. `dataset`); none = one block.
    #[serde(default)]
    pub group_by: Option<String>,
    /// Block order and labels (default: order of appearance, value as label).
    #[serde(default)]
    pub groups: Vec<GroupSpec>,
    /// Measure columns in each block.
    #[serde(default = "default_measures")]
    pub measures: Vec<String>,
    /// `columns`: the paper's blocks after ours; `rows`: a *paper* row under each of ours (its
    /// groups must be labelled like ours).
    #[serde(default = "default_paper_layout")]
    pub paper_layout: String,
    /// Header of the row-label column (default `Row`).
    #[serde(default)]
    pub row_header: Option<String>,
    /// The row each row's effect is measured from in the fidelity report (row − baseline, in
    /// the same section; default: the first row of each section).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Whether the fidelity report compares this table's effects with the paper's (false for
    /// tables whose rows are not methods against a baseline: calibrations, dataset sizes).
    #[serde(default = "default_true")]
    pub effects: bool,
}

fn default_true() -> bool {
    true
}

fn default_measures() -> Vec<String> {
    vec!["wer".into(), "ne_wer".into()]
}
fn default_paper_layout() -> String {
    "columns".into()
}

impl Default for TableSpec {
    fn default() -> Self {
        Self {
            group_by: None,
            groups: Vec::new(),
            measures: default_measures(),
            paper_layout: default_paper_layout(),
            row_header: None,
            baseline: None,
            effects: true,
        }
    }
}

/// A plot: one line per (series value, y measure) over `x`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// File stem: `plot-<name>.png` / `.svg`.
    pub name: String,
    /// Title above the plot.
    #[serde(default)]
    pub title: String,
    /// The x column (a setting or a measure), or `measures`: the y measures side by side as
    /// the x axis, one line per series (a profile such as error rate by word frequency).
    pub x: String,
    /// The y measures.
    pub y: Vec<String>,
    /// The column whose values make separate lines (default `row`).
    #[serde(default = "default_series")]
    pub series: String,
    /// Axis labels (default: the column names).
    #[serde(default)]
    pub x_label: Option<String>,
    /// Y axis label.
    #[serde(default)]
    pub y_label: Option<String>,
}

fn default_series() -> String {
    "row".into()
}

/// A speed ratio the regression check enforces, measured within one run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioSpec {
    /// Name printed in the report.
    pub name: String,
    /// The measure (e.g. `rtfx`).
    pub measure: String,
    /// Selects the numerator point: `row` and/or settings → value.
    pub num: BTreeMap<String, String>,
    /// Selects the denominator point.
    pub den: BTreeMap<String, String>,
    /// The smallest acceptable ratio.
    pub min: f64,
}

/// A row of the experiment as written.
#[derive(Debug, Clone)]
pub struct RowSpec {
    /// The paper's row label.
    pub row: String,
    /// The paper's section label.
    pub section: String,
    /// The method.
    pub method: Method,
    /// The row's own settings.
    pub settings: Settings,
    /// The row's own sweep (crossed with the experiment's).
    pub sweep: Vec<(String, Vec<Value>)>,
}

/// A parsed, checked experiment file.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The families it was parsed with (its points are checked against them).
    pub catalog: &'static Catalog,
    /// The experiment id (results/<id>/).
    pub id: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Title of its table.
    pub title: String,
    /// The text printed under the title (what was run, how it compares to the paper).
    pub description: String,
    /// Part of `make reproduce`.
    pub reproduce: bool,
    /// Part of `ctxbench regress` (run on the quick subsets).
    pub regress: bool,
    /// Part of the quick tour (`ctxbench run --tour`, `make reproduce-quick`).
    pub tour: bool,
    /// `[quick] settings`: applied over the rows' settings when the points run on the quick
    /// subsets (`--quick`, `--tour`, `regress`), e.g. fewer timing repeats; keys no row's
    /// method reads are an error at load time, keys a row's method lacks skip that row.
    pub quick_settings: Settings,
    /// Fixed settings after presets (before rows, sweeps and `--set`).
    pub settings: Settings,
    /// The experiment-wide sweep grid.
    pub sweep: Vec<(String, Vec<Value>)>,
    /// The rows.
    pub rows: Vec<RowSpec>,
    /// Table layout.
    pub table: TableSpec,
    /// The paper's figures.
    pub paper: Vec<PaperRow>,
    /// Plots.
    pub plots: Vec<PlotSpec>,
    /// Speed ratios for the regression check.
    pub ratios: Vec<RatioSpec>,
}

/// The most points an experiment's grid may expand to without `--allow-large`.
pub const MAX_POINTS: usize = 10_000;

/// `--set key=value` overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides(pub Vec<(String, Value)>);

impl Overrides {
    /// Parses `key=value` strings, checking key and type.
    pub fn parse(items: &[String], cat: &Catalog) -> Result<Self> {
        let mut out = Vec::new();
        for it in items {
            let (k, v) = it
                .split_once('=')
                .ok_or_else(|| anyhow!("--set '{it}' is not KEY=VALUE"))?;
            let spec = cat.setting(k).ok_or_else(|| {
                anyhow!(
                    "--set '{it}': unknown setting '{k}' (known: {})",
                    cat.known()
                )
            })?;
            let v = Value::from_cli(v, spec.ty).map_err(|e| anyhow!("--set '{it}': {e}"))?;
            out.push((k.to_string(), v));
        }
        Ok(Overrides(out))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExperiment {
    id: Option<String>,
    title: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    reproduce: bool,
    #[serde(default)]
    regress: bool,
    #[serde(default)]
    tour: bool,
    #[serde(default)]
    quick: Option<RawQuick>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    settings: toml::Table,
    #[serde(default)]
    sweep: toml::Table,
    #[serde(default)]
    rows: Vec<toml::Table>,
    #[serde(default)]
    table: Option<TableSpec>,
    #[serde(default)]
    paper: Vec<PaperRow>,
    #[serde(default)]
    plot: Vec<PlotSpec>,
    #[serde(default)]
    regress_ratio: Vec<RatioSpec>,
}

/// An experiment's `[quick]` table: what changes on the quick subsets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuick {
    #[serde(default)]
    settings: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreset {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    settings: toml::Table,
}

/// Where presets live, given an experiment file (`<repo>/experiments/x.toml` →
/// `<repo>/configs/`).
fn configs_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let root = dir.parent().unwrap_or(Path::new("."));
    root.join("configs")
}

impl Experiment {
    /// Reads and checks an experiment file (presets from `configs/` beside `experiments/`).
    pub fn load(path: &Path, cat: &'static Catalog) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading experiment {}", path.display()))?;
        let raw: RawExperiment =
            toml::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let file = path.display().to_string();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("experiment")
            .to_string();
        let id = raw.id.unwrap_or(stem);
        if id.is_empty() || id.contains(['/', '\\', ' ']) {
            bail!("{file}: id '{id}' must be a plain folder name");
        }
        let mut settings = cat.defaults();
        for name in &raw.include {
            let p = configs_dir(path).join(format!("{name}.toml"));
            let t = std::fs::read_to_string(&p).with_context(|| {
                format!("{file}: include '{name}': reading preset {}", p.display())
            })?;
            let preset: RawPreset =
                toml::from_str(&t).map_err(|e| anyhow!("{}: {e}", p.display()))?;
            settings.extend(
                cat.read_settings(&preset.settings, &format!("{} [settings]", p.display()))?,
            );
        }
        settings.extend(cat.read_settings(&raw.settings, &format!("{file} [settings]"))?);
        let sweep = cat.read_sweep(&raw.sweep, &format!("{file} [sweep]"))?;
        let quick_settings = match &raw.quick {
            Some(q) => cat.read_settings(&q.settings, &format!("{file} [quick.settings]"))?,
            None => Settings::new(),
        };
        if quick_settings.contains_key(crate::key!(Common, subset)) {
            bail!("{file} [quick.settings]: 'subset' is what [quick] depends on; set it in [settings]");
        }
        if raw.rows.is_empty() {
            bail!("{file}: no [[rows]]");
        }
        let mut rows = Vec::new();
        for (i, t) in raw.rows.iter().enumerate() {
            let what = format!("{file} [[rows]] #{}", i + 1);
            let mut t = t.clone();
            let mut take_str = |k: &str| -> Result<Option<String>> {
                match t.remove(k) {
                    None => Ok(None),
                    Some(toml::Value::String(s)) => Ok(Some(s)),
                    Some(v) => bail!("{what}: '{k}' must be a string (got {v})"),
                }
            };
            let row =
                take_str("row")?.ok_or_else(|| anyhow!("{what}: missing 'row' (its label)"))?;
            let section = take_str("section")?.unwrap_or_default();
            let method = cat
                .method(&take_str("method")?.unwrap_or_else(|| "baseline".into()))
                .with_context(|| format!("{what} ('{row}')"))?;
            let row_sweep = match t.remove("sweep") {
                None => Vec::new(),
                Some(toml::Value::Table(s)) => cat.read_sweep(&s, &format!("{what} sweep"))?,
                Some(_) => bail!("{what}: 'sweep' must be a table"),
            };
            let own = cat.read_settings(&t, &what)?;
            let what = format!("{what} ('{row}', method {method})");
            for k in own.keys().chain(row_sweep.iter().map(|(k, _)| k)) {
                cat.check_method(&method, k, &what)?;
            }
            for (k, _) in &sweep {
                cat.check_method(
                    &method,
                    k,
                    &format!("{file} [sweep] for row '{row}' (method {method})"),
                )?;
            }
            check_row(&what, &row, &own, &row_sweep, &sweep, &file)?;
            rows.push(RowSpec {
                row,
                section,
                method,
                settings: own,
                sweep: row_sweep,
            });
        }
        for k in quick_settings.keys() {
            if !rows.iter().any(|r| cat.reads(&r.method, k)) {
                bail!("{file} [quick.settings]: no row's method reads '{k}'");
            }
        }
        let table = raw.table.unwrap_or_default();
        if !["columns", "rows"].contains(&table.paper_layout.as_str()) {
            bail!(
                "{file} [table]: paper_layout '{}' (columns or rows)",
                table.paper_layout
            );
        }
        if let Some(g) = &table.group_by {
            if cat.setting(g).is_none() {
                bail!("{file} [table]: group_by '{g}' is not a setting");
            }
        }
        for m in &table.measures {
            if !MEASURES.contains(&m.as_str()) {
                bail!(
                    "{file} [table]: unknown measure '{m}' (known: {})",
                    MEASURES.join(", ")
                );
            }
        }
        if let Some(b) = &table.baseline {
            if !rows.iter().any(|r| &r.row == b) {
                bail!("{file} [table]: baseline '{b}' is not a row of the experiment");
            }
        }
        for p in &raw.paper {
            if !rows.iter().any(|r| r.row == p.row) {
                bail!(
                    "{file} [[paper]]: row '{}' is not a row of the experiment",
                    p.row
                );
            }
            for k in p.values.keys() {
                if !MEASURES.contains(&k.as_str()) {
                    bail!("{file} [[paper]] row '{}': unknown measure '{k}'", p.row);
                }
            }
        }
        for p in &raw.plot {
            for c in std::iter::once(&p.x).chain(&p.y).chain([&p.series]) {
                let ok = MEASURES.contains(&c.as_str())
                    || cat.setting(c).is_some()
                    || ["row", "section", "method"].contains(&c.as_str())
                    || (c == &p.x && c == "measures"); // plot::MEASURES_AXIS (no import: plot imports this file)
                if !ok {
                    bail!("{file} [[plot]] '{}': unknown column '{c}'", p.name);
                }
            }
        }
        let exp = Experiment {
            catalog: cat,
            id,
            path: path.to_path_buf(),
            title: raw.title.unwrap_or_default(),
            description: raw.description.trim().to_string(),
            reproduce: raw.reproduce,
            regress: raw.regress,
            tour: raw.tour,
            quick_settings,
            settings,
            sweep,
            rows,
            table,
            paper: raw.paper,
            plots: raw.plot,
            ratios: raw.regress_ratio,
        };
        // Required settings and ratio selectors are checked on the expanded grid (a grid above
        // MAX_POINTS is refused by `run` unless --allow-large; it is not expanded here).
        if exp.grid_size(&Overrides::default()) > MAX_POINTS {
            return Ok(exp);
        }
        let points = exp.points(&Overrides::default())?;
        for r in &exp.ratios {
            for sel in [&r.num, &r.den] {
                let n = points.iter().filter(|p| selects(p, sel)).count();
                if n != 1 {
                    bail!(
                        "{file} [[regress_ratio]] '{}': selector {sel:?} matches {n} points (needs exactly 1)",
                        r.name
                    );
                }
            }
        }
        Ok(exp)
    }

    /// The sweep of row `r`: the experiment's and the row's (a row sweep of a key the
    /// experiment also sweeps replaces it), less the keys `--set` fixes.
    fn row_sweep(&self, r: &RowSpec, over: &Overrides) -> Vec<(String, Vec<Value>)> {
        let mut sweep: Vec<(String, Vec<Value>)> = self
            .sweep
            .iter()
            .chain(&r.sweep)
            .filter(|(k, _)| !over.0.iter().any(|(o, _)| o == k))
            .cloned()
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        sweep.reverse();
        sweep.retain(|(k, _)| seen.insert(k.clone()));
        sweep.reverse();
        sweep
    }

    /// How many points [`Self::points`] would expand to, counted without expanding (a sweep
    /// typo can ask for millions).
    pub fn grid_size(&self, over: &Overrides) -> usize {
        self.rows
            .iter()
            .map(|r| {
                self.row_sweep(r, over)
                    .iter()
                    .fold(1usize, |n, (_, v)| n.saturating_mul(v.len()))
            })
            .fold(0usize, usize::saturating_add)
    }

    /// Expands the grid: every row crossed with the experiment's and the row's sweeps, in file
    /// order (rows outer, sweep values inner, first swept key slowest). Two rows that expand
    /// to the same point (row, section, method and settings) are an error: the point would be
    /// run and written twice. On the quick subsets (`over` sets `subset = quick`) the
    /// experiment's `[quick.settings]` apply over each row's own settings, under sweeps and
    /// `--set`.
    pub fn points(&self, over: &Overrides) -> Result<Vec<Point>> {
        let file = self.path.display();
        let quick = over
            .0
            .iter()
            .any(|(k, v)| k == crate::key!(Common, subset) && v.as_str() == Some("quick"));
        let mut out: Vec<Point> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for r in &self.rows {
            let sweep = self.row_sweep(r, over);
            for (k, _) in &over.0 {
                self.catalog
                    .check_method(
                        &r.method,
                        k,
                        &format!("--set for row '{}' of {file}", r.row),
                    )
                    .or_else(|e| {
                        // A --set of a setting this row's method lacks is ignored for that row
                        // only if another row has it; otherwise it is a mistake.
                        if self.rows.iter().any(|o| self.catalog.reads(&o.method, k)) {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })?;
            }
            let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
            for (k, vals) in &sweep {
                let mut next = Vec::new();
                for c in &combos {
                    for v in vals {
                        let mut c = c.clone();
                        c.push((k.clone(), v.clone()));
                        next.push(c);
                    }
                }
                combos = next;
            }
            for c in combos {
                let mut s = self.settings.clone();
                s.extend(r.settings.clone());
                if quick {
                    s.extend(
                        self.quick_settings
                            .iter()
                            .filter(|(k, _)| self.catalog.reads(&r.method, k))
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
                }
                s.extend(c.iter().cloned());
                for (k, v) in &over.0 {
                    s.insert(k.clone(), v.clone());
                }
                let what = format!("{file}: row '{}' (method {})", r.row, r.method);
                if !seen.insert(format!("{}\0{}\0{}\0{:?}", r.row, r.section, r.method, s)) {
                    bail!(
                        "{what}: the same point twice (settings {}): two [[rows]] entries with one label \
                         and the same settings, or a value repeated in a sweep",
                        c.iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                out.push(self.catalog.point(
                    Point {
                        row: r.row.clone(),
                        section: r.section.clone(),
                        method: r.method.clone(),
                        settings: s,
                        swept: sweep.iter().map(|(k, _)| k.clone()).collect(),
                    },
                    &what,
                )?);
            }
        }
        Ok(out)
    }
}

/// Whether a point matches a selector (`row`, `section`, `method` or settings → value).
pub fn selects(p: &Point, sel: &BTreeMap<String, String>) -> bool {
    sel.iter().all(|(k, v)| match k.as_str() {
        "row" => &p.row == v,
        "section" => &p.section == v,
        "method" => &p.method.to_string() == v,
        _ => &p.get(k) == v,
    })
}

/// The experiment files of a folder, sorted by name.
pub fn discover(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    out.sort();
    Ok(out)
}

/// What a row may not do: a label holding '|' splits table.md's cell; a setting
/// the experiment's `[sweep]` also sweeps would be replaced by the sweep's values without a
/// word (a row's own sweep of the key is its way to differ).
fn check_row(
    what: &str,
    row: &str,
    own: &Settings,
    row_sweep: &[(String, Vec<Value>)],
    sweep: &[(String, Vec<Value>)],
    file: &str,
) -> Result<()> {
    if row.contains('|') {
        bail!("{what}: row label '{row}' holds '|', which splits a Markdown table cell");
    }
    for (k, _) in sweep {
        if own.contains_key(k) && !row_sweep.iter().any(|(rk, _)| rk == k) {
            bail!(
                "{what} sets '{k}', which {file} [sweep] also sweeps: the sweep's values would \
                 replace the row's; give the row its own sweep of '{k}' (a one-value list) or \
                 take '{k}' out of [sweep]"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

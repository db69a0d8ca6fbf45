//! Experiment files (`experiments/*.toml`) and presets (`configs/*.toml`): parsing, checking and
//! expanding the sweep grid into points (docs/design.md §8).
//!
//! An experiment names fixed settings, rows (one per line of the paper's table: a label, a
//! method and the row's own settings) and a sweep grid; every row is crossed with the grid.
//! Settings resolve in this order, later wins: built-in defaults, presets (`include`, in order),
//! the experiment's `[settings]`, the row, the sweep values, then `--set` from the command line
//! (a `--set` of a swept setting replaces the sweep by that one value). Unknown keys, settings a
//! row's method lacks and values of the wrong type are errors naming the key and the file.

use crate::settings::{Block, Common};
pub use crate::settings::{SettingSpec, Settings, Type, Value};
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A part of a method name (`g-boosting`, `word-boosting`, ...).
#[derive(Debug, Clone, Copy)]
pub struct Component {
    /// Its name in method strings and in the `component` of its settings.
    pub name: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// What the experiment parser knows of a method family: its names and settings, and how its
/// settings are checked. The runnable side (setup, decoding) extends it in `methods`; the
/// families are handed to the parser in a [`Catalog`], never imported from here.
pub trait FamilySpec: Sync {
    /// Its name (error messages, `ctxbench settings`).
    fn name(&self) -> &'static str;
    /// The component every method of the family names (`None`: the default family, whose
    /// method with no component is `baseline`).
    fn marker(&self) -> Option<&'static str>;
    /// Its components, in the canonical order of method names.
    fn components(&self) -> &'static [Component];
    /// Its settings (each owned by one of its components, the blocks of
    /// [`crate::settings_block!`] in order), in points.csv column order.
    fn settings(&self) -> Vec<SettingSpec>;
    /// Checks its settings' values (closed choices, ranges); `what` names the row and file.
    fn check(&self, s: &Settings, what: &str) -> Result<()>;
}

/// The method families an experiment may name, the default (`baseline`) first, and every
/// setting in points.csv column order (the common ones, then each family's).
///
/// Two families may share a component (`word-boosting`) and a setting (`word_boost`): a setting
/// declared by several families is one column, read by a method when it has any of its owners'
/// components; an owner may also be a family's name (every method of that family reads it).
pub struct Catalog {
    families: Vec<&'static dyn FamilySpec>,
    settings: Vec<SettingSpec>,
    /// Setting → the components (or family names) that read it.
    owners: BTreeMap<&'static str, Vec<&'static str>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.families.iter().map(|x| x.name()).collect();
        f.debug_struct("Catalog").field("families", &names).finish()
    }
}

impl Catalog {
    /// A catalog of these families (the first one runs `baseline`).
    pub fn new(families: Vec<&'static dyn FamilySpec>) -> Self {
        let mut settings: Vec<SettingSpec> = Vec::new();
        let mut owners: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
        let all = Common::SPECS
            .iter()
            .copied()
            .chain(families.iter().flat_map(|f| f.settings()));
        for sp in all {
            let o = owners.entry(sp.name).or_default();
            if o.is_empty() {
                settings.push(sp);
            }
            if !o.contains(&sp.component) {
                o.push(sp.component);
            }
        }
        Catalog {
            families,
            settings,
            owners,
        }
    }

    /// Whether method `m` reads setting `key` (it has one of the setting's owners).
    pub fn reads(&self, m: &Method, key: &str) -> bool {
        let fam = self.families[m.family].name();
        self.owners
            .get(key)
            .is_some_and(|o| o.iter().any(|c| m.has(c) || *c == fam))
    }

    /// The components (or family names) that read a setting, for messages.
    fn owners_of(&self, key: &str) -> String {
        self.owners.get(key).map_or(String::new(), |o| o.join(", "))
    }

    /// Every setting, in the column order of points.csv.
    pub fn settings(&self) -> &[SettingSpec] {
        &self.settings
    }

    /// The spec of a setting.
    pub fn setting(&self, name: &str) -> Option<&SettingSpec> {
        self.settings.iter().find(|s| s.name == name)
    }

    /// The family that runs a method.
    pub fn family(&self, m: &Method) -> &'static dyn FamilySpec {
        self.families[m.family]
    }

    /// A checked point: only the settings its method reads are kept (so the key of a point
    /// does not change with settings it ignores), the required ones must be there, and every
    /// value is checked (common ones here, the family's by the family); `what` names the place.
    /// Experiment grids and `ctxbench decode` make their points through it.
    pub fn point(&self, mut p: Point, what: &str) -> Result<Point> {
        p.settings.retain(|k, _| self.reads(&p.method, k));
        let fam = self.family(&p.method);
        for sp in self.settings.iter().filter(|sp| sp.required) {
            let needed = self.owners[sp.name].iter().any(|c| p.method.has(c));
            if needed && !p.settings.contains_key(sp.name) {
                bail!("{what}: '{}' is not set", sp.name);
            }
        }
        Common::read(&p.settings)
            .and_then(|c| c.check())
            .map_err(|e| anyhow!("{what}: {e}"))?;
        fam.check(&p.settings, what)?;
        Ok(p)
    }

    /// Built-in defaults (a setting without one is unset unless given, e.g. `noise`).
    pub fn defaults(&self) -> Settings {
        self.settings
            .iter()
            .filter_map(|sp| Some((sp.name.to_string(), (sp.default)()?)))
            .collect()
    }

    /// The known settings, for error messages.
    fn known(&self) -> String {
        self.settings
            .iter()
            .map(|s| s.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Parses a method name; the components are kept in their family's canonical order.
    pub fn method(&self, s: &str) -> Result<Method> {
        if s == "baseline" {
            return Ok(Method {
                family: 0,
                parts: Vec::new(),
            });
        }
        let fams = &self.families;
        let known = || {
            let mut names = vec!["baseline"];
            for f in fams {
                for c in f.components() {
                    if !names.contains(&c.name) {
                        names.push(c.name);
                    }
                }
            }
            names.join(", ")
        };
        let mut parts: Vec<&str> = Vec::new();
        for p in s.split('+') {
            let p = p.trim();
            if !fams
                .iter()
                .any(|f| f.components().iter().any(|c| c.name == p))
            {
                bail!(
                    "unknown method '{p}' ({}, or several of one family joined with '+')",
                    known()
                );
            }
            if parts.contains(&p) {
                bail!("method '{s}' names {p} twice");
            }
            parts.push(p);
        }
        // The families that have every part; of those, the ones whose marker is named.
        let has_all = |f: &&'static dyn FamilySpec| {
            parts
                .iter()
                .all(|p| f.components().iter().any(|c| c.name == *p))
        };
        let with_all: Vec<usize> = (0..fams.len()).filter(|&i| has_all(&fams[i])).collect();
        let marked: Vec<usize> = with_all
            .iter()
            .copied()
            .filter(|&i| fams[i].marker().is_none_or(|m| parts.contains(&m)))
            .collect();
        let family = match (marked.as_slice(), with_all.as_slice()) {
            ([f], _) => *f,
            ([], [f, ..]) => {
                let m = fams[*f]
                    .marker()
                    .expect("an unmarked family is always kept");
                bail!("method '{s}': components of the {m} family need '{m}' (write {m}+{s})");
            }
            ([], []) => {
                let of = |p: &str| {
                    fams.iter()
                        .find(|f| f.components().iter().any(|c| c.name == p))
                        .map_or("?", |f| f.name())
                };
                let names: Vec<&str> = parts.iter().map(|p| of(p)).collect();
                let two: Vec<&str> = names.iter().fold(Vec::new(), |mut v, n| {
                    if !v.contains(n) {
                        v.push(*n);
                    }
                    v
                });
                bail!(
                    "method '{s}' joins components of two families ({})",
                    two.join(" and ")
                );
            }
            (several, _) => {
                let names: Vec<&str> = several.iter().map(|&i| fams[i].name()).collect();
                bail!("method '{s}' is ambiguous: families {}", names.join(", "));
            }
        };
        let comps = fams[family].components();
        let mut parts: Vec<(usize, &'static str)> = parts
            .iter()
            .map(|p| {
                let ci = comps
                    .iter()
                    .position(|c| c.name == *p)
                    .expect("has all parts");
                (ci, comps[ci].name)
            })
            .collect();
        parts.sort();
        Ok(Method {
            family,
            parts: parts.into_iter().map(|(_, n)| n).collect(),
        })
    }

    /// Checks that `key` is a setting and that method `m` reads it.
    fn check_method(&self, m: &Method, key: &str, what: &str) -> Result<()> {
        let spec = self
            .setting(key)
            .ok_or_else(|| anyhow!("{what}: unknown setting '{key}' (known: {})", self.known()))?;
        if !self.reads(m, spec.name) {
            bail!(
                "{what}: method {m} has no setting '{key}' (it belongs to {})",
                self.owners_of(key)
            );
        }
        Ok(())
    }

    /// Reads settings from a TOML table, checking every key and type; `what` names the place.
    fn read_settings(&self, t: &toml::Table, what: &str) -> Result<Settings> {
        let mut s = Settings::new();
        for (k, v) in t {
            let spec = self.setting(k).ok_or_else(|| {
                anyhow!("{what}: unknown setting '{k}' (known: {})", self.known())
            })?;
            let v = Value::from_toml(v, spec.ty).map_err(|e| anyhow!("{what}: '{k}': {e}"))?;
            s.insert(k.clone(), v);
        }
        Ok(s)
    }

    /// Reads a sweep table (setting → array of values), checking every key and type.
    fn read_sweep(&self, t: &toml::Table, what: &str) -> Result<Vec<(String, Vec<Value>)>> {
        let mut out = Vec::new();
        for (k, v) in t {
            let spec = self.setting(k).ok_or_else(|| {
                anyhow!("{what}: unknown setting '{k}' (known: {})", self.known())
            })?;
            let arr = v
                .as_array()
                .ok_or_else(|| anyhow!("{what}: '{k}' must be an array of values"))?;
            if arr.is_empty() {
                bail!("{what}: '{k}' sweeps over no values");
            }
            let vals = arr
                .iter()
                .map(|x| Value::from_toml(x, spec.ty).map_err(|e| anyhow!("{what}: '{k}': {e}")))
                .collect::<Result<Vec<_>>>()?;
            out.push((k.clone(), vals));
        }
        Ok(out)
    }
}

/// A method: `baseline` (the default family with no component) or a `+`-joined set of one
/// family's components, e.g. `g-boosting+lattice-biasing` or `ctc-wfst+word-boosting`
/// (DESIGN notes §8); made by [`Catalog::method`], which knows the families.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Method {
    family: usize,
    parts: Vec<&'static str>,
}

impl Method {
    /// Whether the method includes a component (every method has `common`).
    pub fn has(&self, component: &str) -> bool {
        component == "common" || self.parts.contains(&component)
    }

    /// The position of its family in the [`Catalog`] it was parsed with.
    pub fn family_index(&self) -> usize {
        self.family
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parts.is_empty() {
            return f.write_str("baseline");
        }
        f.write_str(&self.parts.join("+"))
    }
}

/// Measure columns of points.csv, in order (percentages, seconds, sizes).
pub const MEASURES: &[&str] = &[
    "wer",
    "ne_wer",
    "u_wer",
    "ne_acc",
    "precision",
    "recall",
    "f1",
    "audio_s",
    "decode_s",
    "rtfx",
    "peak_mem_mb",
    "utterances",
    "graph_states",
    "graph_arcs",
    "lattice_density",
    "oracle_wer",
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

/// One point of the grid: a row at one combination of swept values.
#[derive(Debug, Clone)]
pub struct Point {
    /// The paper's row label.
    pub row: String,
    /// The paper's section label.
    pub section: String,
    /// The method.
    pub method: Method,
    /// Every setting the method reads, resolved.
    pub settings: Settings,
    /// The settings swept at this point (their names), for labels.
    pub swept: Vec<String>,
}

impl Point {
    /// A setting as a string (empty when unset).
    pub fn get(&self, key: &str) -> String {
        self.settings
            .get(key)
            .map_or(String::new(), |v| v.to_string())
    }

    /// A short label: row, then the swept settings.
    pub fn label(&self) -> String {
        let mut s = self.row.clone();
        for k in &self.swept {
            s.push_str(&format!(", {k}={}", self.get(k)));
        }
        s
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::catalog;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn err(path: &Path) -> String {
        format!("{:#}", Experiment::load(path, catalog()).unwrap_err())
    }

    #[test]
    fn settings_resolve_in_order_and_the_grid_expands_rows_outer() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "configs/p.toml",
            "[settings]\nbeam = 11\nthreads = 1\ndiscount = -1.0\n",
        );
        let p = write(
            d.path(),
            "experiments/x.toml",
            r#"
include = ["p"]
[settings]
dataset = "a"
threads = 3
[sweep]
beam = [9, 10]
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "sequences"
threads = 4
sweep = { discount = [-2, -3] }
"#,
        );
        let e = Experiment::load(&p, catalog()).unwrap();
        let pts = e.points(&Overrides::default()).unwrap();
        let labels: Vec<String> = pts.iter().map(|p| p.label()).collect();
        assert_eq!(
            labels,
            [
                "base, beam=9",
                "base, beam=10",
                "lat, beam=9, discount=-2",
                "lat, beam=9, discount=-3",
                "lat, beam=10, discount=-2",
                "lat, beam=10, discount=-3",
            ]
        );
        // preset < [settings] < row; the baseline drops the lattice setting it does not read.
        assert_eq!(pts[0].settings["threads"], Value::Int(3));
        assert_eq!(pts[2].settings["threads"], Value::Int(4));
        assert!(!pts[0].settings.contains_key("discount"));
        assert_eq!(pts[0].settings["lattice_beam"], Value::Float(6.0));
        // --set wins and replaces a sweep of the same key.
        let over = Overrides::parse(&["beam=13".into(), "discount=-5".into()], catalog()).unwrap();
        let pts = e.points(&over).unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[1].settings["beam"], Value::Float(13.0));
        assert_eq!(pts[1].settings["discount"], Value::Float(-5.0));
        assert_eq!(pts[1].label(), "lat");
    }

    #[test]
    fn quick_settings_apply_only_on_the_quick_subsets_and_only_where_read() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "experiments/q.toml",
            r#"
tour = true
[settings]
dataset = "a"
beam = 12
[quick.settings]
beam = 9
discount = -4.0
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "sequences"
discount = -1.0
sweep = { lattice_beam = [5, 6] }
"#,
        );
        let e = Experiment::load(&p, catalog()).unwrap();
        assert!(e.tour && !e.reproduce);
        // The full subsets: [quick] is not read.
        let full = e.points(&Overrides::default()).unwrap();
        assert_eq!(full[0].settings["beam"], Value::Float(12.0));
        assert_eq!(full[1].settings["discount"], Value::Float(-1.0));
        // The quick subsets: over [settings] and the row's own settings; a row whose method
        // lacks the key (the baseline reads no discount) is left without it; sweeps still win.
        let quick = Overrides(vec![("subset".into(), Value::Str("quick".into()))]);
        let pts = e.points(&quick).unwrap();
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[0].settings["beam"], Value::Float(9.0));
        assert!(!pts[0].settings.contains_key("discount"));
        assert_eq!(pts[1].settings["discount"], Value::Float(-4.0));
        assert_eq!(pts[2].settings["lattice_beam"], Value::Float(6.0));
        // --set wins over [quick].
        let mut over = Overrides::parse(&["beam=14".into()], catalog()).unwrap();
        over.0.extend(quick.0);
        assert_eq!(
            e.points(&over).unwrap()[0].settings["beam"],
            Value::Float(14.0)
        );
        // A key no row reads, the subset itself, or a misspelt key: refused, naming the file.
        for (i, (q, needle)) in [
            (
                "gboost_discount = -1.0",
                "no row's method reads 'gboost_discount'",
            ),
            ("subset = \"full\"", "'subset' is what [quick] depends on"),
            ("beem = 1", "unknown setting 'beem'"),
        ]
        .iter()
        .enumerate()
        {
            let p = write(
                d.path(),
                &format!("experiments/bad{i}.toml"),
                &format!(
                    "[settings]\ndataset = \"a\"\n[quick.settings]\n{q}\n[[rows]]\nrow = \"a\"\n"
                ),
            );
            let e = err(&p);
            assert!(
                e.contains(needle) && e.contains(&format!("bad{i}.toml")),
                "{e}"
            );
        }
    }

    #[test]
    fn bad_files_name_the_key_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        let cases = [
            ("[settings]\nbeem = 3\n[[rows]]\nrow = \"a\"\n", "unknown setting 'beem'"),
            ("sweeps = 1\n[[rows]]\nrow = \"a\"\n", "unknown field `sweeps`"),
            ("[settings]\nbeam = \"wide\"\n[[rows]]\nrow = \"a\"\n", "'beam': expected float"),
            (
                "[settings]\ndataset = \"a\"\n[sweep]\ngboost_discount = [-1, -2]\n[[rows]]\nrow = \"a\"\n",
                "method baseline has no setting 'gboost_discount'",
            ),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"lattice-biasing\"\n",
                "'bias_list' is not set",
            ),
            ("[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boost\"\n", "unknown method 'g-boost'"),
            ("include = [\"nope\"]\n[[rows]]\nrow = \"a\"\n", "include 'nope'"),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"sequences\"\ngboost_scope = \"utterance\"\n",
                "gboost_scope 'utterance' needs gboost_mode 'on-the-fly'",
            ),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"sequences\"\ngboost_mode = \"lazy\"\n",
                "gboost_mode 'lazy' (static, on-the-fly or on-the-fly-lm)",
            ),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"rare\"\ngboost_mode = \"on-the-fly\"\ngboost_scope = \"utterance\"\n",
                "gboost_list 'rare' per utterance",
            ),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\n[[paper]]\nrow = \"b\"\nwer = 1\n",
                "row 'b' is not a row",
            ),
            (
                "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\n[[paper]]\nrow = \"a\"\nwerr = 1\n",
                "unknown measure 'werr'",
            ),
        ];
        for (i, (text, needle)) in cases.iter().enumerate() {
            let p = write(d.path(), &format!("experiments/e{i}.toml"), text);
            let e = err(&p);
            assert!(e.contains(needle), "case {i}: expected '{needle}' in: {e}");
            assert!(
                e.contains(&format!("e{i}.toml")),
                "case {i}: no file in: {e}"
            );
        }
        assert!(format!(
            "{:#}",
            Overrides::parse(&["beam".into()], catalog()).unwrap_err()
        )
        .contains("KEY=VALUE"));
        let e = Overrides::parse(&["bem=3".into()], catalog()).unwrap_err();
        assert!(format!("{e:#}").contains("unknown setting 'bem'"));
        let e = Overrides::parse(&["threads=-1".into()], catalog()).unwrap_err();
        assert!(format!("{e:#}").contains("non-negative"));
    }

    #[test]
    fn methods_parse_in_canonical_order() {
        let m = catalog().method("lattice-biasing+g-boosting").unwrap();
        assert_eq!(m.to_string(), "g-boosting+lattice-biasing");
        assert!(m.has("lattice-biasing") && !m.has("hclg-boosting"));
        assert!(catalog().method("lattice-biasing+lattice-biasing").is_err());
        assert_eq!(
            catalog().method("baseline").unwrap().to_string(),
            "baseline"
        );
        let c = catalog().method("word-boosting+ctc-wfst").unwrap();
        assert_eq!(c.to_string(), "ctc-wfst+word-boosting");
        assert_eq!(catalog().family(&c).name(), "ctc-wfst");
        assert_eq!(catalog().family(&m).name(), "wfst");
        // A component two families share goes to the one whose marker is named, or to the
        // unmarked default family.
        let w = catalog().method("word-boosting").unwrap();
        assert_eq!(catalog().family(&w).name(), "wfst");
        assert!(catalog().reads(&w, "word_boost") && catalog().reads(&w, "blank_penalty"));
        assert!(catalog().reads(&c, "word_boost") && catalog().reads(&c, "blank_penalty"));
        assert!(!catalog().reads(&w, "phrase_boost") && !catalog().reads(&m, "word_boost"));
        let e = catalog().method("phrase-boosting").unwrap_err().to_string();
        assert!(e.contains("write ctc-wfst+phrase-boosting"), "{e}");
        let e = catalog()
            .method("ctc-wfst+lattice-biasing")
            .unwrap_err()
            .to_string();
        assert!(e.contains("two families"), "{e}");
    }

    #[test]
    fn shipped_experiments_and_presets_load() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"));
        let files = discover(dir).unwrap();
        assert!(files.len() >= 5, "{files:?}");
        for f in files {
            let e = Experiment::load(&f, catalog()).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(!e.points(&Overrides::default()).unwrap().is_empty());
        }
    }
}

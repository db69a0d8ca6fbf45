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

mod flags;
mod report;

use crate::data::registry;
use crate::experiment::{Method, Overrides, Point, Settings, Value};
use crate::methods::components::arc_boost::ArcBoost;
use crate::methods::components::gboost::GBoost;
use crate::methods::components::hclg_boost::HclgBoost;
use crate::methods::components::lattice_bias::LatticeBias;
use crate::methods::components::open_vocab::OpenVocab;
use crate::methods::components::word_boost::WordBoost;
use crate::methods::{catalog, family_of, GroupContext, OutputSink, SetupCache};
use crate::pipeline::{DecodeRun, ListKind, Output, Setup};
use crate::results::{self, PointRecord};
use crate::run::PlannedPoints;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use ctx_data::registry::Registry;
pub use flags::SettingFlags;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// Arguments of `ctxbench decode`: what to decode and where its files go; every setting of
/// every family is a flag too ([`SettingFlags`]: `--beam`, `--gboost-list`, `--lm-alpha`, ...).
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Dataset name (datasets.toml, or the --registry file; a `kind = "files"` entry decodes
    /// your own model outputs).
    #[arg(long, required_unless_present = "scores")]
    pub dataset: Option<String>,
    /// Your own inputs, without a registry entry (see README "Bring your own model").
    #[command(flatten)]
    pub files: FilesArgs,
    /// Decode the quick subset (`--subset quick`).
    #[arg(long)]
    pub quick: bool,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry.
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// Decode each utterance as one segment (no endpoint rules; `--endpointing false`).
    #[arg(long)]
    pub no_endpointing: bool,
    /// Backend: cpu (the reference), cuda (a GPU; an error without one), auto (a GPU when one
    /// answers, else the CPU) or shim (the CUDA kernels run on the CPU: checks, not speed).
    #[arg(long, default_value = "cpu")]
    pub backend: ctx_cuda::Backend,
    /// Outputs to score: none, unigrams, sequences, gt, list:NAME (lattice biasing with that
    /// list; NAME a global list of the dataset such as `rare` or `oracle`). Default:
    /// none,sequences for methods that can add lattice biasing, else none.
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// The method (a family's components '+'-joined, as in experiment files, e.g.
    /// `ctc-wfst+phrase-boosting`, `hclg-boost+arc-boosting`, `e2e`); the biasing flags
    /// (`--gboost-list`, `--word-boost`, ...) add their components to it. Default: the WFST
    /// family.
    #[arg(long)]
    pub method: Option<String>,
    /// Any setting of the method, as in experiment files (`--set model=rnnt`); wins over the
    /// flags.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Row label of an output in the CSV, as OUTPUT=LABEL (repeatable; default: 000 Table 1's,
    /// and for a 1-best biased during the search the biasing it had).
    #[arg(long = "row")]
    pub rows: Vec<String>,
    /// Write each output's hypotheses as a Kaldi `text` file `<dir>/<output>.txt` and a CTM
    /// with word times `<dir>/<output>.ctm`.
    #[arg(long)]
    pub hyp_dir: Option<PathBuf>,
    /// Write the decoded word lattices (before any lattice biasing) here as a Kaldi text
    /// archive of CompactLattices: word ids of words.txt, graph and unscaled acoustic costs.
    /// With --open-vocab, the words contexts wrote have ids after words.txt's, and their table
    /// (words.txt, then those) goes to `<file>.words.txt` beside it.
    #[arg(long)]
    pub lattice_out: Option<PathBuf>,
    /// Write the running hypotheses of the search here, a line per change: `utt<TAB>seconds
    /// decoded<TAB>partial<TAB>words` after each chunk (finished segments' words, then the open
    /// segment's partial), and `utt<TAB>seconds<TAB>final<TAB>words` (the 1-best).
    #[arg(long)]
    pub partials_out: Option<PathBuf>,
    /// Write the figures as a results-contract CSV (docs/design.md §8) here.
    #[arg(long)]
    pub points_out: Option<PathBuf>,
    /// Experiment id for the CSV rows.
    #[arg(long, default_value = "adhoc")]
    pub experiment: String,
    /// Section label for the CSV rows.
    #[arg(long, default_value = "Online decoding on CPU")]
    pub section: String,
    /// Write the figures as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Every setting of every family as a flag (last: flags the command has are its own).
    #[command(flatten)]
    pub settings: SettingFlags,
}

/// `ctxbench decode --scores ... --graph ... --words ... --data ...`: a `files` dataset given on
/// the command line (the fields of a `kind = "files"` registry entry).
#[derive(Debug, Args, Default)]
pub struct FilesArgs {
    /// Scores: a Kaldi .ark (text or binary), an .scp, or a folder of <utt>.npy.
    #[arg(long, requires_all = ["graph", "words", "data"], conflicts_with = "dataset")]
    pub scores: Option<PathBuf>,
    /// The decoding graph (OpenFst binary HCLG or TLG, vector or const).
    #[arg(long, requires = "scores")]
    pub graph: Option<PathBuf>,
    /// The graph's words.txt.
    #[arg(long, requires = "scores")]
    pub words: Option<PathBuf>,
    /// A Kaldi data directory (text; utt2dur, segments or wav.scp).
    #[arg(long, requires = "scores")]
    pub data: Option<PathBuf>,
    /// hybrid (pdf log-likelihoods, HCLG) or ctc (token log-probs, TLG).
    #[arg(long, default_value = "hybrid", requires = "scores")]
    pub model: String,
    /// final.mdl whose transition model maps the HCLG's transition-ids to pdf-ids.
    #[arg(long, requires = "scores")]
    pub transition_model: Option<PathBuf>,
    /// A `transition-id pdf-id` text map (instead of --transition-model).
    #[arg(long, requires = "scores")]
    pub pdf_map: Option<PathBuf>,
    /// A `graph-label score-column` text map (e.g. a TLG with its own token numbering).
    #[arg(long, requires = "scores")]
    pub label_map: Option<PathBuf>,
    /// CTC: tokens.txt of the graph (names the blank).
    #[arg(long, requires = "scores")]
    pub tokens: Option<PathBuf>,
    /// CTC: the blank's score column.
    #[arg(long, requires = "scores")]
    pub blank: Option<u32>,
    /// Seconds per score row (default 0.01 hybrid, 0.04 CTC; 0.03 for chain models).
    #[arg(long, requires = "scores")]
    pub frame_shift: Option<f64>,
    /// Score columns that are silence (hybrid), for endpointing; comma-separated.
    #[arg(long, value_delimiter = ',', requires = "scores")]
    pub silence_columns: Vec<u32>,
    /// Hybrid without --transition-model: the model's output width when it is wider than the
    /// graph's largest input label (else scores must have exactly that many columns).
    #[arg(long, requires = "scores")]
    pub score_columns: Option<usize>,
    /// Per-utterance entities (`utt<TAB>[CLASS] words|...`).
    #[arg(long, requires = "scores")]
    pub entities: Option<PathBuf>,
    /// Whether insertions inside an entity count against it: `inside` (the default, as `score`
    /// counts a Kaldi-format reference and the exported registries say) or `never` (fstalign's
    /// rule for Earnings). One definition with `score` and `run`.
    #[arg(long, requires = "entities")]
    pub ne_insertions: Option<crate::score::NeInsArg>,
    /// One biasing list for every utterance (a phrase per line); also `list:global`.
    #[arg(long, requires = "scores")]
    pub bias_list: Option<PathBuf>,
    /// Per-utterance biasing lists (`utt<TAB>phrase|phrase|...`).
    #[arg(long, requires = "scores", conflicts_with = "bias_list")]
    pub bias_utt: Option<PathBuf>,
    /// Per-document biasing lists: a folder of <recording>.txt (recordings from `segments`).
    #[arg(long, requires = "scores")]
    pub bias_docs: Option<PathBuf>,
    /// The ARPA LM of the graph's G (only for --gboost-mode on-the-fly-lm).
    #[arg(long, requires = "scores")]
    pub lm: Option<PathBuf>,
    /// Refuse utterances of `text` that have no scores (default: report and leave them out).
    #[arg(long, requires = "scores")]
    pub strict: bool,
}

impl FilesArgs {
    /// A one-entry registry named `files` for these inputs (paths relative to the current folder).
    pub fn registry(&self) -> Result<Option<ctx_data::registry::Registry>> {
        let Some(scores) = &self.scores else {
            return Ok(None);
        };
        let s = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let model = match self.model.as_str() {
            "hybrid" => ctx_data::registry::ModelKind::Hybrid,
            "ctc" => ctx_data::registry::ModelKind::Ctc,
            m => bail!("--model '{m}' (hybrid or ctc)"),
        };
        let spec = ctx_data::registry::FilesSpec {
            model,
            graph: s(&self.graph).unwrap_or_default(),
            words: s(&self.words).unwrap_or_default(),
            scores: scores.display().to_string(),
            data: s(&self.data).unwrap_or_default(),
            transition_model: s(&self.transition_model),
            pdf_map: s(&self.pdf_map),
            label_map: s(&self.label_map),
            tokens: s(&self.tokens),
            blank: self.blank,
            frame_shift_s: self.frame_shift,
            acoustic_scale: None,
            silence_columns: self.silence_columns.clone(),
            score_columns: self.score_columns,
            entities: s(&self.entities),
            entity_classes: Vec::new(),
            ne_insertions_inside: !matches!(
                self.ne_insertions,
                Some(crate::score::NeInsArg::Never)
            ),
            bias_list: s(&self.bias_list),
            bias_utt: s(&self.bias_utt),
            bias_docs: s(&self.bias_docs),
            lists: Default::default(),
            lm: s(&self.lm),
            strict: self.strict,
            licence: String::new(),
            description: "files given on the command line".into(),
        };
        let mut datasets = std::collections::BTreeMap::new();
        datasets.insert(
            FILES_DATASET.to_string(),
            ctx_data::registry::DatasetSpec::Files(Box::new(spec)),
        );
        Ok(Some(ctx_data::registry::Registry {
            root: PathBuf::from("."),
            path: PathBuf::from("(command line)"),
            datasets,
        }))
    }
}

/// The dataset name of command-line files.
pub const FILES_DATASET: &str = "files";

/// An output's row label when `--row` names none: 000 Table 1's row of its lattice-biasing list
/// (or "No biasing"); a 1-best biased during the search says how, arc boosting with 000's
/// "partial hypotheses" row of its list.
fn default_row(output: &str, l: &Lists) -> String {
    let table1 = report::table1_row;
    if output != "none" {
        return table1(output).to_string();
    }
    let mut parts = Vec::new();
    if let Some(k) = &l.arcs {
        parts.push(match table1(k) {
            "other" => format!("Arc-boosted {k} (partial hypotheses)"),
            r => r.to_string(),
        });
    }
    for (list, how) in [
        (&l.open, "Open-vocabulary context:"),
        (&l.words, "Word-boosted"),
        (&l.gboost, "G-boosted"),
        (&l.hclg, "HCLG-boosted"),
    ] {
        if let Some(k) = list {
            parts.push(format!("{how} {k}"));
        }
    }
    if parts.is_empty() {
        table1(output).to_string()
    } else {
        parts.join(" + ")
    }
}

/// The lists the in-search biasing settings name: each adds its component to the method.
#[derive(Debug, Clone, Default)]
struct Lists {
    gboost: Option<String>,
    hclg: Option<String>,
    arcs: Option<String>,
    words: Option<String>,
    open: Option<String>,
}

impl Lists {
    /// The lists of a decode's settings; a G-boosting mode or scope without a list (which
    /// would be dropped with its component) is refused.
    fn of(st: &Settings) -> Result<Self> {
        let g = GBoost::read(st)?;
        if g.gboost_list.is_none() && (g.on_the_fly() || g.per_utterance()) {
            bail!(
                "--gboost-mode {} --gboost-scope {} needs a --gboost-list list",
                g.gboost_mode,
                g.gboost_scope
            );
        }
        Ok(Self {
            gboost: g.gboost_list,
            hclg: HclgBoost::read(st)?.hclg_list,
            arcs: ArcBoost::read(st)?.arcs_list,
            words: WordBoost::read(st)?.word_boost,
            open: OpenVocab::read(st)?.open_vocab,
        })
    }
}

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
            common.endpointing = false;
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
        if files.any() && !fam.writes_outputs() {
            bail!(
                "--hyp-dir, --lattice-out and --partials-out: the {} family writes no hypothesis files",
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
            let mut df = results::frame(catalog(), &self.experiment, &rows)?;
            results::write_csv(p, &mut df)?;
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

/// The backend a decode names, a GPU checked before any data is loaded; `auto` says what it
/// chose (a point says what ran: cpu, cuda or shim).
fn resolve_backend(b: ctx_cuda::Backend) -> Result<ctx_cuda::Backend> {
    use ctx_cuda::Backend;
    Ok(match b {
        Backend::Cuda => {
            ctx_cuda::cuda::probe().map_err(|e| anyhow!("--backend cuda: {e}"))?;
            Backend::Cuda
        }
        Backend::Auto => match ctx_cuda::cuda::probe() {
            Ok(_) => Backend::Cuda,
            Err(e) => {
                eprintln!("--backend auto: no GPU ({e}); decoding on the CPU");
                Backend::Cpu
            }
        },
        other => other,
    })
}

/// Warnings a word boost earns before it runs (001 §3.3's rule; the compact topology).
fn warn_word_boost(st: &Settings, common: &Common, is_files: bool) -> Result<()> {
    let w = WordBoost::read(st)?;
    if w.word_boost.is_none() {
        return Ok(());
    }
    let score = w.word_boost_score;
    if score.abs() > common.beam / 2.0 {
        eprintln!(
            "warning: a word boost of {score} exceeds half the beam ({}): boosted words may crowd the beam out (001 §3.3)",
            common.beam
        );
    }
    if common.graph == "tlg-compact" && !is_files {
        eprintln!(
            "warning: the compact CTC topology does not enforce CTC's repeat rule: a boosted word may be read again on every frame its token is held (tlg-normal does not; README, 001 Fig. 6)"
        );
    }
    Ok(())
}

/// The method a decode runs: `--method`'s components and those its lists add (`base`), and
/// `widest`, the base with lattice biasing where the family has it.
struct DecodeMethod {
    base: Method,
    widest: Method,
    parts: Vec<String>,
}

impl DecodeMethod {
    fn of(a: &DecodeArgs, l: &Lists) -> Result<Self> {
        let mut parts: Vec<String> = match &a.method {
            Some(m) if m != "baseline" => m.split('+').map(|p| p.trim().to_string()).collect(),
            _ => Vec::new(),
        };
        for (on, c) in [
            (l.gboost.is_some(), "g-boosting"),
            (l.hclg.is_some(), "hclg-boosting"),
            (l.arcs.is_some(), "arc-boosting"),
            (l.words.is_some(), "word-boosting"),
            (l.open.is_some(), "open-vocab"),
        ] {
            if on && !parts.iter().any(|p| p == c) {
                parts.push(c.to_string());
            }
        }
        let mut m = Self {
            base: method_named(&parts, false)?,
            widest: method_named(&parts, false)?,
            parts,
        };
        if let Ok(w) = method_named(&m.parts, true) {
            m.widest = w;
        }
        Ok(m)
    }

    /// The outputs `--methods` names (default: the 1-best, and its lattice-biased rescoring
    /// with each utterance's sequences where the family can add lattice biasing).
    fn outputs(&self, a: &DecodeArgs) -> Vec<String> {
        if !a.methods.is_empty() {
            return a.methods.clone();
        }
        let can_bias = self.base.has("lattice-biasing") || self.widest != self.base;
        if can_bias {
            vec!["none".into(), "sequences".into()]
        } else {
            vec!["none".into()]
        }
    }

    /// One point per output, each checked as an experiment row is.
    fn points(
        &self,
        a: &DecodeArgs,
        st: &Settings,
        outputs: &[String],
        lists: &Lists,
    ) -> Result<Vec<Point>> {
        let mut row_labels = BTreeMap::new();
        for r in &a.rows {
            let (k, v) = r
                .split_once('=')
                .ok_or_else(|| anyhow!("--row '{r}' is not OUTPUT=LABEL"))?;
            if !outputs.iter().any(|m| m == k) {
                bail!("--row '{r}': '{k}' is not one of --methods");
            }
            if v.contains(',') || v.contains('"') {
                bail!("--row '{r}': a label may not contain commas or quotes (CSV)");
            }
            row_labels.insert(k.to_string(), v.to_string());
        }
        let mut points = Vec::new();
        for name in outputs {
            let mut s = st.clone();
            let method = if name == "none" {
                self.base.clone()
            } else {
                ListKind::parse(name).ok_or_else(|| {
                    anyhow!("unknown method '{name}' (none, unigrams, sequences, gt, list:NAME)")
                })?;
                LatticeBias {
                    bias_list: Some(name.clone()),
                    ..LatticeBias::read(st)?
                }
                .write(&mut s);
                method_named(&self.parts, true)
                    .with_context(|| format!("output '{name}' (lattice biasing)"))?
            };
            let row = row_labels
                .get(name)
                .cloned()
                .unwrap_or_else(|| default_row(name, lists));
            let p = Point {
                row,
                section: a.section.clone(),
                method,
                settings: s,
                swept: Vec::new(),
            };
            points.push(catalog().point(p, &format!("ctxbench decode, output '{name}'"))?);
        }
        Ok(points)
    }
}

/// The method of `parts` (with lattice biasing when `lattice`), parsed by the catalog.
fn method_named(parts: &[String], lattice: bool) -> Result<Method> {
    let mut p = parts.to_vec();
    if lattice && !p.iter().any(|x| x == "lattice-biasing") {
        p.push("lattice-biasing".into());
    }
    let name = if p.is_empty() {
        "baseline".to_string()
    } else {
        p.join("+")
    };
    catalog()
        .method(&name)
        .with_context(|| format!("--method '{name}'"))
}

/// Prints what was decoded and one table row per output.
fn print_figures(
    points: &[Point],
    records: &[PointRecord],
    outputs: &[String],
    st: Option<&Setup>,
    realism: Option<&report::CtcRealism>,
) {
    let m = |i: usize, k: &str| records[i].measures.get(k).copied();
    if let Some(st) = st {
        eprintln!(
            "decoded {} utterances of {} ({} graph: {} states, {} arcs) with {} thread(s)",
            st.dataset.utterances.len(),
            st.dataset.name,
            st.graph.kind.name(),
            st.csr.num_states(),
            st.csr.num_arcs(),
            Common::read(&points[0].settings).map_or(0, |c| c.threads)
        );
    }
    if !records[0].device.is_empty() {
        eprintln!(
            "backend {} on {}",
            Common::read(&points[0].settings).map_or(String::new(), |c| c.backend.to_string()),
            records[0].device
        );
    }
    let g = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
    println!(
        "audio {} s, decode {} s (RTFx {}), lattice density {} arcs/frame",
        g(m(0, "audio_s"), 1),
        g(m(0, "decode_s"), 1),
        g(m(0, "rtfx"), 1),
        g(m(0, "lattice_density"), 2)
    );
    if let (Some(am), Some(all)) = (m(0, "am_s"), m(0, "rtfx_am")) {
        println!(
            "acoustic model (front end + scores) {am:.2} s; front end + scores + search RTFx {all:.1}"
        );
    }
    if let Some(r) = realism {
        let pct = |c: &ctx_core::metrics::score::ErrorCounts| {
            c.rate().map_or("-".into(), |r| format!("{r:.1}"))
        };
        println!(
            "CTC outputs: blank is the argmax on {:.1}% of frames, mean max posterior {:.3}, entropy {:.3} nats/frame; greedy WER {}, NE-WER {}",
            100.0 * r.shape.blank_share(),
            r.shape.mean_max_prob(),
            r.shape.mean_entropy(),
            pct(&r.greedy.all),
            pct(&r.greedy.ne),
        );
    }
    println!(
        "\n| output | row | method | WER | NE-WER | U-WER | NE-A | P | R | F1 | RTFx | phrases kept/dropped |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (i, name) in outputs.iter().enumerate() {
        // (Per-utterance means for some families: whole numbers print as such, others with
        // one decimal.)
        let count = |x: f64| {
            if x.fract() == 0.0 {
                format!("{x}")
            } else {
                format!("{x:.1}")
            }
        };
        let kept = match (m(i, "phrases_kept"), m(i, "phrases_dropped")) {
            (Some(k), Some(d)) => format!("{}/{}", count(k), count(d)),
            _ => "-".into(),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {kept} |",
            points[i].row,
            points[i].method,
            g(m(i, "wer"), 1),
            g(m(i, "ne_wer"), 1),
            g(m(i, "u_wer"), 1),
            g(m(i, "ne_acc"), 1),
            g(m(i, "precision"), 1),
            g(m(i, "recall"), 1),
            g(m(i, "f1"), 1),
            g(m(i, "rtfx"), 1),
        );
    }
}

/// The files of a single decode, fed by the family's group run: each output's Kaldi `text` and
/// CTM, the word lattices, the running partial hypotheses.
struct DecodeFiles {
    hyp_dir: Option<PathBuf>,
    lattice_out: Option<PathBuf>,
    partials_out: Option<PathBuf>,
    /// Output name per point (the file names under `hyp_dir`).
    outputs: Vec<String>,
    acoustic_scale: Option<f32>,
    lattices: Mutex<String>,
    partials: Mutex<String>,
    /// The lattices' word table when contexts wrote words outside words.txt: (the run's context
    /// words, the table's text).
    lattice_words: Mutex<Option<(Vec<String>, String)>>,
}

impl DecodeFiles {
    fn any(&self) -> bool {
        self.hyp_dir.is_some() || self.lattice_out.is_some() || self.partials_out.is_some()
    }

    /// Writes the lattices and partials gathered (atomically, once every group ran).
    fn finish(&self) -> Result<()> {
        for (path, text, what) in [
            (&self.lattice_out, &self.lattices, "lattices"),
            (&self.partials_out, &self.partials, "the running hypotheses"),
        ] {
            if let Some(p) = path {
                let text = text
                    .lock()
                    .map_err(|_| anyhow!("a decode thread panicked"))?;
                ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
                eprintln!("wrote {what} to {}", p.display());
            }
        }
        let words = self
            .lattice_words
            .lock()
            .map_err(|_| anyhow!("a decode thread panicked"))?;
        if let (Some(p), Some((_, table))) = (&self.lattice_out, words.as_ref()) {
            let mut name = p.clone().into_os_string();
            name.push(".words.txt");
            let path = PathBuf::from(name);
            ctx_core::io::write_atomic(&path, |w| w.write_all(table.as_bytes()))?;
            eprintln!("wrote the lattices' word table to {}", path.display());
        }
        Ok(())
    }
}

impl OutputSink for DecodeFiles {
    fn decoded(&self, st: &Setup, run: &DecodeRun) -> Result<()> {
        if self.lattice_out.is_some() {
            let scale = self.acoustic_scale.unwrap_or(st.acoustic_scale);
            let mut text = String::new();
            for r in &run.results {
                crate::kaldi_lattice::write_utterance(&mut text, r, scale)?;
            }
            self.lattices
                .lock()
                .map_err(|_| anyhow!("a decode thread panicked"))?
                .push_str(&text);
            if !run.open_words.is_empty() {
                let mut held = self
                    .lattice_words
                    .lock()
                    .map_err(|_| anyhow!("a decode thread panicked"))?;
                match held.as_ref() {
                    Some((w, _)) if *w == run.open_words => {}
                    Some(_) => bail!(
                        "--lattice-out: two decodes numbered their context words differently \
                         (one word table cannot serve both): decode one method at a time"
                    ),
                    None => {
                        // words.txt, then the context words at their ids (a context word
                        // spelled like a graph word keeps both ids).
                        let table = &st.graph.symbols.words;
                        let mut t = Vec::new();
                        table.write_to(&mut t)?;
                        let mut t = String::from_utf8(t)?;
                        let base = table.len();
                        for (k, w) in run.open_words.iter().enumerate() {
                            t.push_str(&format!("{w} {}\n", base + k));
                        }
                        *held = Some((run.open_words.clone(), t));
                    }
                }
            }
        }
        if self.partials_out.is_some() {
            let mut text = String::new();
            let secs = |row: u64| row as f64 * st.frame_s;
            for r in &run.results {
                for (row, words) in r.running_partials() {
                    let w = run.words(st, &words).join(" ");
                    text.push_str(&format!("{}\t{:.2}\tpartial\t{w}\n", r.id, secs(row)));
                }
                let end = r.segments.last().map_or(0, |s| s.start_row + s.rows);
                let w = run.words(st, &r.words()).join(" ");
                text.push_str(&format!("{}\t{:.2}\tfinal\t{w}\n", r.id, secs(end)));
            }
            self.partials
                .lock()
                .map_err(|_| anyhow!("a decode thread panicked"))?
                .push_str(&text);
        }
        Ok(())
    }

    fn output(&self, point: usize, st: &Setup, o: &Output) -> Result<()> {
        let Some(dir) = &self.hyp_dir else {
            return Ok(());
        };
        let name = &self.outputs[point];
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut text = String::new();
        for (u, h) in st.dataset.utterances.iter().zip(&o.hyps) {
            text.push_str(&u.id);
            for w in h {
                text.push(' ');
                text.push_str(w);
            }
            text.push('\n');
        }
        ctx_core::io::write_atomic(&dir.join(format!("{name}.txt")), |w| {
            w.write_all(text.as_bytes())
        })?;
        // CTM: utterance, channel, start, duration, word (times from the frame shift).
        let mut ctm = String::new();
        // (The words as written in the text: context words spelled as in their list.)
        for ((u, t), words) in st.dataset.utterances.iter().zip(&o.timed).zip(&o.hyps) {
            for (w, tw) in words.iter().zip(t) {
                ctm.push_str(&format!(
                    "{} 1 {:.2} {:.2} {w}\n",
                    u.id, tw.start_s, tw.dur_s
                ));
            }
        }
        ctx_core::io::write_atomic(&dir.join(format!("{name}.ctm")), |w| {
            w.write_all(ctm.as_bytes())
        })?;
        Ok(())
    }

    fn report(&self, line: &str) {
        eprintln!("{line}");
    }
}

/// Runs `ctxbench decode`.
pub fn run_decode(a: &DecodeArgs) -> Result<()> {
    DecodeRequest::from_args(a)?.run().map(|_| ())
}

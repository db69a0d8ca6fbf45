//! `ctxbench decode`: decode a dataset on CPU with the simulated acoustic model and report
//! WER / NE-WER / U-WER / NE-A / RTFx for the baseline and lattice-biased outputs.

use crate::data::registry;
use crate::pipeline::{
    self, decode, static_list, DecodeSettings, ListKind, Setup, SetupOptions, StaticBoost,
};
use anyhow::{anyhow, bail, Result};
use clap::Args;
use ctx_core::metrics::score::{ErrorCounts, ScoreTotals};
use ctx_data::dataset::Subset;
use ctx_data::graphs::DEFAULT_BPE_SIZE;
use ctx_graph::compile::GraphKind;
use serde_json::json;
use std::path::PathBuf;
use wfst_search::{Booster, DecoderConfig};

/// Arguments of `ctxbench decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Dataset name (datasets.toml, or the --registry file; a `kind = "files"` entry decodes
    /// your own model outputs).
    #[arg(long, required_unless_present = "scores")]
    pub dataset: Option<String>,
    /// Your own inputs, without a registry entry (see README "Bring your own model").
    #[command(flatten)]
    pub files: FilesArgs,
    /// Decode the quick subset.
    #[arg(long)]
    pub quick: bool,
    /// Only the first N utterances.
    #[arg(long)]
    pub limit: Option<usize>,
    /// hclg, tlg-normal or tlg-compact.
    #[arg(long, default_value = "hclg")]
    pub kind: String,
    /// BPE pieces for TLG graphs.
    #[arg(long, default_value_t = DEFAULT_BPE_SIZE)]
    pub bpe_size: usize,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry.
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// Search beam.
    #[arg(long, default_value_t = DecoderConfig::default().beam)]
    pub beam: f32,
    /// Max active tokens per frame.
    #[arg(long, default_value_t = DecoderConfig::default().max_active)]
    pub max_active: usize,
    /// Lattice beam.
    #[arg(long, default_value_t = DecoderConfig::default().lattice_beam)]
    pub lattice_beam: f32,
    /// Acoustic scale (default: the acoustic model's own).
    #[arg(long)]
    pub acoustic_scale: Option<f32>,
    /// Online chunk in seconds.
    #[arg(long, default_value_t = 0.5)]
    pub chunk_s: f64,
    /// Decode each utterance as one segment (no endpoint rules).
    #[arg(long)]
    pub no_endpointing: bool,
    /// Decoding threads (CPU backend).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Backend: cpu (the reference), cuda (a GPU; an error without one), auto (a GPU when one
    /// answers, else the CPU) or shim (the CUDA kernels run on the CPU: checks, not speed).
    #[arg(long, default_value = "cpu")]
    pub backend: ctx_cuda::Backend,
    /// Streams decoded together per device batch (cuda, shim).
    #[arg(long, default_value_t = 256)]
    pub gpu_batch: usize,
    /// Outputs to score: none, unigrams, sequences, gt, list:NAME (lattice biasing with that
    /// list; NAME a global list of the dataset such as `rare` or `oracle`).
    #[arg(long, value_delimiter = ',', default_value = "none,sequences")]
    pub methods: Vec<String>,
    /// G-boosting before decoding (003 §3.1.3) with this static list: sequences (union of all
    /// lists), unigrams, gt (every reference entity: oracle) or a global list name.
    #[arg(long)]
    pub gboost: Option<String>,
    /// G-boosting discount per boosted n-gram (negative = boost).
    #[arg(long, default_value_t = -2.0, allow_hyphen_values = true)]
    pub gboost_discount: f32,
    /// How G-boosting is applied: static (compile HCLG from the boosted G), on-the-fly (the
    /// unboosted graph with the phrase-prefix automaton composed during the search) or
    /// on-the-fly-lm (the exact LM difference G_boosted − G composed during the search).
    #[arg(long, default_value = "static")]
    pub gboost_mode: String,
    /// G-boosting list scope: set (one --gboost list for every utterance) or utterance (with
    /// an on-the-fly mode: --gboost names a per-utterance list kind such as sequences, unigrams,
    /// gt or list:NAME, built while decoding).
    #[arg(long, default_value = "set")]
    pub gboost_scope: String,
    /// Word boosting (001 §3.3) while decoding: the distinct words of each utterance's list of
    /// this kind (sequences, unigrams, gt, test-words, other-words, list:NAME) earn --word-boost-score each time they
    /// are emitted (the single-state B applied on every word arc, never composed).
    #[arg(long)]
    pub word_boost: Option<String>,
    /// Word-boosting bonus per word (positive = favoured; 001's rule: at most half the beam).
    #[arg(long, default_value_t = 3.0, allow_hyphen_values = true)]
    pub word_boost_score: f32,
    /// Arc-index boosting (000 §4.2, its "partial hypotheses" rows): the graph's arcs that
    /// spell each utterance's list of this kind (sequences, unigrams, gt, list:NAME), found by
    /// Algorithm 1, earn --arc-boost-discount during the search; stacks with an on-the-fly
    /// --gboost (CPU backend).
    #[arg(long)]
    pub arc_boost: Option<String>,
    /// Arc-boosting discount per boosted arc (negative = boost).
    #[arg(long, default_value_t = -2.0, allow_hyphen_values = true)]
    pub arc_boost_discount: f32,
    /// CTC models: subtracted from the blank's log-probability on every frame (nats; positive
    /// = fewer blanks, a cure for deletions).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub blank_penalty: f32,
    /// CTC models: added to the cost of every emitted word (graph units; negative = an
    /// insertion bonus).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub word_insertion_penalty: f32,
    /// HCLG-boosting by composition (003 §3.1.4): compose the graph with the biasing FST of this
    /// static list (same names as --gboost) before decoding.
    #[arg(long)]
    pub hclg_bias: Option<String>,
    /// HCLG-boosting discount per word (negative = boost).
    #[arg(long, default_value_t = -2.0, allow_hyphen_values = true)]
    pub hclg_bias_discount: f32,
    /// Global list whose words are the precision/recall/F1 targets (default: `rare` when the
    /// dataset has it).
    #[arg(long)]
    pub targets: Option<String>,
    /// Row label of an output in the CSV, as OUTPUT=LABEL (repeatable; default: 000 Table 1's,
    /// and for a 1-best biased during the search the biasing it had).
    #[arg(long = "row")]
    pub rows: Vec<String>,
    /// Lattice-biasing discount per word (negative = boost).
    #[arg(long, default_value_t = -2.0, allow_hyphen_values = true)]
    pub discount: f32,
    /// Override the dataset's acoustic noise level (calibration; record the result in
    /// datasets.toml rather than passing it per method).
    #[arg(long)]
    pub noise: Option<f64>,
    /// Write each output's hypotheses as a Kaldi `text` file `<dir>/<output>.txt` and a CTM
    /// with word times `<dir>/<output>.ctm`.
    #[arg(long)]
    pub hyp_dir: Option<PathBuf>,
    /// Write the decoded word lattices (before any lattice biasing) here as a Kaldi text
    /// archive of CompactLattices: word ids of words.txt, graph and unscaled acoustic costs.
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
    /// Per-utterance entities (`utt<TAB>[CLASS] words|...`).
    #[arg(long, requires = "scores")]
    pub entities: Option<PathBuf>,
    /// One biasing list for every utterance (a phrase per line); also `list:global`.
    #[arg(long, requires = "scores")]
    pub bias_list: Option<PathBuf>,
    /// Per-utterance biasing lists (`utt<TAB>phrase|phrase|...`).
    #[arg(long, requires = "scores")]
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
            entities: s(&self.entities),
            entity_classes: Vec::new(),
            ne_insertions_inside: false,
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

fn pct(c: &ErrorCounts) -> String {
    c.rate().map_or("-".into(), |r| format!("{r:.1}"))
}

/// An output's row label when `--row` names none: 000 Table 1's row of its lattice-biasing list
/// (or "No biasing"); a 1-best biased during the search says how, arc boosting with 000's
/// "partial hypotheses" row of its list.
fn default_row(output: &str, a: &DecodeArgs) -> String {
    let table1 = crate::pipeline::table1_row;
    if output != "none" {
        return table1(output).to_string();
    }
    let mut parts = Vec::new();
    if let Some(k) = &a.arc_boost {
        parts.push(match table1(k) {
            "other" => format!("Arc-boosted {k} (partial hypotheses)"),
            r => r.to_string(),
        });
    }
    for (list, how) in [
        (&a.word_boost, "Word-boosted"),
        (&a.gboost, "G-boosted"),
        (&a.hclg_bias, "HCLG-boosted"),
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

/// Runs `ctxbench decode`.
pub fn run_decode(a: &DecodeArgs) -> Result<()> {
    if !(1..=wfst_search::GPU_MAX_BATCH).contains(&a.gpu_batch) {
        bail!(
            "--gpu-batch {}: between 1 and {} streams (one grid row each)",
            a.gpu_batch,
            wfst_search::GPU_MAX_BATCH
        );
    }
    // A GPU asked for is checked before any data is loaded.
    if a.backend == ctx_cuda::Backend::Cuda {
        ctx_cuda::cuda::probe().map_err(|e| anyhow!("--backend cuda: {e}"))?;
    }
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
    let kind = GraphKind::parse(&a.kind).ok_or_else(|| {
        anyhow!(
            "unknown graph kind '{}' (hclg, tlg-normal, tlg-compact)",
            a.kind
        )
    })?;
    let methods: Vec<(String, Option<ListKind>)> = a
        .methods
        .iter()
        .map(|m| {
            if m == "none" {
                Ok((m.clone(), None))
            } else {
                ListKind::parse(m)
                    .map(|k| (m.clone(), Some(k)))
                    .ok_or_else(|| {
                        anyhow!("unknown method '{m}' (none, unigrams, sequences, gt, list:NAME)")
                    })
            }
        })
        .collect::<Result<_>>()?;
    let mut row_labels = std::collections::BTreeMap::new();
    for r in &a.rows {
        let (k, v) = r
            .split_once('=')
            .ok_or_else(|| anyhow!("--row '{r}' is not OUTPUT=LABEL"))?;
        if !methods.iter().any(|(m, _)| m == k) {
            bail!("--row '{r}': '{k}' is not one of --methods");
        }
        if v.contains(',') || v.contains('"') {
            bail!("--row '{r}': a label may not contain commas or quotes (CSV)");
        }
        row_labels.insert(k.to_string(), v.to_string());
    }
    let arc_kind = match &a.arc_boost {
        Some(l) => Some(ListKind::parse(l).ok_or_else(|| {
            anyhow!("--arc-boost '{l}': not a list kind (sequences, unigrams, gt, list:NAME)")
        })?),
        None => None,
    };
    let subset = if a.quick { Subset::Quick } else { Subset::Full };
    let otf = match a.gboost_mode.as_str() {
        "static" => false,
        "on-the-fly" | "on-the-fly-lm" => true,
        m => bail!("--gboost-mode '{m}' (static, on-the-fly or on-the-fly-lm)"),
    };
    let per_utt = match a.gboost_scope.as_str() {
        "set" => false,
        "utterance" => true,
        m => bail!("--gboost-scope '{m}' (set or utterance)"),
    };
    if per_utt && !otf {
        bail!("--gboost-scope utterance needs an on-the-fly --gboost-mode (a static graph has one list)");
    }
    if otf && a.gboost.is_none() {
        bail!("--gboost-mode {} needs a --gboost list", a.gboost_mode);
    }
    if per_utt {
        let list = a.gboost.as_deref().unwrap_or("");
        if ListKind::parse(list).is_none() {
            bail!("--gboost '{list}' with --gboost-scope utterance: a list kind (sequences, unigrams, gt, list:NAME)");
        }
    }
    // Lists are checked on the dataset before the (possibly long) graph build and decoding.
    {
        let ds = ctx_data::dataset::Dataset::load(&reg, &dataset, subset)?;
        for (m, k) in &methods {
            if let Some(ListKind::Global(n)) = k {
                if !ds.global_lists.contains_key(n) {
                    bail!("method '{m}': dataset {} has no global list '{n}'", dataset);
                }
            }
        }
        if let Some(t) = &a.targets {
            if !ds.global_lists.contains_key(t) {
                bail!("--targets: dataset {} has no global list '{t}'", dataset);
            }
        }
        if let Some(g) = a.gboost.as_ref().filter(|_| !per_utt) {
            static_list(&ds, g)?;
        }
        if let Some(g) = &a.hclg_bias {
            static_list(&ds, g)?;
        }
        if arc_kind.is_some() && a.word_boost.is_some() {
            bail!("--arc-boost and --word-boost cannot be combined (a word booster runs alone on a stream)");
        }
        if let Some(ListKind::Global(n)) = &arc_kind {
            if !ds.global_lists.contains_key(n) {
                bail!("--arc-boost: dataset {dataset} has no global list '{n}'");
            }
        }
    }
    let gboost = a.gboost.as_ref().filter(|_| !otf).map(|list| StaticBoost {
        list: list.clone(),
        discount: a.gboost_discount,
    });
    let mut setup = Setup::load(
        &reg,
        &dataset,
        &SetupOptions {
            gboost_otf: otf,
            subset,
            kind,
            bpe_size: a.bpe_size,
            cache: &a.cache,
            noise: a.noise,
            gboost,
            hclg_bias: a.hclg_bias.as_ref().map(|list| StaticBoost {
                list: list.clone(),
                discount: a.hclg_bias_discount,
            }),
        },
    )?;
    // A files dataset's graph kind comes from its model, not from --kind.
    let kind = if is_files { setup.graph.kind } else { kind };
    if let Some(r) = &setup.gboost {
        eprintln!(
            "G-boosting with list '{}' (discount {}): {} phrases, {} boosted, {} dropped (OOV); {} n-grams discounted, {} added",
            a.gboost.as_deref().unwrap_or(""),
            a.gboost_discount,
            r.phrases,
            r.kept,
            r.dropped,
            r.discounted,
            r.added
        );
    }
    if let Some(r) = &setup.hclg_phrases {
        eprintln!(
            "HCLG-boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV)",
            a.hclg_bias.as_deref().unwrap_or(""),
            a.hclg_bias_discount,
            r.kept,
            r.dropped
        );
    }
    let (targets_name, targets) = match pipeline::targets(&setup.dataset, a.targets.as_deref())? {
        Some((n, t)) => (Some(n), Some(t)),
        None => (None, None),
    };
    if let Some(n) = a.limit {
        setup.dataset.utterances.truncate(n);
    }
    if setup.dataset.utterances.is_empty() {
        bail!("dataset {} has no utterances to decode", dataset);
    }
    let settings = DecodeSettings {
        config: DecoderConfig {
            beam: a.beam,
            max_active: a.max_active,
            lattice_beam: a.lattice_beam,
            acoustic_scale: a.acoustic_scale.unwrap_or(setup.acoustic_scale),
            ..DecoderConfig::default()
        },
        chunk_s: a.chunk_s,
        endpointing: !a.no_endpointing,
        threads: a.threads,
        backend: a.backend,
        gpu_batch: a.gpu_batch,
        blank_penalty: a.blank_penalty,
        word_insertion_penalty: a.word_insertion_penalty,
    };
    eprintln!(
        "decoding {} utterances of {} ({} graph: {} states, {} arcs) with {} thread(s)",
        setup.dataset.utterances.len(),
        setup.dataset.name,
        kind.name(),
        setup.csr.num_states(),
        setup.csr.num_arcs(),
        settings.threads
    );
    let otf_boosters = pipeline::otf_boosters(
        &reg,
        &dataset,
        &setup,
        subset,
        &pipeline::OtfRequest {
            list: a.gboost.clone().unwrap_or_default(),
            exact: a.gboost_mode == "on-the-fly-lm",
            discount: a.gboost_discount,
            per_utterance: per_utt,
        },
        settings.threads,
    )?;
    if let Some(o) = &otf_boosters {
        let r = &o.report;
        eprintln!(
            "G-boosting {} with list '{}' per {} (discount {}): {} phrases, {} boosted, {} dropped (OOV); boosters built in {:.2} s",
            a.gboost_mode,
            a.gboost.as_deref().unwrap_or(""),
            a.gboost_scope,
            a.gboost_discount,
            r.phrases,
            r.kept,
            r.dropped,
            o.build_s
        );
    }
    let word_boosters = match &a.word_boost {
        Some(l) => {
            let kind = ListKind::parse(l).ok_or_else(|| {
                anyhow!("--word-boost '{l}': not a list kind (sequences, unigrams, gt, test-words, other-words, list:NAME)")
            })?;
            if otf_boosters.is_some() {
                bail!("--word-boost and on-the-fly --gboost cannot be combined (one word booster per stream)");
            }
            let w = pipeline::ContextBoosters::words(
                &setup,
                &kind,
                a.word_boost_score,
                settings.config.beam,
            )?;
            eprintln!(
                "word boosting with list '{l}' (+{} per word): {} words applied, {} not in words.txt, tables built in {:.3} s",
                a.word_boost_score, w.applied, w.oov, w.build_s
            );
            if a.word_boost_score.abs() > settings.config.beam / 2.0 {
                eprintln!(
                    "warning: a word boost of {} exceeds half the beam ({}): boosted words may crowd the beam out (001 §3.3)",
                    a.word_boost_score, settings.config.beam
                );
            }
            if a.kind == "tlg-compact" && a.files.scores.is_none() {
                eprintln!(
                    "warning: the compact CTC topology does not enforce CTC's repeat rule: a boosted word may be read again on every frame its token is held (tlg-normal does not; README, 001 Fig. 6)"
                );
            }
            Some(w)
        }
        None => None,
    };
    let arc_boosters = match &arc_kind {
        Some(kind) => {
            let b =
                pipeline::ArcBoosters::new(&setup, kind, a.arc_boost_discount, settings.threads)?;
            eprintln!(
                "arc boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV); {} arcs over the utterances' lists, found in {:.2} s",
                a.arc_boost.as_deref().unwrap_or(""),
                a.arc_boost_discount, b.report.kept, b.report.dropped, b.arcs, b.build_s
            );
            Some(b)
        }
        None => None,
    };
    // Each utterance's boosters: on-the-fly G-boosting's automaton or word boosting's table,
    // and its arc set, stacked when G-boosting and arc boosting are both asked for.
    let booster_of = |i: usize| -> Booster {
        let word = otf_boosters
            .as_ref()
            .map(|o| o.boosters[i].clone())
            .or_else(|| word_boosters.as_ref().map(|w| w.boosters[i].clone()));
        let arcs = arc_boosters.as_ref().map(|b| b.boosters[i].clone());
        match (word, arcs) {
            (None, None) => Booster::None,
            (Some(b), None) | (None, Some(b)) => b,
            (Some(w), Some(b)) => Booster::Stack(vec![w, b]),
        }
    };
    let mut run = if otf_boosters.is_none() && word_boosters.is_none() && arc_boosters.is_none() {
        decode(&setup, &settings, &|_| Booster::None)?
    } else {
        pipeline::decode_indexed(&setup, &settings, &booster_of)?
    };
    // Lists that arrive per utterance are compiled while decoding: their time counts in RTFx.
    run.decode_s += otf_boosters.as_ref().map_or(0.0, |o| o.context_s())
        + word_boosters.as_ref().map_or(0.0, |w| w.build_s)
        + arc_boosters.as_ref().map_or(0.0, |b| b.build_s);
    if let Some(p) = &a.lattice_out {
        let mut text = String::new();
        for r in &run.results {
            crate::kaldi_lattice::write_utterance(&mut text, r, settings.config.acoustic_scale)?;
        }
        ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
        eprintln!("wrote {} lattices to {}", run.results.len(), p.display());
    }
    if let Some(p) = &a.partials_out {
        let mut text = String::new();
        let secs = |row: u64| row as f64 * setup.frame_s;
        for r in &run.results {
            for (row, words) in r.running_partials() {
                let w = setup.words(&words).join(" ");
                text.push_str(&format!("{}\t{:.2}\tpartial\t{w}\n", r.id, secs(row)));
            }
            let end = r.segments.last().map_or(0, |s| s.start_row + s.rows);
            let w = setup.words(&r.words()).join(" ");
            text.push_str(&format!("{}\t{:.2}\tfinal\t{w}\n", r.id, secs(end)));
        }
        ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
        eprintln!("wrote the running hypotheses to {}", p.display());
    }
    let kind_name = kind.name();
    let noise = match a.noise {
        Some(n) => n,
        None => reg.get(&dataset)?.acoustic().map_or(f64::NAN, |k| k.noise),
    };
    let rows: f64 = run
        .results
        .iter()
        .flat_map(|r| &r.segments)
        .map(|s| s.rows as f64)
        .sum();
    let segments: usize = run.results.iter().map(|r| r.segments.len()).sum();
    if !run.device.is_empty() {
        eprintln!("backend {} on {}", run.backend, run.device);
    }
    println!(
        "audio {:.1} s, decode {:.1} s (RTFx {:.1}, {:.0} frames/s), simulation {:.1} s{}, {} segments, lattice density {:.2} arcs/frame",
        run.audio_s,
        run.decode_s,
        run.rtfx(),
        rows / run.decode_s.max(1e-9),
        run.sim_s,
        if setup.ctc_blank.is_some() {
            format!(", CTC input checks {:.2} s", run.check_s)
        } else {
            String::new()
        },
        segments,
        pipeline::lattice_density(&run)
    );
    let realism = pipeline::ctc_realism(&setup)?;
    if let Some(r) = &realism {
        println!(
            "CTC outputs: blank is the argmax on {:.1}% of frames, mean max posterior {:.3}, entropy {:.3} nats/frame; greedy WER {}, NE-WER {}; {:.0} active tokens/frame in the search",
            100.0 * r.shape.blank_share(),
            r.shape.mean_max_prob(),
            r.shape.mean_entropy(),
            pct(&r.greedy.all),
            pct(&r.greedy.ne),
            pipeline::active_tokens(&run)
        );
    }
    println!(
        "\n| output | WER | NE-WER | U-WER | NE-A | P | R | F1 | RTFx | phrases kept/dropped |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut out = Vec::new();
    let mut csv = String::from(
        "experiment,dataset,section,row,method,backend,graph,beam,max_active,lattice_beam,acoustic_scale,discount,noise,wer,ne_wer,u_wer,ne_acc,precision,recall,f1,audio_s,decode_s,rtfx,peak_mem_mb,bias_list,gboost_list,gboost_discount,targets,hclg_list,hclg_discount,gboost_mode,device\n",
    );
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.4}"));
    for (name, kind) in &methods {
        let o = pipeline::output(
            &setup,
            &run,
            kind.as_ref().map(|k| (k, a.discount)),
            targets.as_ref(),
        )?;
        let (hyps, extra_s, report) = (o.hyps, o.rescore_s, o.report);
        if let Some(dir) = &a.hyp_dir {
            std::fs::create_dir_all(dir)?;
            let mut text = String::new();
            for (u, h) in setup.dataset.utterances.iter().zip(&hyps) {
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
            for (u, t) in setup.dataset.utterances.iter().zip(&o.timed) {
                for (w, tw) in setup
                    .words(&t.iter().map(|x| x.word).collect::<Vec<_>>())
                    .iter()
                    .zip(t)
                {
                    ctm.push_str(&format!(
                        "{} 1 {:.2} {:.2} {w}\n",
                        u.id, tw.start_s, tw.dur_s
                    ));
                }
            }
            ctx_core::io::write_atomic(&dir.join(format!("{name}.ctm")), |w| {
                w.write_all(ctm.as_bytes())
            })?;
        }
        let t: ScoreTotals = o.totals;
        let rtfx = run.audio_s / (run.decode_s + extra_s).max(1e-9);
        let prf = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {rtfx:.1} | {} |",
            pct(&t.all),
            pct(&t.ne),
            pct(&t.unbiased),
            prf(t.ne_acc()),
            prf(t.targets.precision()),
            prf(t.targets.recall()),
            prf(t.targets.f1()),
            report.map_or("-".into(), |r| format!("{}/{}", r.kept, r.dropped)),
        );
        let parts: Vec<&str> = [
            (a.gboost.is_some(), "g-boosting"),
            (a.hclg_bias.is_some(), "hclg-boosting"),
            (a.word_boost.is_some(), "word-boosting"),
            (a.arc_boost.is_some(), "arc-boosting"),
            (kind.is_some(), "lattice-biasing"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        let method = if parts.is_empty() {
            "baseline".to_string()
        } else {
            parts.join("+")
        };
        let row = match row_labels.get(name) {
            Some(r) => r.clone(),
            None => default_row(name, a),
        };
        csv.push_str(&format!(
            "{},{},{},{row},{method},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.1},{:.3},{:.2},{},{},{},{},{},{},{},{},{}\n",
            a.experiment,
            dataset,
            a.section,
            run.backend,
            kind_name,
            settings.config.beam,
            settings.config.max_active,
            settings.config.lattice_beam,
            settings.config.acoustic_scale,
            if kind.is_some() { a.discount.to_string() } else { String::new() },
            noise,
            f(t.all.rate()),
            f(t.ne.rate()),
            f(t.unbiased.rate()),
            f(t.ne_acc()),
            f(t.targets.precision()),
            f(t.targets.recall()),
            f(t.targets.f1()),
            run.audio_s,
            run.decode_s + extra_s,
            rtfx,
            f(crate::pipeline::peak_mem_mb()),
            kind.as_ref().map_or("", |_| name.as_str()),
            a.gboost.as_deref().unwrap_or(""),
            if a.gboost.is_some() { a.gboost_discount.to_string() } else { String::new() },
            targets_name.as_deref().unwrap_or(""),
            a.hclg_bias.as_deref().unwrap_or(""),
            if a.hclg_bias.is_some() { a.hclg_bias_discount.to_string() } else { String::new() },
            if a.gboost.is_some() { a.gboost_mode.as_str() } else { "" },
            run.device,
        ));
        out.push(json!({
            "output": name,
            "wer": t.all.rate(), "ne_wer": t.ne.rate(), "u_wer": t.unbiased.rate(),
            "ne_acc": t.ne_acc(), "rtfx": rtfx, "rescore_s": extra_s,
            "precision": t.targets.precision(), "recall": t.targets.recall(), "f1": t.targets.f1(),
            "phrases_kept": report.map(|r| r.kept), "phrases_dropped": report.map(|r| r.dropped),
        }));
    }
    if let Some(p) = &a.points_out {
        ctx_core::io::write_atomic(p, |w| w.write_all(csv.as_bytes()))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &a.json {
        let v = json!({
            "dataset": setup.dataset.name, "kind": kind.name(), "audio_s": run.audio_s,
            "decode_s": run.decode_s, "threads": run.threads, "beam": a.beam,
            "backend": run.backend, "device": run.device,
            "max_active": a.max_active, "lattice_beam": a.lattice_beam,
            "discount": a.discount, "gboost": a.gboost, "gboost_discount": a.gboost_discount,
            "gboost_mode": a.gboost_mode, "gboost_scope": a.gboost_scope,
            "gboost_report": otf_boosters.as_ref().map(|o| &o.report).or(setup.gboost.as_ref()),
            "hclg_bias": a.hclg_bias,
            "word_boost": a.word_boost, "word_boost_score": a.word_boost_score,
            "arc_boost": a.arc_boost, "arc_boost_discount": a.arc_boost_discount,
            "arc_boost_arcs": arc_boosters.as_ref().map(|b| b.arcs),
            "hclg_bias_discount": a.hclg_bias_discount, "targets": targets_name, "outputs": out,
            "active_tokens": pipeline::active_tokens(&run),
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
    Ok(())
}

//! `ctxbench decode`'s command line: what to decode, your own files, where outputs go (every
//! setting's flag comes from [`super::flags::SettingFlags`]).

use super::flags::SettingFlags;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

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
            fbai_scoring: false,
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

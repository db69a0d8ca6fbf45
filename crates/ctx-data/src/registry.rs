//! The dataset registry: `datasets.toml` parsed into typed specs (docs/design.md §2, §6).
//!
//! Each table names a dataset. Kinds: `earnings` (real Earnings-21 calls cut into segments),
//! `atc-sim` (generated ATCO2-style traffic), `lm-text` (text for LM/BPE training only), `files` (a
//! researcher's own model outputs: scores, graph, Kaldi data dir and lists; [`FilesSpec`]).
//! Paths are relative to the repository root (the folder holding datasets.toml).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which part of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subset {
    /// Everything.
    Full,
    /// A few minutes for tests and CI.
    Quick,
}

/// The end-to-end model kinds of 004 (CTC included, for the knobs and the runner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum E2eKind {
    /// CTC (the simulator of `acoustic::CtcSim`).
    Ctc,
    /// RNN transducer.
    Rnnt,
    /// Token-and-duration transducer.
    Tdt,
    /// Attention encoder-decoder.
    Aed,
}

impl E2eKind {
    /// Every kind, in table order.
    pub const ALL: [E2eKind; 4] = [E2eKind::Rnnt, E2eKind::Tdt, E2eKind::Aed, E2eKind::Ctc];

    /// The name used in configs and tables.
    pub fn name(self) -> &'static str {
        match self {
            E2eKind::Ctc => "ctc",
            E2eKind::Rnnt => "rnnt",
            E2eKind::Tdt => "tdt",
            E2eKind::Aed => "aed",
        }
    }

    /// The kind of a name (`rnn-t` and `transducer` are read as `rnnt`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "ctc" => E2eKind::Ctc,
            "rnnt" | "rnn-t" | "transducer" => E2eKind::Rnnt,
            "tdt" => E2eKind::Tdt,
            "aed" => E2eKind::Aed,
            _ => return None,
        })
    }
}

/// Errors reading the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The file could not be read.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
    /// The TOML is malformed or a table is wrong.
    #[error("{path}: {message}")]
    Invalid {
        /// The registry file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A dataset name that is not in the registry.
    #[error("{path}: no dataset named '{name}' (known: {known})")]
    Unknown {
        /// The registry file.
        path: PathBuf,
        /// The requested name.
        name: String,
        /// The names it has.
        known: String,
    },
}

/// Simulated-acoustics knobs of a dataset (docs/design.md §5); calibrated once per dataset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcousticSpec {
    /// Base noise level (standard deviation of the per-frame score noise, in nats).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// Spread of the per-utterance noise level (log-normal sigma).
    #[serde(default = "default_noise_spread")]
    pub noise_spread: f64,
    /// Correlation of each pdf's score noise from one frame to the next (AR(1), in [0, 1)):
    /// a real model's scores drift smoothly, so a path gains nothing by hopping between pdfs to
    /// catch independent per-frame peaks — which, at 0 (white noise), makes extra short words
    /// cheap and insertions half of the errors. The noise keeps its level σ at any value.
    #[serde(default)]
    pub noise_corr: f64,
    /// Probability of a phone-confusion event per phone at the base noise level.
    #[serde(default = "default_confusion")]
    pub confusion: f64,
    /// Extra confusion probability of a word the model never saw in its training text (the
    /// dataset's LM text): a word seen `c` times gets `rare_confusion · rare_count /
    /// (rare_count + c)` on top of the noise-driven probability (hybrid: per phone of the word;
    /// end-to-end: per word). Entity-blind: only training counts decide. 0: every word equally
    /// hard.
    #[serde(default)]
    pub rare_confusion: f64,
    /// The training count at which that extra probability is halved.
    #[serde(default = "default_rare_count")]
    pub rare_count: f64,
    /// Seed of the simulator.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_noise() -> f64 {
    1.0
}
fn default_noise_spread() -> f64 {
    0.3
}
fn default_confusion() -> f64 {
    0.05
}
fn default_seed() -> u64 {
    1
}
fn default_rare_count() -> f64 {
    1.0
}

impl Default for AcousticSpec {
    fn default() -> Self {
        Self {
            noise: default_noise(),
            noise_spread: default_noise_spread(),
            noise_corr: 0.0,
            confusion: default_confusion(),
            rare_confusion: 0.0,
            rare_count: default_rare_count(),
            seed: default_seed(),
        }
    }
}

/// Knobs of the simulated CTC model of a dataset (docs/design.md §5; `[<dataset>.acoustic_ctc]`),
/// calibrated once per dataset for this model kind: a hybrid knob says nothing about CTC.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CtcAcousticSpec {
    /// Base noise level (standard deviation of the per-frame logit noise, in nats).
    pub noise: f64,
    /// Spread of the per-utterance noise level (log-normal sigma).
    #[serde(default = "default_noise_spread")]
    pub noise_spread: f64,
    /// Probability per piece, at the base noise level, that the model shows its nearest piece.
    #[serde(default = "default_confusion")]
    pub confusion: f64,
    /// Logit margin of a spike over the whole rest of the vocabulary (nats): sets peakiness.
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// The acoustic scale a decoder uses with these log-probabilities.
    #[serde(default = "default_ctc_scale")]
    pub acoustic_scale: f64,
    /// How far (nats) below a confused word's heard pieces its reference pieces still score:
    /// a real model that mishears a word keeps the right one among its close competitors, so
    /// context (an LM, a boosting list) can bring it back. Shared by every dataset, like
    /// `margin`; only a confusion event (never the noise alone) places them.
    #[serde(default = "default_confusion_gap")]
    pub confusion_gap: f64,
    /// Extra confusion probability of a word the model never saw in its training text (the
    /// dataset's LM text): a word seen `c` times gets `rare_confusion · rare_count /
    /// (rare_count + c)` on top of the noise-driven probability (hybrid: per phone of the word;
    /// end-to-end: per word). Entity-blind: only training counts decide. 0: every word equally
    /// hard.
    #[serde(default)]
    pub rare_confusion: f64,
    /// The training count at which that extra probability is halved.
    #[serde(default = "default_rare_count")]
    pub rare_count: f64,
    /// `confusion` of the same network trained on less data (004 Table 2's low-resource
    /// models; a point's `resources = "low"`): a weaker model mishears more words — confidently,
    /// the reference `confusion_gap` below — rather than being noisier everywhere. Calibrated
    /// once per dataset and model kind on the greedy WER (docs/design.md §5); `None`: no
    /// low-resource model for this dataset and kind.
    #[serde(default)]
    pub low_resource_confusion: Option<f64>,
    /// The in-domain model (`resources = "in-domain"`): the same network trained on the set's
    /// own transcribed speech, as 003's Zipformer was on ATCO2. It hears more acoustic
    /// confusions (this `confusion`, calibrated once on 003's beam-search WER) but its internal
    /// language model (`internal_lm`) keeps most of them from the output.
    #[serde(default)]
    pub in_domain_confusion: Option<f64>,
    /// Weight of the in-domain model's internal language model, the trigram of the transcripts
    /// it was trained on ([`crate::internal_lm`]), over words and over pieces. In a confusion
    /// event it hears the spelling `v` (normalised distance d ≤ 0.75) that maximises
    /// `internal_lm·G(v) − 4·d(v)`, G the sentence's log-probability gain from `v`, and the
    /// reference scores `confusion_gap + internal_lm·G(v)` below it; where that is not above
    /// 0 its prior keeps the reference. A transducer's near pieces (its noise errors) score
    /// `internal_lm` times the piece trigram's preference for the due piece lower. Used only by
    /// the in-domain model; entity-blind (only the training text decides).
    #[serde(default)]
    pub internal_lm: f64,
    /// Whether these knobs are the in-domain model's ([`CtcAcousticSpec::in_domain`]): only
    /// then does a simulator build and use the internal LM.
    #[serde(skip)]
    pub in_domain: bool,
    /// Seed of the simulator.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_margin() -> f64 {
    6.0
}
fn default_ctc_scale() -> f64 {
    1.0
}
fn default_confusion_gap() -> f64 {
    1.5
}

impl CtcAcousticSpec {
    /// The knobs with another base noise level (calibration runs).
    pub fn with_noise(&self, noise: f64) -> Self {
        Self {
            noise,
            ..self.clone()
        }
    }

    /// The knobs of the low-resource model (`low_resource_confusion` as `confusion`), or `None`
    /// where the dataset has no such calibration.
    ///
    /// ```
    /// # use ctx_data::registry::CtcAcousticSpec;
    /// let k: CtcAcousticSpec = toml::from_str("noise = 0.5\nconfusion = 0.1\nlow_resource_confusion = 0.3").unwrap();
    /// assert_eq!(k.low_resource().unwrap().confusion, 0.3);
    /// assert_eq!(k.low_resource().unwrap().noise, 0.5);
    /// ```
    pub fn low_resource(&self) -> Option<Self> {
        self.low_resource_confusion.map(|confusion| Self {
            confusion,
            ..self.clone()
        })
    }

    /// The in-domain model's knobs: `in_domain_confusion` for `confusion`, the internal LM on
    /// (None where the dataset has no in-domain model of this kind).
    pub fn in_domain(&self) -> Option<Self> {
        self.in_domain_confusion.map(|confusion| Self {
            confusion,
            in_domain: true,
            ..self.clone()
        })
    }
}

/// LM settings of a dataset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LmSpec {
    /// n-gram order.
    #[serde(default = "default_order")]
    pub order: usize,
    /// Count pruning thresholds per order from bigrams (empty = none).
    #[serde(default)]
    pub prune: Vec<u64>,
    /// Count pruning for the graphs of the quick subset (empty = `prune`): a quick run decodes
    /// a few utterances, and a large LM's graph would take longer to build than to use.
    #[serde(default)]
    pub quick_prune: Vec<u64>,
}

impl LmSpec {
    /// The LM a subset's graphs are compiled from: the quick subset takes `quick_prune` when
    /// set, the full set `prune`.
    pub fn for_subset(&self, subset: Subset) -> LmSpec {
        let prune = match subset {
            Subset::Quick if !self.quick_prune.is_empty() => self.quick_prune.clone(),
            _ => self.prune.clone(),
        };
        LmSpec {
            order: self.order,
            prune,
            quick_prune: Vec::new(),
        }
    }

    /// The text that keys graphs built from this LM in the cache (order and pruning; the
    /// same text as before `quick_prune` existed, so cached graphs stay valid).
    pub fn cache_key(&self) -> String {
        format!(
            "LmSpec {{ order: {}, prune: {:?} }}",
            self.order, self.prune
        )
    }
}

fn default_order() -> usize {
    3
}

impl Default for LmSpec {
    fn default() -> Self {
        Self {
            order: 3,
            prune: Vec::new(),
            quick_prune: Vec::new(),
        }
    }
}

/// One registry entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum DatasetSpec {
    /// Real Earnings-21 calls cut into segments.
    Earnings {
        /// Folder with nlp_references/, wer_tags/, normalizations/, bias_lists/, metadata.
        path: String,
        /// A folder whose `nlp_references/` and `wer_tags/` replace `path`'s (ConEC's corrected
        /// transcripts); the rest still comes from `path`.
        #[serde(default)]
        references: Option<String>,
        /// Named per-call lists: name → a folder of `<call>.txt` files (a word or phrase per
        /// line, optionally followed by a count, as ConEC's lists are), read as `list:NAME`.
        #[serde(default)]
        doc_lists: BTreeMap<String, String>,
        /// The dataset whose graph this one decodes with (same LM text and lexicon): a variant
        /// of a set shares its graph instead of building an identical one under another name.
        #[serde(default)]
        graph_of: Option<String>,
        /// The dataset whose text trains the LM.
        lm_text: String,
        /// Target segment length in seconds.
        #[serde(default = "default_segment")]
        segment_s: f64,
        /// Entity classes for NE metrics.
        #[serde(default = "default_classes")]
        entity_classes: Vec<String>,
        /// Documents of the quick subset, and how many segments of each.
        #[serde(default)]
        quick_docs: Vec<String>,
        /// Segments per quick document.
        #[serde(default = "default_quick_segments")]
        quick_segments: usize,
        /// LM settings.
        #[serde(default)]
        lm: LmSpec,
        /// Simulated acoustics (hybrid model).
        #[serde(default)]
        acoustic: AcousticSpec,
        /// Simulated acoustics (CTC model).
        #[serde(default)]
        acoustic_ctc: Option<CtcAcousticSpec>,
        /// Simulated RNN-T (the `e2e` module).
        #[serde(default)]
        acoustic_rnnt: Option<CtcAcousticSpec>,
        /// Simulated TDT.
        #[serde(default)]
        acoustic_tdt: Option<CtcAcousticSpec>,
        /// Simulated attention encoder-decoder.
        #[serde(default)]
        acoustic_aed: Option<CtcAcousticSpec>,
        /// Licence of the source.
        licence: String,
        /// One line on what it is.
        description: String,
    },
    /// Generated ATCO2-style traffic.
    AtcSim {
        /// Folder with callsign_table.tsv.gz, waypoints_europe.txt.gz, facilities.txt.
        resources: String,
        /// Seed.
        seed: u64,
        /// Number of utterances.
        utterances: usize,
        /// Mean aircraft in the radar area.
        radar_aircraft: f64,
        /// Mean dwell time in the area (s).
        #[serde(default = "default_dwell")]
        dwell_s: f64,
        /// Share of NO_CALLSIGN utterances.
        no_callsign_share: f64,
        /// Share of the minor operators the LM knows (sets the list OOV rate).
        known_minor_share: f64,
        /// Seconds per phone when deriving durations (speaking rate).
        phone_s: f64,
        /// Silence before and after each utterance (s).
        #[serde(default = "default_edge_sil")]
        edge_silence_s: f64,
        /// Utterances in the quick subset.
        #[serde(default = "default_quick_utts")]
        quick_utterances: usize,
        /// LM training sentences.
        #[serde(default = "default_lm_sentences")]
        lm_sentences: usize,
        /// Sector waypoints the LM phraseology never uses (rare words, 003 §3.3).
        #[serde(default)]
        rare_waypoints: usize,
        /// LM settings.
        #[serde(default)]
        lm: LmSpec,
        /// Simulated acoustics (hybrid model).
        #[serde(default)]
        acoustic: AcousticSpec,
        /// Simulated acoustics (CTC model).
        #[serde(default)]
        acoustic_ctc: Option<CtcAcousticSpec>,
        /// Simulated RNN-T (the `e2e` module).
        #[serde(default)]
        acoustic_rnnt: Option<CtcAcousticSpec>,
        /// Simulated TDT.
        #[serde(default)]
        acoustic_tdt: Option<CtcAcousticSpec>,
        /// Simulated attention encoder-decoder.
        #[serde(default)]
        acoustic_aed: Option<CtcAcousticSpec>,
        /// Licence of the resources.
        licence: String,
        /// One line on what it is.
        description: String,
    },
    /// A researcher's own model outputs, decoded as they are (no simulation).
    Files(Box<FilesSpec>),
    /// Recordings scored by a real acoustic model while decoding (no simulation).
    Audio(Box<AudioSpec>),
    /// Text used only to train LMs and BPE.
    LmText {
        /// A text file, one sentence per line (gzip allowed).
        path: String,
        /// Licence.
        licence: String,
        /// One line on what it is.
        description: String,
        /// How it was derived.
        #[serde(default)]
        derive: String,
    },
}

impl DatasetSpec {
    /// The `kind` tag as written in datasets.toml.
    pub fn kind_name(&self) -> &'static str {
        match self {
            DatasetSpec::Earnings { .. } => "earnings",
            DatasetSpec::AtcSim { .. } => "atc-sim",
            DatasetSpec::LmText { .. } => "lm-text",
            DatasetSpec::Files(_) => "files",
            DatasetSpec::Audio(_) => "audio",
        }
    }

    /// The one-line description.
    pub fn description(&self) -> &str {
        match self {
            DatasetSpec::Earnings { description, .. }
            | DatasetSpec::AtcSim { description, .. }
            | DatasetSpec::LmText { description, .. } => description,
            DatasetSpec::Files(f) => &f.description,
            DatasetSpec::Audio(a) => &a.description,
        }
    }

    /// Simulated-acoustics knobs (`None` for LM text).
    pub fn acoustic(&self) -> Option<&AcousticSpec> {
        match self {
            DatasetSpec::Earnings { acoustic, .. } | DatasetSpec::AtcSim { acoustic, .. } => {
                Some(acoustic)
            }
            DatasetSpec::LmText { .. } | DatasetSpec::Files(_) | DatasetSpec::Audio(_) => None,
        }
    }

    /// Simulated-CTC knobs (`None` when the dataset has none calibrated, and for LM text and
    /// files).
    pub fn acoustic_ctc(&self) -> Option<&CtcAcousticSpec> {
        match self {
            DatasetSpec::Earnings { acoustic_ctc, .. }
            | DatasetSpec::AtcSim { acoustic_ctc, .. } => acoustic_ctc.as_ref(),
            DatasetSpec::LmText { .. } | DatasetSpec::Files(_) | DatasetSpec::Audio(_) => None,
        }
    }

    /// Knobs of the simulated end-to-end model of `kind` (`[<dataset>.acoustic_ctc]`,
    /// `acoustic_rnnt`, `acoustic_tdt`, `acoustic_aed`); `None` when not calibrated.
    pub fn acoustic_e2e(&self, kind: E2eKind) -> Option<&CtcAcousticSpec> {
        match self {
            DatasetSpec::Earnings {
                acoustic_ctc,
                acoustic_rnnt,
                acoustic_tdt,
                acoustic_aed,
                ..
            }
            | DatasetSpec::AtcSim {
                acoustic_ctc,
                acoustic_rnnt,
                acoustic_tdt,
                acoustic_aed,
                ..
            } => match kind {
                E2eKind::Ctc => acoustic_ctc.as_ref(),
                E2eKind::Rnnt => acoustic_rnnt.as_ref(),
                E2eKind::Tdt => acoustic_tdt.as_ref(),
                E2eKind::Aed => acoustic_aed.as_ref(),
            },
            DatasetSpec::LmText { .. } | DatasetSpec::Files(_) | DatasetSpec::Audio(_) => None,
        }
    }

    /// The dataset whose graph this one decodes with: `graph_of` where set, else itself.
    pub fn graph_of<'a>(&'a self, name: &'a str) -> &'a str {
        match self {
            DatasetSpec::Earnings {
                graph_of: Some(g), ..
            } => g,
            _ => name,
        }
    }

    /// LM settings (defaults for LM text).
    pub fn lm(&self) -> LmSpec {
        match self {
            DatasetSpec::Earnings { lm, .. } | DatasetSpec::AtcSim { lm, .. } => lm.clone(),
            DatasetSpec::LmText { .. } | DatasetSpec::Files(_) | DatasetSpec::Audio(_) => {
                LmSpec::default()
            }
        }
    }
}

/// Which kind of model produced the scores of a `files` dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Hybrid (Kaldi nnet3/chain, GMM): pdf log-likelihoods, decoded with an HCLG.
    Hybrid,
    /// CTC: token log-probabilities (blank one of the columns), decoded with a TLG.
    Ctc,
}

/// A `kind = "files"` registry entry: everything needed to decode and score a researcher's own
/// model outputs. Paths are relative to the registry's folder (absolute paths stay as they are).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSpec {
    /// `hybrid` or `ctc`.
    pub model: ModelKind,
    /// The decoding graph: OpenFst binary (vector or const) HCLG or TLG.
    pub graph: String,
    /// The graph's output symbols (`words.txt`).
    pub words: String,
    /// Scores: a Kaldi `.ark` (text or binary), an `.scp`, or a folder of `<utt>.npy`.
    pub scores: String,
    /// A Kaldi data directory (`text`; `utt2dur`, `segments` or `wav.scp`; optional `utt2spk`).
    pub data: String,
    /// Kaldi model (`final.mdl`, text or binary) whose transition model maps the graph's
    /// transition-ids to pdf-ids.
    #[serde(default)]
    pub transition_model: Option<String>,
    /// Or a two-column `transition-id pdf-id` text map.
    #[serde(default)]
    pub pdf_map: Option<String>,
    /// Or a two-column `graph-input-label score-column` text map (e.g. a TLG whose token ids are
    /// not the model's column + 1).
    #[serde(default)]
    pub label_map: Option<String>,
    /// CTC: the graph's input symbols (`tokens.txt`), used to name the blank.
    #[serde(default)]
    pub tokens: Option<String>,
    /// CTC: the blank's score column (default: the column of `<blk>`/`<blank>` in `tokens`, else 0).
    #[serde(default)]
    pub blank: Option<u32>,
    /// Seconds per score row (default 0.01 hybrid, 0.04 CTC; 0.03 for chain models).
    #[serde(default)]
    pub frame_shift_s: Option<f64>,
    /// Acoustic scale (default 0.1 hybrid, 1.0 CTC and chain models).
    #[serde(default)]
    pub acoustic_scale: Option<f64>,
    /// Score columns that are silence (hybrid: silence pdfs), for endpointing.
    #[serde(default)]
    pub silence_columns: Vec<u32>,
    /// Hybrid without a transition model: the acoustic model's output width, where it is wider
    /// than the graph's largest input label (pdfs the graph never reads). Without it, scores
    /// must have exactly as many columns as the graph reads: a wider matrix is far more often
    /// an off-by-one or another model's scores than unused pdfs.
    #[serde(default)]
    pub score_columns: Option<usize>,
    /// Per-utterance entities (`utt<TAB>[CLASS] words|...`, as `ctxbench score --entities`).
    #[serde(default)]
    pub entities: Option<String>,
    /// Entity classes NE-WER counts (default: every class in `entities`).
    #[serde(default)]
    pub entity_classes: Vec<String>,
    /// Charge insertions inside an entity span to the entity (ATC callsigns; default: never,
    /// as fstalign scores Earnings).
    #[serde(default)]
    pub ne_insertions_inside: bool,
    /// Also score as the LibriSpeech biasing benchmark's `score.py` (Le et al. 2021): each
    /// utterance's entity words are its biased words; adds `fbai_wer`, `fbai_u_wer`, `fbai_b_wer`.
    #[serde(default)]
    pub fbai_scoring: bool,
    /// Biasing lists, one phrase per line, by scope: one global list under the name `global`.
    #[serde(default)]
    pub bias_list: Option<String>,
    /// Per-utterance lists: a table `utt<TAB>phrase|phrase|...`.
    #[serde(default)]
    pub bias_utt: Option<String>,
    /// Per-document lists: a folder of `<recording>.txt` files (documents from `segments`).
    #[serde(default)]
    pub bias_docs: Option<String>,
    /// Further global lists by name (`{ rare = "lists/rare.txt" }`).
    #[serde(default)]
    pub lists: BTreeMap<String, String>,
    /// The ARPA LM the graph's G was built from (only on-the-fly-lm G-boosting needs it).
    #[serde(default)]
    pub lm: Option<String>,
    /// Refuse an utterance of `text` that has no scores (default: report it and leave it out).
    #[serde(default)]
    pub strict: bool,
    /// Licence of the data.
    #[serde(default)]
    pub licence: String,
    /// One line on what it is.
    #[serde(default)]
    pub description: String,
}

/// A `kind = "audio"` registry entry: recordings, their transcripts and what decoding them
/// needs besides (a CMU Sphinx semi-continuous model, a lexicon in its phones, an ARPA LM). The
/// runner scores the audio with the model while decoding and builds (and caches) the HCLG, so
/// a figure on it is real from WAV to WER. Paths are relative to the registry's folder.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudioSpec {
    /// The acoustic model's folder (`mdef`, `means`, `variances`, `sendump`,
    /// `transition_matrices`, `feat.params`, `noisedict`; each may be gzipped).
    pub model: String,
    /// A Kaldi data directory: `wav.scp` (16-bit mono WAVs at the model's rate; a relative
    /// path is relative to the data directory) and, unless `text_of` says otherwise, `text`.
    pub data: String,
    /// The recordings speak utterances of this built-in dataset (same ids): transcripts,
    /// entities, lists, LM and lexicon are its own, so the real model and the simulator are
    /// held against each other on the same text. Exclusive with `lexicon` and `lm`.
    #[serde(default)]
    pub text_of: Option<String>,
    /// The command that makes the recordings (or the lexicon and LM) where they are not
    /// committed (e.g. `make earnings21-tts`), named in the error when they are missing.
    #[serde(default)]
    pub made_by: Option<String>,
    /// Pronunciations in the model's base phones (`word phone phone ...`).
    #[serde(default)]
    pub lexicon: Option<String>,
    /// The ARPA LM G is built from.
    #[serde(default)]
    pub lm: Option<String>,
    /// More pronunciations (`word phone phone ...`, the model's base phones) for the words of
    /// open-vocabulary contexts that the lexicon lacks (e.g. a list's rare words, by a G2P);
    /// they come first where both have a word.
    #[serde(default)]
    pub context_lexicon: Option<String>,
    /// LM weight against the acoustic log-likelihoods, default 8.5 (pocketsphinx's
    /// `-fwdflatlw`, the weight of its flat whole-word pass, which is the search an HCLG
    /// performs; its `-lw` 6.5 weighs the lexicon-tree pass): the decoder's acoustic scale is
    /// its inverse, and the HMMs' transition costs count at the same scale.
    #[serde(default = "default_language_weight")]
    pub language_weight: f64,
    /// The language weight of a last pass over each utterance's word lattice, as pocketsphinx's
    /// `-bestpathlw` (its default 9.5): the 1-best is the lattice's cheapest path with graph
    /// costs weighted by this / `language_weight`. Unset: the search's own 1-best.
    #[serde(default)]
    pub bestpath_language_weight: Option<f64>,
    /// Phone context of the graph: `cross-word` (triphones across word boundaries, as
    /// pocketsphinx decodes; the default) or `word-internal` (word-edge phones see silence).
    #[serde(default = "default_phone_context")]
    pub phone_context: String,
    /// Probability of a silence between words, as pocketsphinx's `-silprob` (default 0.005):
    /// like pocketsphinx, it is not scaled by the language weight, so the graph charges
    /// −ln p / `language_weight`.
    #[serde(default = "default_silence_prob")]
    pub silence_prob: f64,
    /// Probability of a filler (the model's noise phones) between words, as pocketsphinx's
    /// `-fillprob` (default 1e-8); 0 leaves fillers out of the graph.
    #[serde(default = "default_filler_prob")]
    pub filler_prob: f64,
    /// Word insertion probability, as pocketsphinx's `-wip` (default 0.65): every word costs
    /// −ln p / `language_weight` in the graph.
    #[serde(default = "default_word_insertion_prob")]
    pub word_insertion_prob: f64,
    /// Per-utterance entities (`utt<TAB>[CLASS] words|...`).
    #[serde(default)]
    pub entities: Option<String>,
    /// Entity classes NE-WER counts (default: every class in `entities`).
    #[serde(default)]
    pub entity_classes: Vec<String>,
    /// Charge insertions inside an entity span to the entity.
    #[serde(default)]
    pub ne_insertions_inside: bool,
    /// Also score as the LibriSpeech biasing benchmark's `score.py` (Le et al. 2021): each
    /// utterance's entity words are its biased words; adds `fbai_wer`, `fbai_u_wer`, `fbai_b_wer`.
    #[serde(default)]
    pub fbai_scoring: bool,
    /// The recordings pass through a radio channel before the model hears them (band-pass,
    /// compressor and clipper, in-band noise at `snr_db`): clean speech at the difficulty of
    /// ATC radio, the noise seeded by utterance.
    #[serde(default)]
    pub channel: Option<crate::radio::RadioChannel>,
    /// One global biasing list, one phrase per line.
    #[serde(default)]
    pub bias_list: Option<String>,
    /// Per-utterance lists: a table `utt<TAB>phrase|phrase|...`.
    #[serde(default)]
    pub bias_utt: Option<String>,
    /// Per-document lists: a folder of `<recording>.txt` files.
    #[serde(default)]
    pub bias_docs: Option<String>,
    /// Further global lists by name.
    #[serde(default)]
    pub lists: BTreeMap<String, String>,
    /// Licence of the audio, text and model.
    #[serde(default)]
    pub licence: String,
    /// One line on what it is.
    #[serde(default)]
    pub description: String,
}

/// Where a dataset without simulation keeps its transcripts, entities and lists (`files` and
/// `audio` entries share them).
#[derive(Debug, Clone, Copy)]
pub struct TextSources<'a> {
    /// The Kaldi data directory.
    pub data: &'a str,
    /// Per-utterance entities.
    pub entities: Option<&'a str>,
    /// One global list.
    pub bias_list: Option<&'a str>,
    /// Per-utterance lists.
    pub bias_utt: Option<&'a str>,
    /// Per-document lists.
    pub bias_docs: Option<&'a str>,
    /// Further global lists by name.
    pub lists: &'a BTreeMap<String, String>,
}

impl FilesSpec {
    /// Its transcripts, entities and lists.
    pub fn sources(&self) -> TextSources<'_> {
        TextSources {
            data: &self.data,
            entities: self.entities.as_deref(),
            bias_list: self.bias_list.as_deref(),
            bias_utt: self.bias_utt.as_deref(),
            bias_docs: self.bias_docs.as_deref(),
            lists: &self.lists,
        }
    }
}

impl AudioSpec {
    /// `data/wav.scp`, or an error saying what makes it when it is missing.
    pub fn wav_scp(&self, reg: &Registry) -> Result<PathBuf, RegistryError> {
        let scp = reg.resolve(&self.data).join("wav.scp");
        if scp.exists() {
            return Ok(scp);
        }
        Err(RegistryError::Invalid {
            path: scp.clone(),
            message: match &self.made_by {
                Some(cmd) => format!("the recordings are not there yet: `{cmd}` makes them"),
                None => "an audio dataset lists its recordings here (`utt path.wav`)".into(),
            },
        })
    }

    /// Its transcripts, entities and lists.
    pub fn sources(&self) -> TextSources<'_> {
        TextSources {
            data: &self.data,
            entities: self.entities.as_deref(),
            bias_list: self.bias_list.as_deref(),
            bias_utt: self.bias_utt.as_deref(),
            bias_docs: self.bias_docs.as_deref(),
            lists: &self.lists,
        }
    }
}

fn default_phone_context() -> String {
    "cross-word".into()
}

fn default_silence_prob() -> f64 {
    0.005
}

fn default_filler_prob() -> f64 {
    1e-8
}

fn default_word_insertion_prob() -> f64 {
    0.65
}

fn default_language_weight() -> f64 {
    8.5
}
fn default_segment() -> f64 {
    180.0
}
fn default_classes() -> Vec<String> {
    vec!["PERSON".into(), "ORG".into()]
}
fn default_quick_segments() -> usize {
    2
}
fn default_dwell() -> f64 {
    2400.0
}
fn default_edge_sil() -> f64 {
    0.2
}
fn default_quick_utts() -> usize {
    60
}
fn default_lm_sentences() -> usize {
    40_000
}

/// The parsed registry.
#[derive(Debug, Clone)]
pub struct Registry {
    /// The repository root (paths in the specs are relative to it).
    pub root: PathBuf,
    /// The file it came from.
    pub path: PathBuf,
    /// Datasets by name.
    pub datasets: BTreeMap<String, DatasetSpec>,
}

/// A registry parse error with the dataset and key it is about: an entry is read through its
/// `kind` tag, which hides from the parser's message which key of the table had the wrong
/// value (`frame_shift_s = "0.03"` was reported at the table's header). Each key of the failing
/// entry is left out in turn; the one whose absence changes the error is named.
fn explain(table: &toml::Table, e: toml::de::Error) -> String {
    use serde::Deserialize;
    let message = e.to_string();
    let read = |t: &toml::Table| DatasetSpec::deserialize(toml::Value::Table(t.clone()));
    for (name, entry) in table {
        let Some(entry) = entry.as_table() else {
            continue;
        };
        let Err(first) = read(entry) else {
            continue;
        };
        let first = first.to_string();
        for key in entry.keys().filter(|k| *k != "kind") {
            let mut without = entry.clone();
            without.remove(key);
            let culprit = match read(&without) {
                Ok(_) => true,
                Err(e) => {
                    let e = e.to_string();
                    e != first && e.contains(&format!("missing field `{key}`"))
                }
            };
            if culprit {
                let value = entry[key].to_string();
                return format!(
                    "[{name}] {key} = {value}: {}",
                    first.trim().lines().last().unwrap_or(&first)
                );
            }
        }
        return format!("[{name}]: {}", first.trim());
    }
    message
}

/// Expands `like = "NAME"` entries: an entry takes every top-level key of NAME's entry that it
/// does not set itself (a sub-table such as `acoustic` whole), so a variant of a set (ConEC's
/// corrected Earnings-21) states only what differs. Chains resolve; a cycle or an unknown name is
/// an error naming the entry.
fn expand_like(table: &mut toml::Table) -> Result<(), String> {
    let names: Vec<String> = table.keys().cloned().collect();
    for name in names {
        let mut seen = vec![name.clone()];
        while let Some(like) = table
            .get(&name)
            .and_then(toml::Value::as_table)
            .and_then(|e| e.get("like"))
        {
            let base_name = like
                .as_str()
                .ok_or_else(|| format!("[{name}] like = {like}: expected a dataset name"))?
                .to_string();
            if seen.contains(&base_name) {
                return Err(format!(
                    "[{name}] like = \"{base_name}\": a cycle ({} -> {base_name})",
                    seen.join(" -> ")
                ));
            }
            let base = table
                .get(&base_name)
                .and_then(toml::Value::as_table)
                .cloned()
                .ok_or_else(|| format!("[{name}] like = \"{base_name}\": no such dataset"))?;
            seen.push(base_name);
            let entry = table
                .get_mut(&name)
                .and_then(toml::Value::as_table_mut)
                .expect("checked above");
            entry.remove("like");
            for (k, v) in base {
                entry.entry(k).or_insert(v);
            }
        }
    }
    Ok(())
}

impl Registry {
    /// Reads `datasets.toml`; an error names the dataset and, for a value of the wrong type, the
    /// key.
    pub fn read(path: &Path) -> Result<Self, RegistryError> {
        use serde::Deserialize;
        let text = ctx_core::io::read_text(path)?;
        let invalid = |message: String| RegistryError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        expand_like(&mut table).map_err(invalid)?;
        let datasets =
            BTreeMap::<String, DatasetSpec>::deserialize(toml::Value::Table(table.clone()))
                .map_err(|e| invalid(explain(&table, e)))?;
        let root = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Ok(Self {
            root,
            path: path.to_path_buf(),
            datasets,
        })
    }

    /// Finds `datasets.toml` in `start` or its ancestors and reads it.
    pub fn discover(start: &Path) -> Result<Self, RegistryError> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            let p = d.join("datasets.toml");
            if p.exists() {
                return Self::read(&p);
            }
            dir = d.parent();
        }
        Err(RegistryError::Invalid {
            path: start.join("datasets.toml"),
            message: "no datasets.toml here or in any parent folder".into(),
        })
    }

    /// The spec of `name`.
    pub fn get(&self, name: &str) -> Result<&DatasetSpec, RegistryError> {
        self.datasets
            .get(name)
            .ok_or_else(|| RegistryError::Unknown {
                path: self.path.clone(),
                name: name.to_string(),
                known: self.datasets.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// A path of a spec, resolved against the root.
    pub fn resolve(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

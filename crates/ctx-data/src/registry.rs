//! The dataset registry: `datasets.toml` parsed into typed specs (DESIGN.md §2, §6).
//!
//! Each table names a dataset. Kinds: `earnings` (real Earnings-21 calls cut into segments),
//! `atc-sim` (generated ATCO2-style traffic), `lm-text` (text for LM/BPE training only).
//! Paths are relative to the repository root (the folder holding datasets.toml).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Simulated-acoustics knobs of a dataset (DESIGN.md §5); calibrated once per dataset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcousticSpec {
    /// Base noise level (standard deviation of the per-frame score noise, in nats).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// Spread of the per-utterance noise level (log-normal sigma).
    #[serde(default = "default_noise_spread")]
    pub noise_spread: f64,
    /// Probability of a phone-confusion event per phone at the base noise level.
    #[serde(default = "default_confusion")]
    pub confusion: f64,
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

impl Default for AcousticSpec {
    fn default() -> Self {
        Self {
            noise: default_noise(),
            noise_spread: default_noise_spread(),
            confusion: default_confusion(),
            seed: default_seed(),
        }
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
}

fn default_order() -> usize {
    3
}

impl Default for LmSpec {
    fn default() -> Self {
        Self {
            order: 3,
            prune: Vec::new(),
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
        /// Simulated acoustics.
        #[serde(default)]
        acoustic: AcousticSpec,
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
        /// Simulated acoustics.
        #[serde(default)]
        acoustic: AcousticSpec,
        /// Licence of the resources.
        licence: String,
        /// One line on what it is.
        description: String,
    },
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
        }
    }

    /// The one-line description.
    pub fn description(&self) -> &str {
        match self {
            DatasetSpec::Earnings { description, .. }
            | DatasetSpec::AtcSim { description, .. }
            | DatasetSpec::LmText { description, .. } => description,
        }
    }

    /// Simulated-acoustics knobs (`None` for LM text).
    pub fn acoustic(&self) -> Option<&AcousticSpec> {
        match self {
            DatasetSpec::Earnings { acoustic, .. } | DatasetSpec::AtcSim { acoustic, .. } => {
                Some(acoustic)
            }
            DatasetSpec::LmText { .. } => None,
        }
    }

    /// LM settings (defaults for LM text).
    pub fn lm(&self) -> LmSpec {
        match self {
            DatasetSpec::Earnings { lm, .. } | DatasetSpec::AtcSim { lm, .. } => lm.clone(),
            DatasetSpec::LmText { .. } => LmSpec::default(),
        }
    }
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

impl Registry {
    /// Reads `datasets.toml`.
    pub fn read(path: &Path) -> Result<Self, RegistryError> {
        let text = ctx_core::io::read_text(path)?;
        let datasets: BTreeMap<String, DatasetSpec> =
            toml::from_str(&text).map_err(|e| RegistryError::Invalid {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
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

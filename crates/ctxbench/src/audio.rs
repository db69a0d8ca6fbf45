//! `kind = "audio"` datasets: recordings scored by a real acoustic model (CMU Sphinx
//! semi-continuous, `sphinx-am`) while they are decoded, and the HCLG over the model's senones
//! built from the entry's lexicon and LM (cached like every graph). Nothing simulated: a figure
//! on such a dataset is real from WAV to WER.

use anyhow::{anyhow, bail, Context, Result};
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconFormat};
use ctx_core::scores::ScoreMatrix;
use ctx_data::radio::RadioChannel;
use ctx_data::registry::{AudioSpec, Registry};
use ctx_graph::cache::{CacheKey, GraphCache};
use ctx_graph::compile::{Graph, GraphKind};
use ctx_graph::gboost::{GBoost, GBoostReport};
use sphinx_am::{AudioScorer, Model};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the G-boosting report of a boosted audio graph is kept beside it.
const GBOOST_REPORT: &str = "gboost.json";
/// Bumped when the audio graph recipe (sphinx-am's triphones, silence, G) changes.
const AUDIO_GRAPH_VERSION: &str = "sphinx-am-hclg/2";

/// The acoustic model of an audio dataset and where each utterance's recording is.
pub struct AudioModel {
    scorer: Box<AudioScorer>,
    wavs: HashMap<String, PathBuf>,
    /// The radio channel the recordings pass through first (the entry's `channel`).
    pub channel: Option<RadioChannel>,
    /// Senones: the columns of every score matrix.
    pub width: usize,
    /// Score columns of the model's silence phone.
    pub silence_columns: Vec<u32>,
    /// The decoder's acoustic scale (the inverse of the entry's language weight).
    pub acoustic_scale: f32,
    /// How open-vocabulary contexts' words become the model's triphones (built when the
    /// graph has the class slot).
    pub speller: Option<Box<ContextSpeller>>,
}

/// Spells a context's words in the model's phones (open-vocabulary contexts on the real model): each word's
/// pronunciation from the entry's `context_lexicon`, else its lexicon, as word-internal
/// triphones with silence beyond the word's edges.
pub struct ContextSpeller {
    model: Model,
    /// Every phone of the model as a unit, with its HMM.
    pub units: sphinx_am::hclg::PhoneUnits,
    prons: HashMap<String, Vec<String>>,
    /// Words pronounced by `context_lexicon`.
    pub from_context_lexicon: usize,
}

impl ContextSpeller {
    /// The speller of entry `name`: its model, lexicon and `context_lexicon`.
    pub fn load(reg: &Registry, name: &str, spec: &AudioSpec) -> Result<Self> {
        let model = load_model(reg, spec)?;
        let (_, words) = audio_lm(reg, name, spec)?;
        let mut prons: HashMap<String, Vec<String>> = HashMap::new();
        let mut from_context_lexicon = 0;
        if let Some(p) = &spec.context_lexicon {
            let lex = Lexicon::read(&entry_file(reg, name, spec, p)?, LexiconFormat::Kaldi)
                .with_context(|| format!("dataset {name}: context_lexicon"))?;
            for e in lex.entries() {
                if let Some(ph) = e.phones.iter().find(|ph| model.mdef.ci(ph).is_none()) {
                    bail!(
                        "dataset {name}: context_lexicon {p}: word '{}': phone {ph} is not in the model",
                        e.word
                    );
                }
                if !prons.contains_key(&e.word) {
                    prons.insert(e.word.clone(), e.phones.clone());
                    from_context_lexicon += 1;
                }
            }
        }
        for e in words.entries() {
            prons
                .entry(e.word.clone())
                .or_insert_with(|| e.phones.clone());
        }
        // A context's HMMs weigh their transitions as the entry's graph does.
        let mut units = sphinx_am::hclg::PhoneUnits::new(&model)?;
        units
            .hmms
            .scale_costs(graph_options(name, spec)?.transition_scale);
        Ok(Self {
            units,
            model,
            prons,
            from_context_lexicon,
        })
    }

    /// `word` in the model's phone units (`None`: no pronunciation, or a phone the model lacks).
    pub fn spell(&self, word: &str) -> Option<Vec<u32>> {
        self.units.spell(&self.model, self.prons.get(word)?)
    }
}

impl AudioModel {
    /// Loads the entry's model and reads `wav.scp`; every utterance in `ids` must have a
    /// recording there (named otherwise). `snr_db` overrides the SNR of the entry's radio
    /// channel (a calibration sweep; refused for an entry without one).
    pub fn load<'a>(
        reg: &Registry,
        name: &str,
        spec: &AudioSpec,
        ids: impl IntoIterator<Item = &'a str>,
        snr_db: Option<f64>,
    ) -> Result<Self> {
        let channel = match (&spec.channel, snr_db) {
            (Some(c), snr) => {
                let c = snr.map_or_else(|| c.clone(), |s| c.with_snr(s));
                c.check().with_context(|| format!("dataset {name}: channel"))?;
                Some(c)
            }
            (None, Some(s)) => bail!(
                "dataset {name}: snr_db {s} asked for, but the entry has no radio channel ([{name}.channel])"
            ),
            (None, None) => None,
        };
        let model = load_model(reg, spec)?;
        let data = reg.resolve(&spec.data);
        if data.join("segments").exists() {
            bail!(
                "dataset {name}: {}/segments: audio datasets read whole recordings, one per utterance (cut them into WAVs first)",
                spec.data
            );
        }
        let scp = spec.wav_scp(reg)?;
        let table = ctx_core::corpus::read_text_table(&scp).with_context(|| {
            format!(
                "dataset {name}: an audio dataset needs {}/wav.scp",
                spec.data
            )
        })?;
        let mut wavs = HashMap::new();
        for (id, f) in table {
            if f.len() != 1 {
                bail!(
                    "{}: utterance {id}: expected one WAV path, found {} fields (piped commands are not read)",
                    scp.display(),
                    f.len()
                );
            }
            wavs.insert(id, ctx_core::corpus::resolve_wav(&data, &f[0]));
        }
        for id in ids {
            if !wavs.contains_key(id) {
                bail!(
                    "{}: utterance {id} of {}/text has no recording",
                    scp.display(),
                    spec.data
                );
            }
        }
        graph_options(name, spec)?;
        Ok(Self {
            scorer: Box::new(AudioScorer::new(&model)?),
            wavs,
            channel,
            width: model.mdef.n_senone,
            silence_columns: sphinx_am::graph::silence_senones(&model),
            acoustic_scale: (1.0 / spec.language_weight) as f32,
            speller: None,
        })
    }

    /// The senone log-likelihoods of an utterance's recording.
    pub fn scores(&self, id: &str) -> Result<ScoreMatrix> {
        let wav = self
            .wavs
            .get(id)
            .ok_or_else(|| anyhow!("utterance {id} has no recording in wav.scp"))?;
        let rate = self.scorer.sample_rate();
        let samples = sphinx_am::audio::read_wav(wav, rate)?;
        let m = match &self.channel {
            // The noise follows the recording, not the id: two entries reading one recording
            // under their own ids (atco2-radio-1h and its -rare twin) hear the same noise.
            Some(c) => {
                let file = wav.file_name().map_or_else(
                    || wav.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                );
                self.scorer.score_samples(&c.apply(&file, &samples, rate))?
            }
            None => self.scorer.score_samples(&samples)?,
        };
        if m.rows() == 0 {
            bail!("{}: utterance {id}: too short for one frame", wav.display());
        }
        Ok(m)
    }
}

/// A file an entry names (its lexicon, LM), resolved; missing, an error naming the entry, the
/// file and the command that makes it (`made_by`).
fn entry_file(reg: &Registry, name: &str, spec: &AudioSpec, file: &str) -> Result<PathBuf> {
    let p = reg.resolve(file);
    if p.exists() {
        return Ok(p);
    }
    match &spec.made_by {
        Some(cmd) => bail!(
            "dataset {name}: {} is not there yet: `{cmd}` makes it",
            p.display()
        ),
        None => bail!("dataset {name}: {} does not exist", p.display()),
    }
}

fn load_model(reg: &Registry, spec: &AudioSpec) -> Result<Model> {
    Ok(Model::load(&reg.resolve(&spec.model))?)
}

/// The LM and lexicon of an audio entry: its own files, or those of the dataset it speaks
/// (`text_of`: the LM and pronunciations the simulated hybrid graph of that dataset uses).
pub fn audio_lm(reg: &Registry, name: &str, spec: &AudioSpec) -> Result<(ArpaLm, Lexicon)> {
    check_sources(name, spec)?;
    match (&spec.text_of, &spec.lexicon, &spec.lm) {
        (Some(src), None, None) => Ok(ctx_data::graphs::dataset_lexicon(
            reg,
            src,
            GraphKind::Hclg,
            ctx_data::graphs::DEFAULT_BPE_SIZE,
            ctx_data::dataset::Subset::Full,
        )?),
        (None, Some(lex), Some(lm)) => Ok((
            ArpaLm::read(&entry_file(reg, name, spec, lm)?)?,
            Lexicon::read(&entry_file(reg, name, spec, lex)?, LexiconFormat::Kaldi)?,
        )),
        _ => unreachable!("checked by check_sources"),
    }
}

/// The entry's graph settings (`phone_context`, `silence_prob`, `filler_prob`,
/// `word_insertion_prob` at its `language_weight`, as pocketsphinx reads them), checked.
fn graph_options(name: &str, spec: &AudioSpec) -> Result<sphinx_am::graph::GraphOptions> {
    let context = sphinx_am::graph::PhoneContext::parse(&spec.phone_context).ok_or_else(|| {
        anyhow!(
            "dataset {name}: phone_context '{}' is neither cross-word nor word-internal",
            spec.phone_context
        )
    })?;
    for (key, p, zero_ok) in [
        ("silence_prob", spec.silence_prob, false),
        ("filler_prob", spec.filler_prob, true),
        ("word_insertion_prob", spec.word_insertion_prob, false),
    ] {
        if !((p > 0.0 || (zero_ok && p == 0.0)) && p <= 1.0) {
            bail!("dataset {name}: {key} {p} must be a probability in (0, 1]");
        }
    }
    let lw = check_language_weight(name, spec)?;
    let filler = (spec.filler_prob > 0.0).then_some(spec.filler_prob as f32);
    Ok(sphinx_am::graph::GraphOptions {
        context,
        ..sphinx_am::graph::GraphOptions::from_probs(
            lw,
            spec.silence_prob as f32,
            filler,
            spec.word_insertion_prob as f32,
        )
    })
}

/// The graph weight of the lattice pass (`bestpath_language_weight` / `language_weight`),
/// checked; `None` without the key.
pub fn bestpath_graph_scale(name: &str, spec: &AudioSpec) -> Result<Option<f32>> {
    let Some(b) = spec.bestpath_language_weight else {
        return Ok(None);
    };
    if !(b.is_finite() && b > 0.0) {
        bail!("dataset {name}: bestpath_language_weight {b} must be finite and positive");
    }
    Ok(Some((b / check_language_weight(name, spec)? as f64) as f32))
}

fn check_language_weight(name: &str, spec: &AudioSpec) -> Result<f32> {
    if !(spec.language_weight.is_finite() && spec.language_weight > 0.0) {
        bail!(
            "dataset {name}: language_weight {} must be a positive number",
            spec.language_weight
        );
    }
    Ok(spec.language_weight as f32)
}

/// An entry gives either `text_of` or both `lexicon` and `lm` (checked before any cache is
/// consulted, so a cached graph never hides a contradictory entry).
fn check_sources(name: &str, spec: &AudioSpec) -> Result<()> {
    match (&spec.text_of, &spec.lexicon, &spec.lm) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => Ok(()),
        _ => bail!(
            "dataset {name}: an audio entry gives either text_of (the dataset its recordings speak) or both lexicon and lm"
        ),
    }
}

/// The entry's HCLG (optionally G-boosted), from the cache under `cache` or built and stored
/// there. Keyed by the model's files, the lexicon and LM (or the LM text of `text_of`), and
/// the boost and the context slot (its entry cost).
pub fn audio_graph(
    reg: &Registry,
    name: &str,
    spec: &AudioSpec,
    gboost: Option<&GBoost>,
    context_slot: Option<f32>,
    cache: &Path,
) -> Result<(Graph, Option<GBoostReport>)> {
    check_sources(name, spec)?;
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let mut key = CacheKey::new();
    key.add("audio-graph", AUDIO_GRAPH_VERSION.as_bytes());
    let model_dir = reg.resolve(&spec.model);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&model_dir)
        .with_context(|| format!("dataset {name}: model folder {}", model_dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in &files {
        let n = f.file_name().unwrap_or_default().to_string_lossy();
        key.add(&n, &read(f)?);
    }
    match (&spec.text_of, &spec.lexicon, &spec.lm) {
        (Some(src), _, _) => {
            // What decides the source's LM and pronunciations: its LM text and LM settings,
            // and the shipped pronouncer.
            let ds = ctx_data::dataset::Dataset::load(reg, src, ctx_data::dataset::Subset::Full)?;
            key.add("text-of", src.as_bytes());
            for l in &ds.lm_text {
                key.add("s", l.as_bytes());
            }
            key.add("lm-spec", reg.get(src)?.lm().cache_key().as_bytes());
        }
        (None, Some(lex), Some(lm)) => {
            key.add("lexicon", &read(&entry_file(reg, name, spec, lex)?)?);
            key.add("lm", &read(&entry_file(reg, name, spec, lm)?)?);
        }
        _ => unreachable!("checked by check_sources"),
    }
    let opts = sphinx_am::graph::GraphOptions {
        context_slot,
        ..graph_options(name, spec)?
    };
    if let Some(c) = context_slot {
        key.add("context-slot", &c.to_le_bytes());
    }
    key.add("phone-context", opts.context.name().as_bytes());
    key.add("silence-cost", &opts.silence_cost.to_le_bytes());
    key.add(
        "filler-cost",
        &opts.filler_cost.unwrap_or(-1.0).to_le_bytes(),
    );
    key.add("word-cost", &opts.word_cost.to_le_bytes());
    key.add("transition-scale", &opts.transition_scale.to_le_bytes());
    if let Some(b) = gboost {
        key.add("gboost-discount", &b.discount.to_le_bytes());
        for p in &b.phrases {
            key.add("gboost-phrase", p.join(" ").as_bytes());
        }
    }
    let cache = GraphCache::new(cache);
    let report_path = cache.entry(GraphKind::Hclg, &key).join(GBOOST_REPORT);
    if gboost.is_none() || report_path.exists() {
        if let Some(g) = cache.load(GraphKind::Hclg, &key)? {
            let report = match gboost {
                Some(_) => Some(
                    serde_json::from_str(&std::fs::read_to_string(&report_path)?)
                        .with_context(|| format!("{}", report_path.display()))?,
                ),
                None => None,
            };
            return Ok((g, report));
        }
    }
    let model = load_model(reg, spec)?;
    let (lm, words) = audio_lm(reg, name, spec)?;
    let (graph, report) = sphinx_am::graph::build_hclg(&model, &words, &lm, gboost, &opts)
        .with_context(|| format!("building the HCLG of {name}"))?;
    let dir = cache.store(&key, &graph)?;
    if let Some(r) = &report.gboost {
        let text = serde_json::to_string_pretty(r)?;
        ctx_core::io::write_atomic(&dir.join(GBOOST_REPORT), |w| {
            std::io::Write::write_all(w, text.as_bytes())
        })?;
    }
    Ok((graph, report.gboost))
}

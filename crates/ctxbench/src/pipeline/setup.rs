//! A setup: a dataset loaded with its decoding graph (through the cache, boosted statically
//! when asked) and its acoustic model (simulated, real audio, or a researcher's score files),
//! and how its hypotheses are scored.

use crate::pipeline::files_checks::{
    check_files_settings, keep_scored, label_map_of, warn_ctc_like,
};
use crate::pipeline::lists::static_list;
use crate::pipeline::otf_lm::OtfGBoost;
use anyhow::{anyhow, bail, Context, Result};
use ctx_core::bias::BiasList;
use ctx_core::metrics::score::NeInsertions;
use ctx_core::scores::ScoreMatrix;
use ctx_data::acoustic::{CtcSim, HybridSim};
use ctx_data::bpe::Bpe;
use ctx_data::dataset::{shipped_pronouncer, Dataset, Subset, Utterance};
use ctx_data::graphs::dataset_graph_with;
use ctx_data::pronounce::Pronouncer;
use ctx_data::registry::Registry;
use ctx_graph::biasing::build_biasing_fst;
use ctx_graph::compile::{compose_with_biasing, Graph, GraphKind};
use ctx_graph::csr::DecodingGraph;
use ctx_graph::gboost::{GBoost, GBoostReport};
use ctx_graph::hmm::HmmTopology;
use lattice_rescorer::{PhraseIds, PhraseReport};
use std::collections::BTreeSet;
use std::path::Path;

/// The simulated acoustic model matching a graph kind.
pub enum Acoustic {
    /// Hybrid pdf log-likelihoods (HCLG).
    Hybrid {
        /// The simulator.
        sim: HybridSim,
        /// Pronunciations of the reference words.
        pron: Pronouncer,
    },
    /// CTC log-posteriors over BPE pieces (TLG).
    Ctc(CtcSim),
    /// Recordings scored by a real acoustic model while decoding (`kind = "audio"`).
    Audio(crate::audio::AudioModel),
    /// A researcher's own scores read from files (`kind = "files"`), nothing simulated.
    Files {
        /// The scores by utterance.
        table: ctx_core::score_table::ScoreTable,
        /// Columns every matrix must have (the model's pdfs when a transition model says so).
        width: Option<usize>,
    },
}

/// Everything loaded for decoding one dataset.
pub struct Setup {
    /// The test set.
    pub dataset: Dataset,
    /// The graph (FST and symbol tables).
    pub graph: Graph,
    /// Its CSR layout.
    pub csr: DecodingGraph,
    /// The acoustic model.
    pub acoustic: Acoustic,
    /// Seconds per score row.
    pub frame_s: f64,
    /// Input labels that are silence (hybrid SIL pdfs, CTC blank).
    pub silence: Vec<u32>,
    /// The acoustic model's own acoustic scale (the decoder default for it).
    pub acoustic_scale: f32,
    /// What G-boosting changed, when the graph was built from a boosted G.
    pub gboost: Option<GBoostReport>,
    /// The phrases kept and dropped by HCLG-boosting, when the graph was composed with them.
    pub hclg_phrases: Option<PhraseReport>,
    /// The LM and G behind on-the-fly G-boosting, when asked for.
    pub otf: Option<OtfGBoost>,
    /// Utterances of a `files` dataset's `text` that have no scores (left out, reported).
    pub missing_scores: Vec<String>,
    /// A `files` dataset's entity classes (`None`: every class) and insertion rule.
    pub files_scoring: Option<(Option<BTreeSet<String>>, NeInsertions)>,
    /// The blank's score column when the model is CTC: decoding then goes through
    /// [`ctc_wfst::CtcDecoder`] (normalisation check, blank penalty, word insertion penalty).
    pub ctc_blank: Option<u32>,
    /// Score also as the LibriSpeech biasing benchmark does (the entry's `fbai_scoring`).
    pub fbai: bool,
    /// The 1-best is each lattice's cheapest path with graph costs weighted by this (an audio
    /// entry's `bestpath_language_weight` / `language_weight`); `None`: the search's 1-best.
    pub bestpath_graph_scale: Option<f32>,
    /// Word counts of the dataset's LM text (the simulated model's training text), counted on
    /// first use: error rates by training count.
    pub train_counts: std::sync::OnceLock<ctx_data::acoustic::TrainingCounts>,
    /// The graph's word-arc index, built on first use (a property of the graph, not of a list:
    /// word boosting's per-list cost is then its own words' arcs).
    pub word_index: std::sync::OnceLock<wfst_search::WordArcIndex>,
}

/// A boost applied to the graph before decoding (G-boosting or HCLG ∘ biasing FST): which
/// static list (see [`static_list`]) and the discount.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticBoost {
    /// `sequences`, `unigrams`, `gt` or a global list of the dataset.
    pub list: String,
    /// Discount per boosted n-gram or word (negative = boost).
    pub discount: f32,
}

/// How [`Setup::load`] builds a setup.
#[derive(Debug, Clone)]
pub struct SetupOptions<'a> {
    /// Full set or quick subset.
    pub subset: Subset,
    /// HCLG or TLG.
    pub kind: GraphKind,
    /// BPE pieces (TLG).
    pub bpe_size: usize,
    /// Graph cache folder.
    pub cache: &'a Path,
    /// Overrides the registry's noise level (calibration only).
    pub noise: Option<f64>,
    /// Overrides the SNR of an audio entry's radio channel (calibration only).
    pub snr_db: Option<f64>,
    /// G-boosting of the graph, if any.
    pub gboost: Option<StaticBoost>,
    /// HCLG-boosting by composition with a biasing FST (003 §3.1.4), if any.
    pub hclg_bias: Option<StaticBoost>,
    /// Prepare on-the-fly G-boosting ([`OtfGBoost`]; the lists come per decode).
    pub gboost_otf: bool,
    /// Build the graph with the class slot for open-vocabulary contexts, at this entry cost.
    pub context_slot: Option<f32>,
}

impl<'a> SetupOptions<'a> {
    /// An unboosted HCLG setup of `subset` with the registry's noise.
    pub fn hclg(subset: Subset, cache: &'a Path) -> Self {
        Self {
            subset,
            kind: GraphKind::Hclg,
            bpe_size: ctx_data::graphs::DEFAULT_BPE_SIZE,
            cache,
            noise: None,
            snr_db: None,
            gboost: None,
            hclg_bias: None,
            gboost_otf: false,
            context_slot: None,
        }
    }
}

/// `graph` composed with a biasing FST of the static list `spec` names (HCLG-boosting, 003
/// §3.1.4), with the phrases kept and dropped; `graph` as it is without a spec.
fn hclg_boosted(
    graph: Graph,
    full: &Dataset,
    spec: Option<&StaticBoost>,
) -> Result<(Graph, Option<PhraseReport>)> {
    let Some(spec) = spec else {
        return Ok((graph, None));
    };
    let list = BiasList {
        phrases: static_list(full, &spec.list)?,
    };
    let ids = PhraseIds::new(&list, &graph.symbols.words);
    let b = build_biasing_fst(&graph.symbols.word_labels(), &ids.phrases, spec.discount)?;
    Ok((compose_with_biasing(&graph, &b)?, Some(ids.report)))
}

impl Setup {
    /// Loads a dataset, its graph (through the cache) and its simulated acoustic model.
    pub fn load(reg: &Registry, name: &str, opts: &SetupOptions<'_>) -> Result<Self> {
        let SetupOptions {
            subset,
            kind,
            bpe_size,
            cache,
            noise,
            snr_db: _,
            ref gboost,
            ref hclg_bias,
            gboost_otf,
            context_slot,
        } = *opts;
        match reg.get(name)? {
            ctx_data::registry::DatasetSpec::Files(f) => {
                return Self::load_files(reg, name, f, opts)
            }
            ctx_data::registry::DatasetSpec::Audio(a) => {
                return Self::load_audio(reg, name, a, opts)
            }
            _ => {}
        }
        let dataset =
            Dataset::load(reg, name, subset).with_context(|| format!("loading dataset {name}"))?;
        let knobs = reg
            .get(name)?
            .acoustic()
            .cloned()
            .ok_or_else(|| anyhow!("dataset {name} has no acoustic settings"))?;
        let mut knobs = knobs;
        if let Some(n) = noise {
            knobs.noise = n;
        }
        // Static lists come from the full set (a context known before decoding).
        let full = match (subset, gboost.is_some() || hclg_bias.is_some()) {
            (Subset::Quick, true) => Some(Dataset::load(reg, name, Subset::Full)?),
            _ => None,
        };
        let full = full.as_ref().unwrap_or(&dataset);
        let boost = match gboost {
            Some(spec) => Some(GBoost {
                phrases: static_list(full, &spec.list)?,
                discount: spec.discount,
            }),
            None => None,
        };
        let extras = ctx_data::graphs::GraphExtras {
            gboost: boost.as_ref(),
            context_slot,
        };
        let report = dataset_graph_with(reg, name, kind, bpe_size, cache, subset, &extras)
            .with_context(|| format!("building the {} graph of {name}", kind.name()))?;
        let gboost = report.gboost.clone();
        let (graph, hclg_phrases) = hclg_boosted(report.graph, full, hclg_bias.as_ref())?;
        let otf = if gboost_otf {
            if kind != GraphKind::Hclg {
                bail!(
                    "on-the-fly G-boosting needs an HCLG graph, not {}",
                    kind.name()
                );
            }
            Some(OtfGBoost::new(reg, name, &graph, subset)?)
        } else {
            None
        };
        let csr = DecodingGraph::from_fst(&graph.fst, None)?;
        let (acoustic, frame_s, silence) = match kind {
            GraphKind::Hclg => {
                let s = HmmTopology::default().states_per_phone;
                let sim = HybridSim::new(knobs, s as usize)
                    .with_training_text(dataset.lm_text.iter().flat_map(|l| l.split_whitespace()));
                let frame_s = sim.frame_s;
                // SIL is unit 1: pdfs 0..s, input labels 1..=s.
                let silence = (1..=s).collect();
                (
                    Acoustic::Hybrid {
                        sim,
                        pron: shipped_pronouncer(reg)?,
                    },
                    frame_s,
                    silence,
                )
            }
            GraphKind::Tlg(_) => {
                let bpe = Bpe::train(&dataset.lm_text, bpe_size)?;
                let sim = CtcSim::new(ctc_knobs(reg, name, noise)?, bpe)
                    .with_vocabulary(dataset.lm_text.iter().flat_map(|l| l.split_whitespace()));
                let frame_s = sim.frame_s;
                (
                    Acoustic::Ctc(sim),
                    frame_s,
                    vec![ctx_graph::ctc::BLANK_LABEL],
                )
            }
        };
        let acoustic_scale = match &acoustic {
            Acoustic::Hybrid { sim, .. } => sim.acoustic_scale as f32,
            Acoustic::Ctc(sim) => sim.acoustic_scale as f32,
            Acoustic::Files { .. } | Acoustic::Audio(_) => {
                unreachable!("files and audio datasets load in load_files and load_audio")
            }
        };
        let ctc_blank =
            matches!(acoustic, Acoustic::Ctc(_)).then_some(ctx_graph::ctc::BLANK_LABEL - 1);
        Ok(Self {
            train_counts: Default::default(),
            word_index: Default::default(),
            dataset,
            graph,
            csr,
            acoustic,
            frame_s,
            silence,
            acoustic_scale,
            gboost,
            hclg_phrases,
            otf,
            missing_scores: Vec::new(),
            files_scoring: None,
            ctc_blank,
            fbai: false,
            bestpath_graph_scale: None,
        })
    }

    /// An `audio` dataset: its recordings scored by its acoustic model while decoding, its HCLG
    /// built from its lexicon and LM (static G-boosting included), nothing simulated.
    fn load_audio(
        reg: &Registry,
        name: &str,
        a: &ctx_data::registry::AudioSpec,
        opts: &SetupOptions<'_>,
    ) -> Result<Self> {
        if opts.kind != GraphKind::Hclg {
            bail!(
                "dataset {name} is scored by a hybrid (HMM-GMM) model: it decodes with an HCLG, not {}",
                opts.kind.name()
            );
        }
        let dataset = Dataset::load(reg, name, opts.subset)
            .with_context(|| format!("loading dataset {name}"))?;
        let full = match (
            opts.subset,
            opts.gboost.is_some() || opts.hclg_bias.is_some(),
        ) {
            (Subset::Quick, true) => Some(Dataset::load(reg, name, Subset::Full)?),
            _ => None,
        };
        let full = full.as_ref().unwrap_or(&dataset);
        let boost = match &opts.gboost {
            Some(spec) => Some(GBoost {
                phrases: static_list(full, &spec.list)?,
                discount: spec.discount,
            }),
            None => None,
        };
        let (graph, gboost) =
            crate::audio::audio_graph(reg, name, a, boost.as_ref(), opts.context_slot, opts.cache)?;
        let (graph, hclg_phrases) = hclg_boosted(graph, full, opts.hclg_bias.as_ref())?;
        let otf = if opts.gboost_otf {
            Some(OtfGBoost::new(reg, name, &graph, Subset::Full)?)
        } else {
            None
        };
        let csr = DecodingGraph::from_fst(&graph.fst, None)?;
        let mut model = crate::audio::AudioModel::load(
            reg,
            name,
            a,
            dataset.utterances.iter().map(|u| u.id.as_str()),
            opts.snr_db,
        )?;
        if opts.context_slot.is_some() {
            model.speller = Some(Box::new(crate::audio::ContextSpeller::load(reg, name, a)?));
        }
        let silence = model.silence_columns.iter().map(|c| c + 1).collect();
        let acoustic_scale = model.acoustic_scale;
        Ok(Self {
            train_counts: Default::default(),
            word_index: Default::default(),
            dataset,
            graph,
            csr,
            acoustic: Acoustic::Audio(model),
            frame_s: 0.01,
            silence,
            acoustic_scale,
            gboost,
            hclg_phrases,
            otf,
            missing_scores: Vec::new(),
            // Spoken text of a built-in set is scored by that set's rules.
            files_scoring: a.text_of.is_none().then(|| {
                (
                    (!a.entity_classes.is_empty())
                        .then(|| a.entity_classes.iter().cloned().collect()),
                    if a.ne_insertions_inside {
                        NeInsertions::Inside
                    } else {
                        NeInsertions::Never
                    },
                )
            }),
            ctc_blank: None,
            fbai: a.fbai_scoring,
            bestpath_graph_scale: crate::audio::bestpath_graph_scale(name, a)?,
        })
    }

    /// A `files` dataset: the researcher's graph, scores and data dir, decoded as they are.
    fn load_files(
        reg: &Registry,
        name: &str,
        f: &ctx_data::registry::FilesSpec,
        opts: &SetupOptions<'_>,
    ) -> Result<Self> {
        use ctx_data::registry::ModelKind;
        check_files_settings(name, f, opts.gboost.is_some())?;
        let mut dataset = Dataset::load(reg, name, opts.subset)
            .with_context(|| format!("loading dataset {name}"))?;
        let path = |p: &str| reg.resolve(p);
        let (label_map, width) = label_map_of(name, f, &path)?;
        let kind = match f.model {
            ModelKind::Hybrid => GraphKind::Hclg,
            ModelKind::Ctc => GraphKind::Tlg(ctx_graph::ctc::CtcTopology::Normal),
        };
        let graph = ctx_graph::external::load_graph(
            &path(&f.graph),
            &path(&f.words),
            label_map.as_deref(),
            kind,
        )?;
        let (graph, hclg_phrases) = hclg_boosted(graph, &dataset, opts.hclg_bias.as_ref())?;
        let otf = if opts.gboost_otf {
            Some(OtfGBoost::new(reg, name, &graph, Subset::Full)?)
        } else {
            None
        };
        let csr = checked_csr(&graph, &path(&f.graph))?;
        let table = ctx_core::score_table::ScoreTable::open(&path(&f.scores))?;
        let missing_scores = keep_scored(name, f, &mut dataset, &table)?;
        if f.model == ModelKind::Hybrid {
            warn_ctc_like(f, &table, &dataset.utterances[0].id)?;
        }
        let blank = match f.model {
            ModelKind::Hybrid => None,
            ModelKind::Ctc => ctc_blank_column(
                f.blank,
                f.tokens.as_ref().map(|t| path(t)).as_deref(),
                label_map.as_deref(),
            )?,
        };
        let mut silence: Vec<u32> = f.silence_columns.iter().map(|c| c + 1).collect();
        silence.extend(blank.map(|c| c + 1));
        let (frame_s, acoustic_scale) = match f.model {
            ModelKind::Hybrid => (0.01, 0.1),
            ModelKind::Ctc => (0.04, 1.0),
        };
        Ok(Self {
            train_counts: Default::default(),
            word_index: Default::default(),
            dataset,
            graph,
            csr,
            acoustic: Acoustic::Files { table, width },
            frame_s: f.frame_shift_s.unwrap_or(frame_s),
            silence,
            acoustic_scale: f.acoustic_scale.unwrap_or(acoustic_scale) as f32,
            gboost: None,
            hclg_phrases,
            otf,
            missing_scores,
            files_scoring: Some((
                (!f.entity_classes.is_empty()).then(|| f.entity_classes.iter().cloned().collect()),
                if f.ne_insertions_inside {
                    NeInsertions::Inside
                } else {
                    NeInsertions::Never
                },
            )),
            ctc_blank: blank,
            fbai: f.fbai_scoring,
            bestpath_graph_scale: None,
        })
    }

    /// The graph's word-arc index ([`wfst_search::WordArcIndex`]), built on first use.
    pub fn word_index(&self) -> &wfst_search::WordArcIndex {
        self.word_index
            .get_or_init(|| wfst_search::WordArcIndex::new(&self.csr))
    }

    /// Word counts of the model's training text (the dataset's LM text; empty for a `files`
    /// dataset).
    pub fn training_counts(&self) -> &ctx_data::acoustic::TrainingCounts {
        self.train_counts.get_or_init(|| {
            ctx_data::acoustic::TrainingCounts::from_words(
                self.dataset
                    .lm_text
                    .iter()
                    .flat_map(|l| l.split_whitespace()),
            )
        })
    }

    /// The simulated score matrix of an utterance.
    pub fn scores(&self, u: &Utterance) -> Result<ScoreMatrix> {
        let (m, _) = match &self.acoustic {
            Acoustic::Hybrid { sim, pron } => sim.simulate(&u.id, &u.words, u.duration_s, pron)?,
            Acoustic::Ctc(sim) => sim.simulate(&u.id, &u.words, u.duration_s)?,
            Acoustic::Audio(model) => (model.scores(&u.id)?, Vec::new()),
            Acoustic::Files { table, width } => {
                let m = table.get(&u.id)?.ok_or_else(|| {
                    anyhow!(
                        "{}: no scores for utterance {}",
                        table.path().display(),
                        u.id
                    )
                })?;
                let rules = ScoreRules {
                    need: self.graph.num_columns as usize,
                    width: *width,
                    ctc: self.ctc_blank.is_some(),
                    silence: &self.silence,
                    acoustic_scale: self.acoustic_scale,
                };
                let m = rules.admit(m, &table.path().display().to_string(), &u.id)?;
                // The frames must cover about the utterance's duration (utt2dur, segments or
                // the WAV): RTFx divides by it, and a mismatch means another utterance's
                // scores or a wrong frame shift. 25% and 0.1 s of slack for edge frames and
                // subsampling.
                let audio = m.rows() as f64 * self.frame_s;
                if (audio - u.duration_s).abs() > 0.25 * audio.max(u.duration_s) + 0.1 {
                    bail!(
                        "{}: utterance {}: {} frames of {} s are {:.2} s of audio, but its duration is {:.2} s: a wrong frame shift (--frame-shift / frame_shift_s), or another utterance's scores?",
                        table.path().display(),
                        u.id,
                        m.rows(),
                        self.frame_s,
                        audio,
                        u.duration_s
                    );
                }
                (m, Vec::new())
            }
        };
        Ok(m)
    }

    /// Word strings of word ids.
    pub fn words(&self, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&i| {
                self.graph
                    .symbols
                    .words
                    .symbol(i)
                    .unwrap_or("<unk>")
                    .to_string()
            })
            .collect()
    }
}

/// The decoding graph of an outside graph, checked at the door: layout, weights, ε cycles
/// the search cannot close, each error naming the file; a graph without a final
/// state is warned about.
pub fn checked_csr(graph: &Graph, path: &Path) -> Result<DecodingGraph> {
    checked_csr_mapped(graph, path, None)
}

/// [`checked_csr`] with the graph's input labels mapped first (`label_map[label]`: a label
/// graph's units onto its model's columns, [`ctx_graph::labels::CtcLabels::label_map`]).
pub fn checked_csr_mapped(
    graph: &Graph,
    path: &Path,
    label_map: Option<&[u32]>,
) -> Result<DecodingGraph> {
    let csr = DecodingGraph::from_fst(&graph.fst, label_map)
        .with_context(|| format!("graph {}", path.display()))?;
    csr.validate()
        .and_then(|_| csr.check_weights())
        .with_context(|| format!("graph {}", path.display()))?;
    if !csr.final_cost.iter().any(|c| c.is_finite()) {
        eprintln!(
            "warning: graph {}: no state is final, so no final state is reached: every \
             hypothesis ends wherever its audio ends",
            path.display()
        );
    }
    Ok(csr)
}

/// A CTC model's blank score column: `blank` when given, else the `<blk>` (`<blank>`, `<b>`)
/// token of `tokens` (label − 1, or through the label map), else column 0. `None` when the
/// label map drops the blank.
pub fn ctc_blank_column(
    blank: Option<u32>,
    tokens: Option<&Path>,
    label_map: Option<&[u32]>,
) -> Result<Option<u32>> {
    Ok(match (blank, tokens) {
        (Some(b), _) => Some(b),
        (None, Some(t)) => {
            let table = ctx_core::symbols::SymbolTable::read(t)?;
            let label = ["<blk>", "<blank>", "<b>"]
                .iter()
                .find_map(|b| table.id(b))
                .ok_or_else(|| {
                    anyhow!(
                        "{}: no <blk> or <blank> token; give the blank's column (`blank = COLUMN` \
                         in a files entry)",
                        t.display()
                    )
                })?;
            match label_map {
                Some(m) => m.get(label as usize).copied().filter(|&c| c != u32::MAX),
                None => label.checked_sub(1),
            }
        }
        (None, None) => Some(0),
    })
}

/// What a score matrix from outside must be for a graph, checked at the door for every
/// utterance, whether it came from a file or from Python.
pub struct ScoreRules<'a> {
    /// Columns the graph reads (its highest score column + 1).
    pub need: usize,
    /// The model's declared width, when given.
    pub width: Option<usize>,
    /// A CTC model (may leave its last tokens unread).
    pub ctc: bool,
    /// Silence input labels (columns + 1).
    pub silence: &'a [u32],
    /// The acoustic scale the search applies.
    pub acoustic_scale: f32,
}

impl ScoreRules<'_> {
    /// Checks `m` (utterance `id`, read from `src`): width, frames, silence columns; shifts
    /// each frame to a maximum of 0 where path costs would lose f32 precision (warned).
    pub fn admit(&self, m: ScoreMatrix, src: &str, id: &str) -> Result<ScoreMatrix> {
        let (need, width) = (self.need, self.width);
        // Hybrid: exactly the graph's width unless a model width is declared; CTC
        // graphs may leave the last tokens unread (tokens.txt checks those).
        let exact = width.is_some() || !self.ctc;
        if m.cols() < need
            || width.is_some_and(|w| w != m.cols())
            || (exact && width.is_none() && m.cols() != need)
        {
            bail!(
                "{src}: utterance {id}: the scores have {} columns, but the graph reads {} ({}); scores and graph are from different models?{}",
                m.cols(),
                width.unwrap_or(need),
                if width.is_some() { "the model's declared width" } else { "its highest score column + 1, through the label map if one is given" },
                if m.cols() > need && width.is_none() {
                    " (a model with pdfs the graph never reads: declare its width with --score-columns or score_columns)"
                } else {
                    ""
                }
            );
        }
        if m.rows() == 0 {
            bail!("{src}: utterance {id} has no frames");
        }
        // Silence labels are columns + 1; one beyond the width would leave endpointing
        // without silence, so it is refused.
        if let Some(&c) = self.silence.iter().find(|&&l| l as usize > m.cols()) {
            bail!(
                "{src}: utterance {id}: silence column {} (silence_columns / \
                 --silence-columns) is beyond its {} score columns",
                c - 1,
                m.cols()
            );
        }
        // Scores so large that path costs lose f32 precision (all paths tie and the
        // lattice explodes: flat scores of 1e6 took minutes per utterance) are shifted
        // per frame to a maximum of 0, which changes no path's rank.
        let mut m = m;
        if m.cost_span(self.acoustic_scale) > (1u64 << 20) as f64 {
            eprintln!(
                "warning: {src}: utterance {id}: scores up to {:.3e} in magnitude: each frame shifted by its maximum (f32 path costs would lose the graph's precision)",
                m.data().iter().fold(0f32, |a, v| a.max(v.abs()))
            );
            m.shift_rows_to_max_zero();
        }
        Ok(m)
    }
}

/// The simulated-CTC knobs of a dataset (`[<name>.acoustic_ctc]`), with `noise` overriding the
/// calibrated level (calibration runs only).
pub fn ctc_knobs(
    reg: &Registry,
    name: &str,
    noise: Option<f64>,
) -> Result<ctx_data::registry::CtcAcousticSpec> {
    let base = name.trim_end_matches("-quick");
    let k = reg.get(base)?.acoustic_ctc().cloned().ok_or_else(|| {
        anyhow!(
            "dataset {base} has no simulated-CTC knobs ([{base}.acoustic_ctc] in the registry): the CTC model is calibrated once per dataset, apart from the hybrid one"
        )
    })?;
    Ok(noise.map_or(k.clone(), |n| k.with_noise(n)))
}

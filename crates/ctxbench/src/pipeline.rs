//! The steps every decoding experiment runs, top to bottom: dataset → decoding graph →
//! simulated acoustic scores → batched decoding (wfst-search) → rescoring (lattice-rescorer) →
//! scoring (ctx-core metrics).

use anyhow::{anyhow, bail, Context, Result};
use ctx_core::bias::BiasList;
use ctx_core::context_list::ContextList;
use ctx_core::metrics::reference::ScoringRef;
use ctx_core::metrics::score::{score_utterance, NeInsertions, ScoreOptions, ScoreTotals};
use ctx_core::scores::ScoreMatrix;
use ctx_data::acoustic::{CtcSim, HybridSim};
use ctx_data::bpe::Bpe;
use ctx_data::dataset::{shipped_pronouncer, Dataset, Subset, Utterance};
use ctx_data::graphs::dataset_graph_with;
use ctx_data::pronounce::Pronouncer;
use ctx_data::registry::Registry;
use ctx_graph::biasing::build_biasing_fst;
use ctx_graph::compile::{compose_with_biasing, Graph, GraphKind};
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::gboost::{GBoost, GBoostReport};
use ctx_graph::hmm::HmmTopology;
use ctx_graph::phrase_arcs::PhraseArcFinder;
use lattice_rescorer::{biased_best_path, prefix_biased_best_path, PhraseIds, PhraseReport};
use rayon::prelude::*;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use wfst_search::{
    decode_utterance, ArcSetBooster, Booster, Decoder, DecoderConfig, EndpointConfig,
    PhraseAutomaton, Stream, UtteranceResult,
};

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
    /// Word counts of the dataset's LM text (the simulated model's training text), counted on
    /// first use: error rates by training count.
    pub train_counts: std::sync::OnceLock<ctx_data::acoustic::TrainingCounts>,
}

/// On-the-fly G-boosting (003 §3.1.3, "online"): the graph stays the unboosted HCLG, and each
/// stream carries its own list's cost change as a word automaton composed during the search, so
/// a list costs no compile. Two forms: the exact difference G_boosted − G
/// ([`wfst_search::LmDelta`], Kaldi's biglm scheme; one G edit per list) and the phrase-prefix
/// automaton ([`wfst_search::PhraseAutomaton`]), equal to it under the back-off rule (tested)
/// with far fewer automaton states.
pub struct OtfGBoost {
    lm: Option<ctx_core::arpa::ArpaLm>,
    words: ctx_core::symbols::SymbolTable,
    backoff: u32,
    small: std::sync::OnceLock<std::sync::Arc<wfst_search::BackoffLm>>,
}

impl OtfGBoost {
    /// The dataset's LM (the one `graph` was compiled from) and the graph's word table. A
    /// `files` dataset has an LM only when its entry names one (`lm`); without it the phrase
    /// automaton keeps every phrase whose words the graph has, and the exact mode is refused.
    /// `subset` picks the LM of that subset's graph ([`ctx_data::graphs::dataset_lm`]; audio
    /// and files entries have one LM for both).
    pub fn new(reg: &Registry, name: &str, graph: &Graph, subset: Subset) -> Result<Self> {
        let lm = match reg.get(name)? {
            ctx_data::registry::DatasetSpec::Files(f) => match &f.lm {
                Some(p) => Some(ctx_core::arpa::ArpaLm::read(&reg.resolve(p))?),
                None => None,
            },
            ctx_data::registry::DatasetSpec::Audio(a) => {
                Some(crate::audio::audio_lm(reg, name, a)?.0)
            }
            _ => Some(ctx_data::graphs::dataset_lm(reg, name, subset)?),
        };
        Ok(Self {
            lm,
            words: graph.symbols.words.clone(),
            backoff: graph.symbols.word_disambig,
            small: std::sync::OnceLock::new(),
        })
    }

    fn lm(&self) -> Result<&ctx_core::arpa::ArpaLm> {
        self.lm.as_ref().ok_or_else(|| {
            anyhow!("on-the-fly-lm G-boosting needs the LM the graph was built from: add `lm = \"G.arpa\"` to the files entry (or use --gboost-mode on-the-fly)")
        })
    }

    /// G read deterministically (built on first use).
    fn small(&self) -> Result<std::sync::Arc<wfst_search::BackoffLm>> {
        if let Some(s) = self.small.get() {
            return Ok(s.clone());
        }
        let (g, _) = ctx_graph::grammar::build_grammar_fst(
            self.lm()?,
            &self.words,
            self.backoff,
            ctx_graph::grammar::MissingWords::Skip,
        )?;
        let s = std::sync::Arc::new(wfst_search::BackoffLm::from_fst(&g, self.backoff)?);
        Ok(self.small.get_or_init(|| s).clone())
    }

    /// The phrase-prefix booster of one list: the phrases G-boosting keeps (every word in the
    /// LM and the graph) as word ids, the discount per word that ends a prefix.
    pub fn phrase_booster(
        &self,
        phrases: &[Vec<String>],
        discount: f32,
    ) -> Result<(Booster, GBoostReport)> {
        let distinct: BTreeSet<&Vec<String>> = phrases.iter().filter(|p| !p.is_empty()).collect();
        let mut report = GBoostReport {
            phrases: distinct.len(),
            ..GBoostReport::default()
        };
        let specials = [ctx_core::arpa::BOS, ctx_core::arpa::EOS];
        let mut ids: Vec<Vec<u32>> = Vec::new();
        for p in distinct {
            let labels: Option<Vec<u32>> = p
                .iter()
                .map(|w| {
                    let in_lm = self.lm.as_ref().is_none_or(|lm| lm.word_id(w).is_some());
                    if specials.contains(&w.as_str()) || !in_lm {
                        None
                    } else {
                        self.words.id(w)
                    }
                })
                .collect();
            match labels {
                Some(l) => ids.push(l),
                None => report.dropped += 1,
            }
        }
        report.kept = ids.len();
        if ids.is_empty() {
            return Ok((Booster::None, report));
        }
        let a = wfst_search::PhraseAutomaton::new(&ids, discount)?;
        Ok((Booster::Phrases(a), report))
    }

    /// The exact booster of one list: G edited towards `phrases` with `discount` (exactly as
    /// static G-boosting edits it), minus G. An empty list (or one whose phrases all drop)
    /// boosts nothing.
    pub fn lm_booster(
        &self,
        phrases: Vec<Vec<String>>,
        discount: f32,
    ) -> Result<(Booster, GBoostReport)> {
        let boost = GBoost { phrases, discount };
        let (edit, report) = ctx_graph::gboost::gboost_edit(self.lm()?, &self.words, &boost)?;
        if report.kept == 0 {
            return Ok((Booster::None, report));
        }
        let (gb, _) = ctx_graph::grammar::build_grammar_fst_with(
            self.lm()?,
            &self.words,
            self.backoff,
            ctx_graph::grammar::MissingWords::Skip,
            &edit,
        )?;
        let big = wfst_search::BackoffLm::from_fst(&gb, self.backoff)?;
        let delta = wfst_search::LmDelta::new(big, Some(self.small()?))?;
        Ok((Booster::Lm(delta), report))
    }
}

/// What on-the-fly G-boosting is asked to do: which list, which automaton, which discount.
#[derive(Debug, Clone, PartialEq)]
pub struct OtfRequest {
    /// A static list name (see [`static_list`]) for the whole set, or with `per_utterance` a
    /// list kind (see [`ListKind::parse`]) chosen per utterance.
    pub list: String,
    /// The exact LM difference ([`OtfGBoost::lm_booster`]) instead of the phrase-prefix
    /// automaton.
    pub exact: bool,
    /// Discount per boosted n-gram (negative = boost).
    pub discount: f32,
    /// One list per utterance (built while decoding, so its time counts) instead of one list
    /// for the set.
    pub per_utterance: bool,
}

/// The boosters of a request, one per utterance in dataset order.
#[derive(Debug, Clone)]
pub struct OtfBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// What G-boosting kept and changed: summed over utterances for per-utterance lists, the
    /// list's own counts for a set list (as static G-boosting reports it).
    pub report: GBoostReport,
    /// Seconds spent building the boosters.
    pub build_s: f64,
    /// Whether the lists came per utterance.
    pub per_utterance: bool,
}

impl OtfBoosters {
    /// Decodes the setup, each utterance with its booster.
    pub fn decode(&self, setup: &Setup, settings: &DecodeSettings) -> Result<DecodeRun> {
        decode_indexed(setup, settings, &|i| self.boosters[i].clone())
    }

    /// Build seconds that count in RTFx: lists that arrive per utterance are compiled while
    /// decoding; one list for the set is prepared once, like a graph.
    pub fn context_s(&self) -> f64 {
        if self.per_utterance {
            self.build_s
        } else {
            0.0
        }
    }
}

/// Per-utterance boosting (001 §3.3 and phrase boosting) of every utterance of a setup: one
/// [`ctc_wfst::ContextBoost`] per distinct list (a global list is built once for all), its
/// booster shared by the utterances with that list.
pub struct ContextBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// Words (or phrases) applied, summed over utterances.
    pub applied: usize,
    /// Words (or phrases) not in the graph's words.txt (left out), summed over utterances.
    pub oov: usize,
    /// Seconds spent building the tables (the lists arrive with their utterances: counted in RTFx).
    pub build_s: f64,
}

impl ContextBoosters {
    /// Word boosting: the distinct words of each utterance's list of `kind`, each with bonus
    /// `score` (positive = favoured), as the single-state B applied on the fly
    /// ([`ctc_wfst::ContextBoost::words_indexed`], over the graph's word-arc index, built once
    /// here and its time counted).
    pub fn words(setup: &Setup, kind: &ListKind, score: f32, beam: f32) -> Result<Self> {
        if !score.is_finite() {
            bail!("word_boost_score (--word-boost-score) {score}: a bonus in graph units, a finite number");
        }
        let t = Instant::now();
        let index = wfst_search::WordArcIndex::new(&setup.csr);
        let words_of = |l: &BiasList| -> Vec<String> {
            let set: BTreeSet<&String> = l.phrases.iter().flatten().collect();
            set.into_iter().cloned().collect()
        };
        let mut out = Self::per_list(setup, kind, words_of, |words| {
            let entries: Vec<(String, f32)> = words.iter().map(|w| (w.clone(), score)).collect();
            Ok(ctc_wfst::ContextBoost::words_indexed(
                &index,
                &setup.graph.symbols.words,
                &entries,
                beam,
            )?)
        })?;
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Phrase boosting: each utterance's list of `kind` as a phrase automaton, `score` per word
    /// matched in order ([`ctc_wfst::ContextBoost::phrases`]).
    pub fn phrases(setup: &Setup, kind: &ListKind, score: f32) -> Result<Self> {
        Self::per_list(
            setup,
            kind,
            |l| l.phrases.clone(),
            |phrases| {
                Ok(ctc_wfst::ContextBoost::phrases(
                    &setup.graph.symbols.words,
                    phrases,
                    score,
                )?)
            },
        )
    }

    /// One `make(key(list))` per distinct key over the utterances' lists of `kind`.
    fn per_list<K: Ord>(
        setup: &Setup,
        kind: &ListKind,
        key: impl Fn(&BiasList) -> K,
        mut make: impl FnMut(&K) -> Result<ctc_wfst::ContextBoost>,
    ) -> Result<Self> {
        if let ListKind::Global(name) = kind {
            if !setup.dataset.global_lists.contains_key(name) {
                bail!("dataset {} has no global list '{name}'", setup.dataset.name);
            }
        }
        let t = Instant::now();
        let mut out = Self {
            boosters: Vec::with_capacity(setup.dataset.utterances.len()),
            applied: 0,
            oov: 0,
            build_s: 0.0,
        };
        let utts = &setup.dataset.utterances;
        if let Some(l) = set_list(setup, kind) {
            // One list for every utterance: built once.
            let c = make(&key(&l))?;
            out.applied = c.report.applied * utts.len();
            out.oov = c.report.oov.len() * utts.len();
            out.boosters = vec![c.booster; utts.len()];
        } else {
            let mut built: BTreeMap<K, ctc_wfst::ContextBoost> = BTreeMap::new();
            for u in utts {
                let c = match built.entry(key(&list_of(setup, u, kind))) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => {
                        let c = make(e.key())?;
                        e.insert(c)
                    }
                };
                out.applied += c.report.applied;
                out.oov += c.report.oov.len();
                out.boosters.push(c.booster.clone());
            }
        }
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }
}

/// The boosters of on-the-fly G-boosting for every utterance of `setup` (prepared with
/// [`SetupOptions::gboost_otf`]; `None` otherwise), one build per distinct list, in parallel on
/// `threads`. A set list comes from the full set (`name` in the registry), as for static
/// G-boosting, even when `subset` is the quick one.
pub fn otf_boosters(
    reg: &Registry,
    name: &str,
    setup: &Setup,
    subset: Subset,
    req: &OtfRequest,
    threads: usize,
) -> Result<Option<OtfBoosters>> {
    let Some(otf) = &setup.otf else {
        return Ok(None);
    };
    let t = Instant::now();
    let utts = &setup.dataset.utterances;
    let lists: Vec<Vec<Vec<String>>> = if req.per_utterance {
        let kind = ListKind::parse(&req.list).ok_or_else(|| {
            anyhow!(
                "on-the-fly G-boosting: unknown per-utterance list '{}' (sequences, unigrams, gt, list:NAME)",
                req.list
            )
        })?;
        if let ListKind::Global(n) = &kind {
            if !setup.dataset.global_lists.contains_key(n) {
                bail!("dataset {} has no global list '{n}'", setup.dataset.name);
            }
        }
        utts.iter()
            .map(|u| list_of(setup, u, &kind).phrases)
            .collect()
    } else {
        let full = match subset {
            Subset::Quick => Some(Dataset::load(reg, name, Subset::Full)?),
            Subset::Full => None,
        };
        let l = static_list(full.as_ref().unwrap_or(&setup.dataset), &req.list)?;
        vec![l; utts.len()]
    };
    let mut distinct: Vec<&Vec<Vec<String>>> = lists.iter().collect();
    distinct.sort();
    distinct.dedup();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()?;
    let built: Vec<(Booster, GBoostReport)> = pool.install(|| {
        distinct
            .par_iter()
            .map(|l| {
                if req.exact {
                    otf.lm_booster((*l).clone(), req.discount)
                } else {
                    otf.phrase_booster(l, req.discount)
                }
            })
            .collect::<Result<_>>()
    })?;
    let mut boosters = Vec::with_capacity(utts.len());
    let mut report = GBoostReport::default();
    for l in &lists {
        let i = distinct
            .binary_search(&l)
            .expect("every list is among the distinct ones");
        let (b, r) = &built[i];
        boosters.push(b.clone());
        report.phrases += r.phrases;
        report.kept += r.kept;
        report.dropped += r.dropped;
        report.discounted += r.discounted;
        report.added += r.added;
    }
    if !req.per_utterance {
        if let Some((_, r)) = built.first() {
            report = r.clone();
        }
    }
    Ok(Some(OtfBoosters {
        boosters,
        report,
        build_s: t.elapsed().as_secs_f64(),
        per_utterance: req.per_utterance,
    }))
}

/// Arc-index boosting (000 §4.2): per utterance, the arcs of the decoding graph that Algorithm 1
/// finds for the utterance's list ([`ctx_graph::phrase_arcs`]), discounted during the search.
#[derive(Debug, Clone)]
pub struct ArcBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// The lists' phrases kept and dropped (a word outside the vocabulary), summed over
    /// utterances.
    pub report: PhraseReport,
    /// Boosted arcs, summed over utterances.
    pub arcs: usize,
    /// Seconds spent finding the arcs and building the boosters: the lists arrive with their
    /// utterances, so this time counts in RTFx.
    pub build_s: f64,
}

impl ArcBoosters {
    /// Finds the arcs of every utterance's list of `kind` in `setup`'s graph, one search per
    /// distinct list, in parallel on `threads`.
    pub fn new(setup: &Setup, kind: &ListKind, discount: f32, threads: usize) -> Result<Self> {
        if let ListKind::Global(name) = kind {
            if !setup.dataset.global_lists.contains_key(name) {
                bail!("dataset {} has no global list '{name}'", setup.dataset.name);
            }
        }
        let t = Instant::now();
        let lists: Vec<BiasList> = setup
            .dataset
            .utterances
            .iter()
            .map(|u| list_of(setup, u, kind))
            .collect();
        let mut distinct: Vec<&Vec<Vec<String>>> = lists.iter().map(|l| &l.phrases).collect();
        distinct.sort();
        distinct.dedup();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()?;
        let ids: Vec<PhraseIds> = pool.install(|| {
            distinct
                .par_iter()
                .map(|phrases| {
                    let list = BiasList {
                        phrases: (*phrases).clone(),
                    };
                    PhraseIds::new(&list, &setup.graph.symbols.words)
                })
                .collect()
        });
        // One search of every distinct prefix of every list (consecutive radar lists share
        // most phrases), then each list's union of its prefixes' arcs, in parallel.
        let phrases: Vec<&[Vec<u32>]> = ids.iter().map(|i| i.phrases.as_slice()).collect();
        let found = PhraseArcFinder::new(&setup.csr).find_lists(&phrases);
        let built: Vec<(Booster, PhraseReport, usize)> = pool.install(|| {
            (0..ids.len())
                .into_par_iter()
                .map(|i| {
                    let arcs = found.list(i).arcs;
                    let n = arcs.len();
                    let b = ArcSetBooster::new(&setup.csr, arcs, discount)?;
                    Ok((Booster::ArcSet(b), ids[i].report, n))
                })
                .collect::<Result<_>>()
        })?;
        let mut out = Self {
            boosters: Vec::with_capacity(lists.len()),
            report: PhraseReport::default(),
            arcs: 0,
            build_s: 0.0,
        };
        for l in &lists {
            let i = distinct
                .binary_search(&&l.phrases)
                .expect("every list is among the distinct ones");
            let (b, r, n) = &built[i];
            out.boosters.push(b.clone());
            out.report.add(r);
            out.arcs += n;
        }
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }
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

/// A static (whole-set) phrase list, sorted and de-duplicated: `sequences` is the union of every
/// utterance's (ATC radar) or document's (Earnings) list, `unigrams` their distinct words, `gt`
/// every reference entity of the set (an oracle), any other name a global list of the dataset
/// (Earnings `oracle`/`distractor`, ATC `rare`).
pub fn static_list(dataset: &Dataset, name: &str) -> Result<Vec<Vec<String>>> {
    let mut set: BTreeSet<Vec<String>> = BTreeSet::new();
    match name {
        "sequences" => {
            for l in dataset.lists.values() {
                set.extend(l.phrases.iter().cloned());
            }
        }
        "unigrams" => {
            for l in dataset.lists.values() {
                set.extend(l.unigrams().phrases);
            }
        }
        "gt" => {
            for u in &dataset.utterances {
                set.extend(entity_phrases(u));
            }
        }
        other => match dataset.global_lists.get(other) {
            Some(l) => set.extend(l.phrases.iter().cloned()),
            None => {
                let mut names = vec!["sequences", "unigrams", "gt"];
                names.extend(dataset.global_lists.keys().map(String::as_str));
                bail!(
                    "dataset {} has no list '{other}' (available: {})",
                    dataset.name,
                    names.join(", ")
                );
            }
        },
    }
    set.retain(|p| !p.is_empty());
    Ok(set.into_iter().collect())
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
        let (graph, gboost) = crate::audio::audio_graph(reg, name, a, boost.as_ref(), opts.cache)?;
        let (graph, hclg_phrases) = hclg_boosted(graph, full, opts.hclg_bias.as_ref())?;
        let otf = if opts.gboost_otf {
            Some(OtfGBoost::new(reg, name, &graph, Subset::Full)?)
        } else {
            None
        };
        let csr = DecodingGraph::from_fst(&graph.fst, None)?;
        let model = crate::audio::AudioModel::load(
            reg,
            name,
            a,
            dataset.utterances.iter().map(|u| u.id.as_str()),
        )?;
        let silence = model.silence_columns.iter().map(|c| c + 1).collect();
        let acoustic_scale = model.acoustic_scale;
        Ok(Self {
            train_counts: Default::default(),
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
        if let Some(fs) = f.frame_shift_s.filter(|fs| !(fs.is_finite() && *fs > 0.0)) {
            bail!(
                "dataset {name}: frame shift {fs} (frame_shift_s, or decode's --frame-shift): \
                 seconds per score row, a finite number above 0"
            );
        }
        if let Some(a) = f.acoustic_scale.filter(|a| !(a.is_finite() && *a > 0.0)) {
            bail!(
                "dataset {name}: acoustic scale {a} (acoustic_scale, or decode's \
                 --acoustic-scale): a finite number above 0"
            );
        }
        if opts.gboost.is_some() {
            bail!("dataset {name}: static G-boosting recompiles HCLG from G and the lexicon, which a files dataset does not have; use --gboost-mode on-the-fly");
        }
        let mut dataset = Dataset::load(reg, name, opts.subset)
            .with_context(|| format!("loading dataset {name}"))?;
        let path = |p: &str| reg.resolve(p);
        let maps = [&f.transition_model, &f.pdf_map, &f.label_map]
            .iter()
            .filter(|m| m.is_some())
            .count();
        if maps > 1 {
            bail!("dataset {name}: give one of transition_model, pdf_map and label_map");
        }
        let mut width = None;
        let label_map: Option<Vec<u32>> = if let Some(p) = &f.transition_model {
            let tm = ctx_core::transition::TransitionModel::read(&path(p))?;
            width = Some(tm.num_pdfs());
            Some(tm.pdf_of_transition_ids())
        } else if let Some(p) = &f.pdf_map {
            width = f.score_columns;
            Some(ctx_core::transition::read_pdf_map(&path(p))?)
        } else if let Some(p) = &f.label_map {
            Some(ctx_core::transition::read_pdf_map(&path(p))?)
        } else {
            if f.model == ModelKind::Hybrid {
                width = f.score_columns;
            }
            None
        };
        if f.transition_model.is_some() && f.score_columns.is_some() {
            bail!("dataset {name}: score_columns is the transition model's pdf count; give one of them");
        }
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
        let csr = DecodingGraph::from_fst(&graph.fst, None)?;
        // A graph from outside is checked at the door: layout, weights, ε cycles the search
        // cannot close (issue 58), each error naming the file.
        let gp = path(&f.graph);
        csr.validate()
            .and_then(|_| csr.check_weights())
            .with_context(|| format!("graph {}", gp.display()))?;
        if !csr.final_cost.iter().any(|c| c.is_finite()) {
            eprintln!(
                "warning: graph {}: no state is final, so no final state is reached: every                  hypothesis ends wherever its audio ends",
                gp.display()
            );
        }
        let table = ctx_core::score_table::ScoreTable::open(&path(&f.scores))?;
        let mut missing_scores = Vec::new();
        dataset.utterances.retain(|u| {
            let has = table.contains(&u.id);
            if !has {
                missing_scores.push(u.id.clone());
            }
            has
        });
        // Scores for utterances `text` does not have: decoded by nobody, so said (a stray file
        // or an archive of another set shows up here).
        let known: std::collections::HashSet<&str> =
            dataset.utterances.iter().map(|u| u.id.as_str()).collect();
        let stray: Vec<&String> = table
            .ids()
            .iter()
            .filter(|i| !known.contains(i.as_str()))
            .collect();
        if !stray.is_empty() {
            let msg = format!(
                "{} score entr(y/ies) of {} name no utterance of {}/text (first: {})",
                stray.len(),
                f.scores,
                f.data,
                stray[0]
            );
            if f.strict {
                bail!("{msg}; strict = true refuses them");
            }
            eprintln!("warning: {msg}; they are not decoded");
        }
        // Per-utterance lists that leave utterances out: those decode unbiased, which a figure
        // of a biased row should not hide (issue 58).
        if let Some(b) = &f.bias_utt {
            let unlisted: Vec<&str> = dataset
                .utterances
                .iter()
                .filter(|u| !dataset.lists.contains_key(&u.id))
                .map(|u| u.id.as_str())
                .collect();
            if !unlisted.is_empty() {
                eprintln!(
                    "warning: {} utterance(s) of {}/text have no list in {b} (first: {}): \
                     they decode unbiased in every biased row",
                    unlisted.len(),
                    f.data,
                    unlisted[0]
                );
            }
        }
        if !missing_scores.is_empty() {
            let msg = format!(
                "{} utterance(s) of {}/text have no scores in {} (first: {})",
                missing_scores.len(),
                f.data,
                f.scores,
                missing_scores[0]
            );
            if f.strict {
                bail!("{msg}; strict = true refuses to leave them out");
            }
            eprintln!("warning: {msg}; they are left out of every figure");
        }
        if dataset.utterances.is_empty() {
            bail!(
                "dataset {name}: no utterance of {}/text has scores in {}",
                f.data,
                f.scores
            );
        }
        let blank = match (f.model, f.blank, &f.tokens) {
            (ModelKind::Hybrid, _, _) => None,
            (ModelKind::Ctc, Some(b), _) => Some(b),
            (ModelKind::Ctc, None, Some(t)) => {
                let tokens = ctx_core::symbols::SymbolTable::read(&path(t))?;
                let label = ["<blk>", "<blank>", "<b>"]
                    .iter()
                    .find_map(|b| tokens.id(b))
                    .ok_or_else(|| anyhow!("{t}: no <blk> or <blank> token; give `blank = COLUMN` in the files entry"))?;
                match &label_map {
                    Some(m) => m.get(label as usize).copied().filter(|&c| c != u32::MAX),
                    None => label.checked_sub(1),
                }
            }
            (ModelKind::Ctc, None, None) => Some(0),
        };
        let mut silence: Vec<u32> = f.silence_columns.iter().map(|c| c + 1).collect();
        silence.extend(blank.map(|c| c + 1));
        let (frame_s, acoustic_scale) = match f.model {
            ModelKind::Hybrid => (0.01, 0.1),
            ModelKind::Ctc => (0.04, 1.0),
        };
        Ok(Self {
            train_counts: Default::default(),
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
        })
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
                let need = self.graph.num_columns as usize;
                // Hybrid: exactly the graph's width unless a model width is declared; CTC
                // graphs may leave the last tokens unread (tokens.txt checks those).
                let exact = width.is_some() || self.ctc_blank.is_none();
                if m.cols() < need
                    || width.is_some_and(|w| w != m.cols())
                    || (exact && width.is_none() && m.cols() != need)
                {
                    bail!(
                        "{}: utterance {}: the scores have {} columns, but the graph reads {} ({}); scores and graph are from different models?{}",
                        table.path().display(),
                        u.id,
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
                    bail!(
                        "{}: utterance {} has no frames",
                        table.path().display(),
                        u.id
                    );
                }
                // Silence labels are columns + 1 (issue 58: a column beyond the width was
                // accepted, and endpointing never saw silence).
                if let Some(&c) = self.silence.iter().find(|&&l| l as usize > m.cols()) {
                    bail!(
                        "{}: utterance {}: silence column {} (silence_columns / \
                         --silence-columns) is beyond its {} score columns",
                        table.path().display(),
                        u.id,
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
                        "warning: {}: utterance {}: scores up to {:.3e} in magnitude: each frame shifted by its maximum (f32 path costs would lose the graph's precision)",
                        table.path().display(),
                        u.id,
                        m.data().iter().fold(0f32, |a, v| a.max(v.abs()))
                    );
                    m.shift_rows_to_max_zero();
                }
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

    /// The entity classes NE-WER counts (Earnings: PERSON and ORG, as the thesis; ATC: all).
    fn ne_classes(&self) -> Option<BTreeSet<String>> {
        if let Some((classes, _)) = &self.files_scoring {
            return classes.clone();
        }
        if self.dataset.has_callsigns {
            None
        } else {
            Some(["PERSON", "ORG"].iter().map(|s| s.to_string()).collect())
        }
    }

    /// Scores hypotheses (one per utterance, in dataset order); `targets` are the words whose
    /// precision/recall/F1 is measured.
    pub fn score(
        &self,
        hyps: &[Vec<String>],
        targets: Option<&BTreeSet<String>>,
    ) -> Result<ScoreTotals> {
        let opts = ScoreOptions {
            ne_classes: self.ne_classes(),
            ne_insertions: if let Some((_, ins)) = &self.files_scoring {
                *ins
            } else if self.dataset.has_callsigns {
                NeInsertions::Inside
            } else {
                NeInsertions::Never
            },
            targets: targets.map(|t| t.iter().cloned().collect()),
        };
        score_with(&self.dataset, hyps, &opts)
    }
}

fn score_with(ds: &Dataset, hyps: &[Vec<String>], opts: &ScoreOptions) -> Result<ScoreTotals> {
    let mut totals = ScoreTotals::default();
    for (u, h) in ds.utterances.iter().zip(hyps) {
        let r = ScoringRef::with_spans(&u.id, &u.words, &u.entities)?;
        totals.add(&score_utterance(&r, h, opts));
    }
    Ok(totals)
}

/// Scores hypotheses of a simulated (registered, not `files`) dataset the way [`Setup::score`]
/// does: entities PERSON and ORG (Earnings) or callsigns (ATCO2), for methods without a graph.
pub fn score_dataset(
    ds: &Dataset,
    hyps: &[Vec<String>],
    targets: Option<&BTreeSet<String>>,
) -> Result<ScoreTotals> {
    let opts = ScoreOptions {
        ne_classes: (!ds.has_callsigns)
            .then(|| ["PERSON", "ORG"].iter().map(|s| s.to_string()).collect()),
        ne_insertions: if ds.has_callsigns {
            NeInsertions::Inside
        } else {
            NeInsertions::Never
        },
        targets: targets.map(|t| t.iter().cloned().collect()),
    };
    score_with(ds, hyps, &opts)
}

/// Decoder settings of a run.
#[derive(Debug, Clone)]
pub struct DecodeSettings {
    /// Beam search settings.
    pub config: DecoderConfig,
    /// Online chunk length in seconds (partial hypotheses after each).
    pub chunk_s: f64,
    /// Split streams at endpoints (Kaldi rules).
    pub endpointing: bool,
    /// Decoding threads (CPU backend).
    pub threads: usize,
    /// Where the frame step runs: the CPU reference, a GPU, or the GPU kernels on the CPU shim.
    pub backend: ctx_cuda::Backend,
    /// Streams per device batch (CUDA and shim backends).
    pub gpu_batch: usize,
    /// CTC setups: subtracted from the blank's log-probability on every frame (nats).
    pub blank_penalty: f32,
    /// CTC setups: added to the cost of every word a path emits (graph units).
    pub word_insertion_penalty: f32,
}

impl Default for DecodeSettings {
    fn default() -> Self {
        Self {
            config: DecoderConfig::default(),
            chunk_s: 0.5,
            endpointing: true,
            threads: 2,
            backend: ctx_cuda::Backend::Cpu,
            gpu_batch: 256,
            blank_penalty: 0.0,
            word_insertion_penalty: 0.0,
        }
    }
}

/// What decoding a dataset produced.
pub struct DecodeRun {
    /// Per utterance, in dataset order.
    pub results: Vec<UtteranceResult>,
    /// Seconds of audio.
    pub audio_s: f64,
    /// Wall seconds spent decoding (all threads together; simulation excluded).
    pub decode_s: f64,
    /// Wall seconds spent simulating scores.
    pub sim_s: f64,
    /// Wall seconds spent checking CTC inputs (every row a log-probability distribution) and
    /// applying the blank penalty: input validation, kept out of `decode_s` and RTFx as a real
    /// model's log-softmax is.
    pub check_s: f64,
    /// Threads used.
    pub threads: usize,
    /// The backend that decoded (cpu, cuda, shim) and, for a device, its name.
    pub backend: String,
    /// The device's name ("" on the CPU backend).
    pub device: String,
    /// Context words (open-vocabulary decoding): word id `words.len() + k` of the graph's
    /// table is `open_words[k]`.
    pub open_words: Vec<String>,
}

impl DecodeRun {
    /// Word strings of word ids: the graph's words, then the run's context words.
    pub fn words(&self, setup: &Setup, ids: &[u32]) -> Vec<String> {
        spell_words(setup, &self.open_words, ids)
    }

    /// Audio seconds per decoding second.
    pub fn rtfx(&self) -> f64 {
        self.audio_s / self.decode_s.max(1e-9)
    }
}

/// Each utterance's index in the dataset, by id.
fn utterance_index(setup: &Setup) -> std::collections::HashMap<&str, usize> {
    setup
        .dataset
        .utterances
        .iter()
        .enumerate()
        .map(|(i, u)| (u.id.as_str(), i))
        .collect()
}

/// [`decode`] with each utterance's booster chosen by its index in the dataset (per-utterance
/// booster tables built in dataset order).
pub fn decode_indexed(
    setup: &Setup,
    settings: &DecodeSettings,
    booster: &(dyn Fn(usize) -> Booster + Sync),
) -> Result<DecodeRun> {
    let index = utterance_index(setup);
    decode(setup, settings, &|u| booster(index[u.id.as_str()]))
}

/// [`decode_indexed`] with each utterance's open-vocabulary context (by dataset index).
pub fn decode_indexed_with(
    setup: &Setup,
    settings: &DecodeSettings,
    booster: &(dyn Fn(usize) -> Booster + Sync),
    contexts: &Contexts,
) -> Result<DecodeRun> {
    let index = utterance_index(setup);
    decode_with(
        setup,
        settings,
        &|u| booster(index[u.id.as_str()]),
        Some(contexts),
    )
}

/// Every utterance's open-vocabulary context (issue 42), compiled from its list at run time.
pub struct OpenContexts {
    /// Per utterance in dataset order (`None`: an empty list).
    pub contexts: Vec<Option<Arc<ContextGraph>>>,
    /// Per utterance, the main graph's side of negative weights: the in-vocabulary phrases'
    /// costs when a path completes them (a word automaton; `None` when none).
    pub penalties: Vec<Option<Booster>>,
    /// In-vocabulary phrases with a negative weight, summed over utterances.
    pub penalized: usize,
    /// Phrases compiled, summed over utterances.
    pub phrases: usize,
    /// Phrases left out (a word the model's pieces cannot spell), summed over utterances.
    pub unspellable: usize,
    /// Seconds spent compiling (each distinct list once).
    pub build_s: f64,
}

/// Compiles each utterance's `list` (phrases without their own weight at `weight`) into a
/// context graph over the TLG's tokens (the simulated CTC model's BPE pieces, the TLG's
/// topology, the decoder's word insertion penalty, at most `max_pause_s` of blanks between two
/// tokens of a phrase — `None`: unbounded; hybrid contexts have no blanks, a hybrid graph's
/// contexts are its phones' HMMs); utterances sharing a list share its graph. A
/// phrase with a negative weight is a penalty only: it is left out of the context graph (a
/// context path skips the LM costs of its words, so its copy could be cheaper than the main
/// path's even at a negative weight) and its in-vocabulary form gets a completion-cost
/// automaton ([`PhraseAutomaton::penalties`]) to stack on the stream's booster: −weight on
/// every main path that writes it.
pub fn open_contexts(
    setup: &Setup,
    list: &OpenList,
    weight: f32,
    max_pause_s: Option<f64>,
    settings: &DecodeSettings,
) -> Result<OpenContexts> {
    let max_blanks = max_pause_s.map(|s| ((s / setup.frame_s).round() as u32).max(1));
    // How a phrase's words become the graph's input units: BPE pieces over a TLG (a simulated
    // CTC model), or phones (the lexicon, letter-to-sound for unknown words) laid out as the
    // HCLG's monophone HMMs (a simulated hybrid model).
    enum Spell<'a> {
        Pieces(&'a Bpe, ctx_graph::ctc::CtcTopology),
        Phones(&'a Pronouncer, ctx_graph::hmm::UnitHmms),
    }
    let spell = match (&setup.acoustic, setup.graph.kind) {
        (Acoustic::Ctc(sim), GraphKind::Tlg(topo)) => Spell::Pieces(sim.bpe(), topo),
        (Acoustic::Hybrid { pron, .. }, GraphKind::Hclg) => Spell::Phones(
            pron,
            ctx_graph::hmm::UnitHmms::uniform(
                &HmmTopology::default(),
                setup.graph.symbols.num_units,
            ),
        ),
        _ => bail!(
            "dataset {}: open-vocabulary contexts are compiled for a simulated CTC model's TLG \
             or a simulated hybrid model's HCLG (this setup: {} graph)",
            setup.dataset.name,
            setup.graph.kind.name()
        ),
    };
    let units = &setup.graph.symbols.units;
    let pronounce = |w: &str| -> Option<Vec<u32>> {
        let Spell::Phones(pron, _) = &spell else {
            return None;
        };
        let (prons, _) = pron.pronounce(w).ok()?;
        prons.first()?.iter().map(|p| units.id(p)).collect()
    };
    if let OpenList::Dataset(ListKind::Global(name)) = list {
        if !setup.dataset.global_lists.contains_key(name) {
            bail!("dataset {} has no global list '{name}'", setup.dataset.name);
        }
    }
    let t = Instant::now();
    // A phrase file is read as a list arrives (its time counts); errors name file and line.
    let file = match list {
        OpenList::File(path) => Some(ContextList::read(path, weight, true)?),
        OpenList::Dataset(_) => None,
    };
    let wip = settings.word_insertion_penalty;
    let words = &setup.graph.symbols.words;
    type Built = (Option<Arc<ContextGraph>>, Option<(Booster, usize)>);
    let compile = |cl: &ContextList| -> Result<Built> {
        // A negative weight only penalises: the phrase stays out of the context graph (whose
        // copy skips the LM costs of its words, so even at a negative weight it can be cheaper
        // than the main path's), and its in-vocabulary form costs −weight on the main path.
        let pen = PhraseAutomaton::penalties(cl, |w| words.id(w).filter(|&i| i != 0))?
            .map(|(a, n)| (Booster::Phrases(a), n));
        let offered = ContextList {
            phrases: cl
                .phrases
                .iter()
                .filter(|p| p.weight >= 0.0)
                .cloned()
                .collect(),
        };
        if offered.phrases.is_empty() {
            return Ok((None, pen));
        }
        let mut g = match &spell {
            Spell::Pieces(bpe, topo) => {
                ContextGraph::compile(&offered, |w| Some(bpe.encode(w)), *topo, max_blanks)?
            }
            Spell::Phones(_, hmms) => ContextGraph::compile_hybrid(&offered, pronounce, hmms)?,
        };
        ctc_wfst::add_word_penalty(&mut g, wip);
        Ok((Some(Arc::new(g)), pen))
    };
    let shared = file.as_ref().map(&compile).transpose()?;
    let mut built: BTreeMap<Vec<Vec<String>>, Built> = BTreeMap::new();
    let mut out = OpenContexts {
        contexts: Vec::with_capacity(setup.dataset.utterances.len()),
        penalties: Vec::with_capacity(setup.dataset.utterances.len()),
        penalized: 0,
        phrases: 0,
        unspellable: 0,
        build_s: 0.0,
    };
    for u in &setup.dataset.utterances {
        let (c, pen) = match list {
            // Compiled once above, for every utterance.
            OpenList::File(_) => shared.clone().unwrap_or_default(),
            OpenList::Dataset(kind) => match built.entry(list_of(setup, u, kind).phrases) {
                Entry::Occupied(e) => e.get().clone(),
                Entry::Vacant(e) => {
                    let cl = ContextList {
                        phrases: e
                            .key()
                            .iter()
                            .map(|w| ctx_core::context_list::ContextPhrase {
                                words: w.clone(),
                                weight,
                            })
                            .collect(),
                    };
                    e.insert(compile(&cl)?).clone()
                }
            },
        };
        if let Some(g) = &c {
            out.phrases += g.phrases;
            out.unspellable += g.unspellable.len();
        }
        out.penalized += pen.as_ref().map_or(0, |p| p.1);
        out.contexts.push(c);
        out.penalties.push(pen.map(|p| p.0));
    }
    out.build_s = t.elapsed().as_secs_f64();
    Ok(out)
}

/// Decodes every utterance of the setup, `booster(u)` choosing each stream's booster.
pub fn decode(
    setup: &Setup,
    settings: &DecodeSettings,
    booster: &(dyn Fn(&Utterance) -> Booster + Sync),
) -> Result<DecodeRun> {
    decode_with(setup, settings, booster, None)
}

/// Each utterance's open-vocabulary context (issue 42), by its index in the dataset.
pub type Contexts = [Option<Arc<ContextGraph>>];

/// [`decode`] with open-vocabulary contexts (the graph must have the class slot): context
/// words come out numbered after the graph's words table, the same word the same id over
/// the run ([`DecodeRun::open_words`]).
pub fn decode_with(
    setup: &Setup,
    settings: &DecodeSettings,
    booster: &(dyn Fn(&Utterance) -> Booster + Sync),
    contexts: Option<&Contexts>,
) -> Result<DecodeRun> {
    let slot = setup.graph.symbols.context_slot();
    if contexts.is_some() && slot.is_none() {
        bail!(
            "dataset {}: open-vocabulary contexts need a graph built with the class slot",
            setup.dataset.name
        );
    }
    let index = match contexts {
        Some(_) => utterance_index(setup),
        None => Default::default(),
    };
    let context_of = |u: &Utterance| -> Option<Arc<ContextGraph>> {
        contexts.and_then(|c| c[index[u.id.as_str()]].clone())
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.threads.max(1))
        .build()?;
    // A CTC model decodes through ctc-wfst: its input checks, blank penalty and word
    // insertion penalty (a graph copy only when that penalty is set).
    let ctc = match setup.ctc_blank {
        Some(blank) => Some(ctc_wfst::CtcDecoder::new(
            &setup.csr,
            ctc_wfst::CtcConfig {
                search: settings.config.clone(),
                blank,
                blank_penalty: settings.blank_penalty,
                word_insertion_penalty: settings.word_insertion_penalty,
                context_slot: slot,
                ..ctc_wfst::CtcConfig::default()
            },
        )?),
        None => {
            if settings.blank_penalty != 0.0 || settings.word_insertion_penalty != 0.0 {
                bail!(
                    "dataset {}: blank and word insertion penalties are CTC settings; this is a {} graph",
                    setup.dataset.name,
                    setup.graph.kind.name()
                );
            }
            None
        }
    };
    let graph = ctc.as_ref().map_or(&setup.csr, |c| c.graph());
    let dec = Decoder::new(graph, settings.config.clone())?.with_silence(&setup.silence);
    // A graph with the slot declares it, with contexts or without (its arcs are no word).
    let dec = match slot {
        Some(w) => dec.with_context_slot(w)?,
        None => dec,
    };
    let prepare = |u: &Utterance, m: ScoreMatrix| -> Result<ScoreMatrix> {
        match &ctc {
            Some(c) => {
                let owned = match c.prepare(&u.id, &m)? {
                    std::borrow::Cow::Owned(x) => Some(x),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                Ok(owned.unwrap_or(m))
            }
            None => Ok(m),
        }
    };
    let chunk_rows = ((settings.chunk_s / setup.frame_s).round() as usize).max(1);
    let endpoint = settings
        .endpointing
        .then(|| EndpointConfig::kaldi(setup.frame_s as f32));
    let utts = &setup.dataset.utterances;
    let mut results = Vec::with_capacity(utts.len());
    let open_base = setup.graph.symbols.words.len() as u32;
    let mut open_words = OpenWords::default();
    let (mut decode_s, mut sim_s, mut check_s, mut audio_s) = (0.0, 0.0, 0.0, 0.0);
    let mut gpu = match ctx_cuda::open(settings.backend)? {
        ctx_cuda::Opened::Cpu => None,
        ctx_cuda::Opened::Device(dev) => Some(wfst_search::GpuDecoder::new(dec.clone(), dev)?),
    };
    let batch = match &gpu {
        Some(_) => settings.gpu_batch.max(1),
        None => 16 * settings.threads.max(1),
    };
    for group in utts.chunks(batch) {
        let t = Instant::now();
        // Results gathered in order, then the first error in dataset order (a parallel
        // `collect::<Result<_>>` would report whichever failure a thread met first).
        let mats: Vec<Result<ScoreMatrix>> =
            pool.install(|| group.par_iter().map(|u| setup.scores(u)).collect());
        let mats: Vec<ScoreMatrix> = mats.into_iter().collect::<Result<_>>()?;
        sim_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mats: Vec<ScoreMatrix> = match &ctc {
            None => mats,
            Some(_) => {
                let v: Vec<Result<ScoreMatrix>> = pool.install(|| {
                    group
                        .par_iter()
                        .zip(mats)
                        .map(|(u, m)| prepare(u, m))
                        .collect()
                });
                v.into_iter().collect::<Result<_>>()?
            }
        };
        check_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let out: Vec<wfst_search::Result<UtteranceResult>> = match &mut gpu {
            Some(gpu) => {
                let mut streams: Vec<Stream> = group
                    .iter()
                    .map(|u| {
                        let mut s = Stream::new(u.id.clone(), booster(u));
                        s.set_context(context_of(u));
                        s
                    })
                    .collect();
                let refs: Vec<&ScoreMatrix> = mats.iter().collect();
                gpu.decode_utterances(&mut streams, &refs, chunk_rows, endpoint.as_ref())
            }
            None => pool.install(|| {
                group
                    .par_iter()
                    .zip(&mats)
                    .map_init(
                        || Stream::new("", Booster::None),
                        |stream, (u, m)| {
                            stream.reset(u.id.clone(), booster(u));
                            stream.set_context(context_of(u));
                            decode_utterance(&dec, stream, m, chunk_rows, endpoint.as_ref())
                        },
                    )
                    .collect()
            }),
        };
        decode_s += t.elapsed().as_secs_f64();
        for r in out {
            let mut r = r?;
            renumber_context_words(&mut r, open_base, &mut open_words);
            results.push(r);
        }
        audio_s += group.iter().map(|u| u.duration_s).sum::<f64>();
    }
    let (backend, device) = match &gpu {
        Some(g) if g.is_gpu() => ("cuda".to_string(), g.device_name()),
        Some(g) => ("shim".to_string(), g.device_name()),
        None => ("cpu".to_string(), String::new()),
    };
    Ok(DecodeRun {
        results,
        audio_s,
        decode_s,
        sim_s,
        check_s,
        threads: settings.threads.max(1),
        backend,
        device,
        open_words: open_words.words,
    })
}

/// Word strings of word ids: the graph's words, then a run's context words (`open[k]` is word
/// id `words.len() + k`).
pub fn spell_words(setup: &Setup, open: &[String], ids: &[u32]) -> Vec<String> {
    let base = setup.graph.symbols.words.len();
    ids.iter()
        .map(|&i| match (i as usize).checked_sub(base) {
            Some(k) if k < open.len() => open[k].clone(),
            _ => setup
                .graph
                .symbols
                .words
                .symbol(i)
                .unwrap_or("<unk>")
                .to_string(),
        })
        .collect()
}

/// [`spell_words`] of every utterance's word ids.
pub fn spell_all(setup: &Setup, open: &[String], ids: &[Vec<u32>]) -> Vec<Vec<String>> {
    ids.iter().map(|w| spell_words(setup, open, w)).collect()
}

/// The context words of a run in order of first appearance (dataset order, so deterministic).
#[derive(Default)]
pub struct OpenWords {
    /// The words, in order of first appearance.
    pub words: Vec<String>,
    ids: std::collections::HashMap<String, u32>,
}

impl OpenWords {
    /// The run's id of context word `text` (`base + k` for its first appearance as k-th).
    pub fn id(&mut self, base: u32, text: &str) -> u32 {
        let next = base + self.words.len() as u32;
        *self.ids.entry(text.to_string()).or_insert_with(|| {
            self.words.push(text.to_string());
            next
        })
    }

    /// `ids` of a segment decoded with context words `cw`, renumbered to the run's.
    pub fn renumber(&mut self, base: u32, cw: Option<&wfst_search::ContextWords>, ids: &mut [u32]) {
        if let Some(cw) = cw {
            for w in ids {
                if let Some(text) = cw.word(*w) {
                    *w = self.id(base, text);
                }
            }
        }
    }
}

/// Renumbers an utterance's context words (best paths, lattices, partial hypotheses) from its
/// segments' own numbering to the run's: `base + k` for the run's k-th context word.
fn renumber_context_words(r: &mut UtteranceResult, base: u32, open: &mut OpenWords) {
    let Some(cw) = r.segments.iter().find_map(|s| s.context.clone()) else {
        return;
    };
    let mut map = |w: &mut u32| {
        if let Some(text) = cw.word(*w) {
            *w = open.id(base, text);
        }
    };
    for seg in &mut r.segments {
        seg.best.words.iter_mut().for_each(&mut map);
        if let Some(lat) = &mut seg.lattice {
            lat.arcs.iter_mut().for_each(|a| map(&mut a.word));
        }
    }
    for (_, p) in &mut r.partials {
        p.iter_mut().for_each(&mut map);
    }
}

/// Which list an utterance is biased with (Table 1's rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The utterance's (ATC) or document's (Earnings) list of phrases.
    Sequences,
    /// The distinct words of that list.
    Unigrams,
    /// Only the ground-truth entity of the utterance (ATC callsign; oracle).
    GroundTruth,
    /// A global list of the dataset for every utterance (ATC `rare`, Earnings `oracle`).
    Global(String),
    /// Every distinct word of the references being decoded, for every utterance (001 Fig. 6's
    /// "accurate" list).
    TestWords,
    /// As many words of the graph's vocabulary that never occur in those references, chosen by
    /// a fixed hash order (001 Fig. 6's "inaccurate" list).
    OtherWords,
}

impl ListKind {
    /// Parses `sequences`, `unigrams`, `gt`, `test-words`, `other-words` or `list:NAME` (a
    /// global list).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "test-words" => Some(Self::TestWords),
            "other-words" => Some(Self::OtherWords),
            "sequences" => Some(Self::Sequences),
            "unigrams" => Some(Self::Unigrams),
            "gt" | "ground-truth" => Some(Self::GroundTruth),
            _ => s
                .strip_prefix("list:")
                .filter(|n| !n.is_empty())
                .map(|n| Self::Global(n.to_string())),
        }
    }
}

/// The word sequences of an utterance's reference entities (the ground-truth phrases).
fn entity_phrases(u: &Utterance) -> impl Iterator<Item = Vec<String>> + '_ {
    u.entities.iter().map(|(_, s, e)| u.words[*s..*e].to_vec())
}

/// The list of a set-wide kind (one list for every utterance: a global list, the test words,
/// the other words); `None` for per-utterance kinds.
pub fn set_list(setup: &Setup, kind: &ListKind) -> Option<BiasList> {
    let test_words = || -> BTreeSet<&str> {
        setup
            .dataset
            .utterances
            .iter()
            .flat_map(|u| u.words.iter().map(String::as_str))
            .collect()
    };
    match kind {
        ListKind::Global(name) => Some(
            setup
                .dataset
                .global_lists
                .get(name)
                .cloned()
                .unwrap_or_default(),
        ),
        ListKind::TestWords => Some(BiasList {
            phrases: test_words()
                .into_iter()
                .map(|w| vec![w.to_string()])
                .collect(),
        }),
        ListKind::OtherWords => {
            let test = test_words();
            let fnv = |w: &str| {
                w.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
                })
            };
            let mut other: Vec<&str> = setup
                .graph
                .symbols
                .words
                .iter()
                .map(|(_, w)| w)
                .filter(|w| {
                    !test.contains(w) && !w.starts_with('#') && !w.starts_with('<') && *w != "<eps>"
                })
                .collect();
            other.sort_by_key(|w| (fnv(w), *w));
            other.truncate(test.len());
            Some(BiasList {
                phrases: other.into_iter().map(|w| vec![w.to_string()]).collect(),
            })
        }
        _ => None,
    }
}

/// Where an open-vocabulary run's phrase lists come from (issue 42).
#[derive(Debug, Clone, PartialEq)]
pub enum OpenList {
    /// Each utterance's dataset list of this kind, every phrase at the run's weight.
    Dataset(ListKind),
    /// One phrase file for every utterance (`file:PATH`): a phrase per line with an optional
    /// `<TAB>weight` (the run's weight otherwise; negative weights suppress).
    File(std::path::PathBuf),
}

impl OpenList {
    /// Parses `file:PATH` or a [`ListKind`].
    ///
    /// ```
    /// use ctxbench::pipeline::{ListKind, OpenList};
    /// assert_eq!(OpenList::parse("file:names.tsv"), Some(OpenList::File("names.tsv".into())));
    /// assert_eq!(OpenList::parse("gt"), Some(OpenList::Dataset(ListKind::GroundTruth)));
    /// assert_eq!(OpenList::parse("file:"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Self> {
        match s.strip_prefix("file:") {
            Some("") => None,
            Some(p) => Some(Self::File(p.into())),
            None => ListKind::parse(s).map(Self::Dataset),
        }
    }
}

/// The biasing list of an utterance.
pub fn list_of(setup: &Setup, u: &Utterance, kind: &ListKind) -> BiasList {
    dataset_list_of(&setup.dataset, u, kind)
        .unwrap_or_else(|| set_list(setup, kind).unwrap_or_default())
}

/// The list of an utterance that the dataset alone defines (its sequences, their unigrams, its
/// ground-truth entities, a global list); `None` for the kinds that need a graph's vocabulary
/// (test words, other words).
pub fn dataset_list_of(ds: &Dataset, u: &Utterance, kind: &ListKind) -> Option<BiasList> {
    Some(match kind {
        ListKind::Sequences => ds.list_for(u).cloned().unwrap_or_default(),
        ListKind::Unigrams => ds.list_for(u).map(BiasList::unigrams).unwrap_or_default(),
        ListKind::GroundTruth => BiasList {
            phrases: entity_phrases(u).collect(),
        },
        ListKind::Global(name) => ds.global_lists.get(name).cloned().unwrap_or_default(),
        ListKind::TestWords | ListKind::OtherWords => return None,
    })
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

/// Lattice biasing of every segment of every utterance; returns the hypotheses, the phrase
/// report and the seconds spent.
pub fn lattice_bias(
    setup: &Setup,
    run: &DecodeRun,
    kind: &ListKind,
    discount: f32,
) -> Result<(Vec<Vec<String>>, PhraseReport, f64)> {
    let (timed, report, secs) = lattice_bias_timed(setup, run, kind, discount)?;
    let hyps = timed
        .iter()
        .map(|t| run.words(setup, &t.iter().map(|w| w.word).collect::<Vec<_>>()))
        .collect();
    Ok((hyps, report, secs))
}

/// A hypothesis word with its time in the utterance (CTM).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedWord {
    /// Word id.
    pub word: u32,
    /// Start in seconds from the utterance start.
    pub start_s: f64,
    /// Duration in seconds.
    pub dur_s: f64,
}

fn timed_path(
    setup: &Setup,
    seg: &wfst_search::SegmentResult,
    path: &wfst_search::LatticePath,
) -> Vec<TimedWord> {
    let ends = path.end_rows(seg.rows as u32);
    // Every word is kept even if a path carried no times (then it spans the segment).
    path.words
        .iter()
        .enumerate()
        .map(|(i, &word)| {
            let s = path.start_rows.get(i).copied().unwrap_or(0);
            let e = ends.get(i).copied().unwrap_or(seg.rows as u32);
            TimedWord {
                word,
                start_s: (seg.start_row + s as u64) as f64 * setup.frame_s,
                dur_s: e.saturating_sub(s) as f64 * setup.frame_s,
            }
        })
        .collect()
}

/// The Viterbi best paths with word times.
pub fn best_timed(setup: &Setup, run: &DecodeRun) -> Vec<Vec<TimedWord>> {
    run.results
        .iter()
        .map(|r| {
            r.segments
                .iter()
                .flat_map(|seg| timed_path(setup, seg, &seg.best))
                .collect()
        })
        .collect()
}

/// [`lattice_bias`] with the word times of each rescored path.
pub fn lattice_bias_timed(
    setup: &Setup,
    run: &DecodeRun,
    kind: &ListKind,
    discount: f32,
) -> Result<(Vec<Vec<TimedWord>>, PhraseReport, f64)> {
    if let ListKind::Global(name) = kind {
        if !setup.dataset.global_lists.contains_key(name) {
            bail!("dataset {} has no global list '{name}'", setup.dataset.name);
        }
    }
    let t = Instant::now();
    let mut report = PhraseReport::default();
    let mut hyps = Vec::with_capacity(run.results.len());
    for (u, r) in setup.dataset.utterances.iter().zip(&run.results) {
        let ids = PhraseIds::new(&list_of(setup, u, kind), &setup.graph.symbols.words);
        report.add(&ids.report);
        // A boost (discount ≤ 0) composes with the phrase-prefix automaton, the biasing FST's
        // deterministic equivalent (one build per utterance, no closures); a penalty with the
        // FST itself.
        let automaton = if discount <= 0.0 && !ids.is_empty() {
            Some(PhraseAutomaton::new(&ids.phrases, discount)?)
        } else {
            None
        };
        let mut words = Vec::new();
        for seg in &r.segments {
            let lat = seg
                .lattice
                .as_ref()
                .ok_or_else(|| anyhow!("{}: lattice biasing needs lattices", u.id))?;
            if ids.is_empty() {
                words.extend(timed_path(setup, seg, &seg.best));
                continue;
            }
            let best = match &automaton {
                Some(a) => prefix_biased_best_path(lat, a),
                None => {
                    let mut vocab: Vec<u32> = lat.arcs.iter().map(|a| a.word).collect();
                    vocab.extend(ids.phrases.iter().flatten().copied());
                    vocab.sort_unstable();
                    vocab.dedup();
                    biased_best_path(lat, &build_biasing_fst(&vocab, &ids.phrases, discount)?)
                }
            };
            match best {
                Some(p) => words.extend(timed_path(setup, seg, &p.path)),
                None => words.extend(timed_path(setup, seg, &seg.best)),
            }
        }
        hyps.push(words);
    }
    Ok((hyps, report, t.elapsed().as_secs_f64()))
}

/// The 1-best hypotheses of a run.
pub fn best_hyps(setup: &Setup, run: &DecodeRun) -> Vec<Vec<String>> {
    run.results
        .iter()
        .map(|r| run.words(setup, &r.words()))
        .collect()
}

/// Peak resident memory of this process in MB (Linux `VmHWM`; `None` elsewhere).
pub fn peak_mem_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The paper's row label of an output in 000 Table 1 ("Online decoding on CPU").
pub fn table1_row(output: &str) -> &'static str {
    match output {
        "none" => "No biasing",
        "unigrams" => "Biased unigrams (partial hypotheses)",
        "sequences" => "Biased sequences (partial hypotheses)",
        "gt" => "Biased GT (partial hypotheses)",
        _ => "other",
    }
}

/// One scored output of a decoding run: the 1-best, or the 1-best after lattice biasing.
pub struct Output {
    /// Hypotheses in dataset order.
    pub hyps: Vec<Vec<String>>,
    /// The same words with their times (CTM).
    pub timed: Vec<Vec<TimedWord>>,
    /// Their scores.
    pub totals: ScoreTotals,
    /// Seconds spent rescoring (0 for the 1-best).
    pub rescore_s: f64,
    /// Phrases kept/dropped by lattice biasing.
    pub report: Option<PhraseReport>,
}

/// Scores the 1-best of `run` (`lattice` = `None`) or its lattices biased with a list and
/// discount; `targets` are the words precision/recall/F1 is measured on.
pub fn output(
    setup: &Setup,
    run: &DecodeRun,
    lattice: Option<(&ListKind, f32)>,
    targets: Option<&BTreeSet<String>>,
) -> Result<Output> {
    let (timed, rescore_s, report) = match lattice {
        None => (best_timed(setup, run), 0.0, None),
        Some((k, d)) => {
            let (h, rep, s) = lattice_bias_timed(setup, run, k, d)?;
            (h, s, Some(rep))
        }
    };
    let hyps: Vec<Vec<String>> = timed
        .iter()
        .map(|t| run.words(setup, &t.iter().map(|w| w.word).collect::<Vec<_>>()))
        .collect();
    let totals = setup.score(&hyps, targets)?;
    Ok(Output {
        hyps,
        timed,
        totals,
        rescore_s,
        report,
    })
}

/// The precision/recall target words: the global list `name`, or `rare` when the dataset has
/// one and no name is given. Returns the list name with the words.
pub fn targets(
    dataset: &Dataset,
    name: Option<&str>,
) -> Result<Option<(String, BTreeSet<String>)>> {
    let name = match name {
        Some(n) => n.to_string(),
        None if dataset
            .global_lists
            .contains_key(ctx_data::dataset::RARE_LIST) =>
        {
            ctx_data::dataset::RARE_LIST.to_string()
        }
        None => return Ok(None),
    };
    let list = dataset
        .global_lists
        .get(&name)
        .ok_or_else(|| anyhow!("dataset {} has no global list '{name}'", dataset.name))?;
    Ok(Some((
        name,
        list.phrases.iter().flatten().cloned().collect(),
    )))
}

/// How a simulated CTC model's outputs look next to a real one's (docs/design.md §5): the posterior
/// shape over every frame and the greedy (argmax) hypotheses' scores; `None` for models that
/// are not simulated CTC.
pub struct CtcRealism {
    /// Blank-argmax share, peakiness, entropy.
    pub shape: ctc_wfst::PosteriorShape,
    /// Greedy decoding's WER figures.
    pub greedy: ScoreTotals,
}

/// [`CtcRealism`] of the setup's utterances (scores simulated again: cheap next to decoding).
pub fn ctc_realism(setup: &Setup) -> Result<Option<CtcRealism>> {
    let Acoustic::Ctc(sim) = &setup.acoustic else {
        return Ok(None);
    };
    let mut shape = ctc_wfst::PosteriorShape::default();
    let mut hyps = Vec::with_capacity(setup.dataset.utterances.len());
    for u in &setup.dataset.utterances {
        let m = setup.scores(u)?;
        shape.add(&m, 0);
        let tokens = ctc_wfst::greedy_tokens(&m, 0);
        hyps.push(
            sim.bpe()
                .decode(&tokens)
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        );
    }
    let greedy = setup.score(&hyps, None)?;
    Ok(Some(CtcRealism { shape, greedy }))
}

/// Active tokens per frame over a run (after the beam, ε-closure included).
pub fn active_tokens(run: &DecodeRun) -> f64 {
    let segs = run.results.iter().flat_map(|r| &r.segments);
    let rows: f64 = segs.clone().map(|s| s.rows as f64).sum();
    let toks: f64 = segs.map(|s| s.tokens as f64).sum();
    toks / rows.max(1.0)
}

/// Lattice arcs per frame over a run (0 without lattices).
pub fn lattice_density(run: &DecodeRun) -> f64 {
    let segs = run.results.iter().flat_map(|r| &r.segments);
    let rows: f64 = segs.clone().map(|s| s.rows as f64).sum();
    let arcs: f64 = segs
        .filter_map(|s| s.lattice.as_ref())
        .map(|l| l.arcs.len() as f64)
        .sum();
    arcs / rows.max(1.0)
}

/// The lattice oracle WER in percent (002 Table 1's OWER): per utterance the fewest word errors
/// of any path of its word lattice against the reference, summed over the set, over the
/// reference words. Defined only when every utterance was decoded as one segment with a lattice
/// (`endpointing = false`); `None` otherwise. Reference words outside the graph's vocabulary
/// can never be matched.
pub fn oracle_wer(setup: &Setup, run: &DecodeRun) -> Option<f64> {
    let words = &setup.graph.symbols.words;
    let (mut errors, mut n) = (0usize, 0usize);
    for (u, r) in setup.dataset.utterances.iter().zip(&run.results) {
        let [seg] = r.segments.as_slice() else {
            return None;
        };
        let lattice = seg.lattice.as_ref()?;
        let reference: Vec<u32> = u
            .words
            .iter()
            .map(|w| words.id(w).unwrap_or(u32::MAX))
            .collect();
        errors += lattice.oracle(&reference)?.0;
        n += reference.len();
    }
    Some(100.0 * errors as f64 / n.max(1) as f64)
}

/// Resets the peak-resident-memory counter of this process (Linux `clear_refs` 5), so
/// [`peak_mem_mb`] measures from here; false where that is not possible.
pub fn reset_peak_mem() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

//! Decoding a setup: the decoder settings, the batched search over every utterance (online
//! chunks, endpointing, CPU or device backend, per-utterance boosters and contexts) and what it
//! produced.

use crate::pipeline::setup::Setup;
use anyhow::{bail, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_data::dataset::Utterance;
use ctx_graph::context::ContextGraph;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;
use wfst_search::{
    decode_utterance, Booster, Decoder, DecoderConfig, EndpointConfig, Engine, Stream,
    UtteranceResult,
};

/// Decoder settings of a run.
#[derive(Debug, Clone)]
pub struct DecodeSettings {
    /// Beam search settings.
    pub config: DecoderConfig,
    /// Online chunk length in seconds (partial hypotheses after each).
    pub chunk_s: f64,
    /// Split streams at endpoints (Kaldi rules); `None`: the model's default (hybrid on, CTC
    /// off: CTC models are decoded as whole utterances, as riva and FasterDecoder do).
    pub endpointing: Option<bool>,
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
            endpointing: None,
            threads: 2,
            backend: ctx_cuda::Backend::Cpu,
            gpu_batch: 256,
            blank_penalty: 0.0,
            word_insertion_penalty: 0.0,
        }
    }
}

impl DecodeSettings {
    /// The decoder settings of the common settings block; `model_scale` is the acoustic
    /// model's own acoustic scale (used unless the block sets one).
    pub fn from_common(c: &crate::settings::Common, model_scale: f32) -> Self {
        Self {
            config: DecoderConfig {
                beam: c.beam as f32,
                max_active: c.max_active,
                lattice_beam: c.lattice_beam as f32,
                lattice: c.lattice,
                acoustic_scale: c.acoustic_scale.map_or(model_scale, |x| x as f32),
                ..DecoderConfig::default()
            },
            chunk_s: c.chunk_s,
            endpointing: c.endpointing,
            threads: c.threads,
            gpu_batch: c.gpu_batch,
            backend: c.backend,
            ..DecodeSettings::default()
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

/// Decodes every utterance of the setup, `booster(u)` choosing each stream's booster.
pub fn decode(
    setup: &Setup,
    settings: &DecodeSettings,
    booster: &(dyn Fn(&Utterance) -> Booster + Sync),
) -> Result<DecodeRun> {
    decode_with(setup, settings, booster, None)
}

/// Each utterance's open-vocabulary context, by its index in the dataset.
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
    let index = match contexts {
        Some(_) => utterance_index(setup),
        None => Default::default(),
    };
    let utts = DatasetUtterances {
        setup,
        booster,
        context: &|u: &Utterance| contexts.and_then(|c| c[index[u.id.as_str()]].clone()),
    };
    search(&SearchGraph::of(setup), settings, &utts, contexts.is_some())
}

/// What the search needs of a setup: the graph, its CTC blank and class slot, silence and
/// frame shift. Made from a [`Setup`] (the CLI and the runner) or from a graph and arrays
/// alone (the Python package): one search for both.
#[derive(Clone)]
pub struct SearchGraph<'a> {
    /// The decoding graph.
    pub csr: &'a ctx_graph::csr::DecodingGraph,
    /// The words table's size: context words are numbered from here.
    pub words_len: u32,
    /// The class slot's word id when the graph has one (open-vocabulary contexts).
    pub context_slot: Option<u32>,
    /// A CTC model's blank score column; `None` for a hybrid model.
    pub ctc_blank: Option<u32>,
    /// Input labels of silence (endpointing).
    pub silence: &'a [u32],
    /// Seconds per score row.
    pub frame_s: f64,
    /// The dataset's name, for messages.
    pub name: &'a str,
    /// Each segment's 1-best is its lattice's cheapest path with graph costs weighted by this
    /// (a last pass at another language weight); `None`: the search's 1-best.
    pub bestpath_graph_scale: Option<f32>,
    /// The graph's kind, for messages ("hclg", "tlg").
    pub kind: String,
}

impl<'a> SearchGraph<'a> {
    /// The search graph of a dataset's setup.
    pub fn of(setup: &'a Setup) -> Self {
        Self {
            csr: &setup.csr,
            words_len: setup.graph.symbols.words.len() as u32,
            context_slot: setup.graph.symbols.context_slot(),
            ctc_blank: setup.ctc_blank,
            silence: &setup.silence,
            frame_s: setup.frame_s,
            name: &setup.dataset.name,
            kind: setup.graph.kind.name(),
            bestpath_graph_scale: setup.bestpath_graph_scale,
        }
    }
}

/// The utterances a search decodes, in order: where their scores, boosters and contexts come
/// from (a dataset's files or simulation; arrays handed over by Python).
pub trait SearchInputs: Sync {
    /// Number of utterances.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Utterance `i`'s id.
    fn id(&self, i: usize) -> &str;
    /// Utterance `i`'s audio seconds (for RTFx).
    fn duration_s(&self, i: usize) -> f64;
    /// Utterance `i`'s scores, made or handed over (called once per utterance).
    fn scores(&self, i: usize) -> Result<ScoreMatrix>;
    /// Utterance `i`'s booster.
    fn booster(&self, i: usize) -> Booster;
    /// Utterance `i`'s open-vocabulary context.
    fn context(&self, i: usize) -> Option<Arc<ContextGraph>>;
}

/// A setup's dataset as search inputs.
struct DatasetUtterances<'a> {
    setup: &'a Setup,
    booster: &'a (dyn Fn(&Utterance) -> Booster + Sync),
    context: &'a (dyn Fn(&Utterance) -> Option<Arc<ContextGraph>> + Sync),
}

impl SearchInputs for DatasetUtterances<'_> {
    fn len(&self) -> usize {
        self.setup.dataset.utterances.len()
    }
    fn id(&self, i: usize) -> &str {
        &self.setup.dataset.utterances[i].id
    }
    fn duration_s(&self, i: usize) -> f64 {
        self.setup.dataset.utterances[i].duration_s
    }
    fn scores(&self, i: usize) -> Result<ScoreMatrix> {
        self.setup.scores(&self.setup.dataset.utterances[i])
    }
    fn booster(&self, i: usize) -> Booster {
        (self.booster)(&self.setup.dataset.utterances[i])
    }
    fn context(&self, i: usize) -> Option<Arc<ContextGraph>> {
        (self.context)(&self.setup.dataset.utterances[i])
    }
}

/// Decodes `utts` on `graph` in batches (a CPU thread pool or a device), CTC inputs checked
/// and penalised through ctc-wfst; `with_contexts` says open-vocabulary contexts are given
/// (the graph must have the class slot). Results in input order; the first error in input
/// order is returned. A [`Searcher`] built once and run on each set.
pub fn search(
    graph: &SearchGraph,
    settings: &DecodeSettings,
    utts: &dyn SearchInputs,
    with_contexts: bool,
) -> Result<DecodeRun> {
    let searched = searched_graph(graph, settings);
    let mut searcher = Searcher::new(graph, &searched, settings)?;
    searcher.run(utts, with_contexts)
}

/// The graph a search reads: the graph with the word insertion penalty on every arc that
/// writes a word (a copy; CTC and hybrid graphs alike, as pocketsphinx's `-wip`), or the graph
/// itself.
pub fn searched_graph<'a>(
    graph: &SearchGraph<'a>,
    settings: &DecodeSettings,
) -> std::borrow::Cow<'a, ctx_graph::csr::DecodingGraph> {
    ctc_wfst::with_word_penalty(
        graph.csr,
        settings.word_insertion_penalty,
        graph.context_slot,
    )
}

/// A search made once — the graph checked, the thread pool, the CTC input checks, the backend
/// opened — and run on any number of input sets: the CLI's dataset, or each call of a Python
/// decoder (whose per-call cost was the graph's checks, rebuilt every call).
pub struct Searcher<'g> {
    graph: SearchGraph<'g>,
    settings: DecodeSettings,
    pool: rayon::ThreadPool,
    ctc: Option<ctc_wfst::CtcDecoder<'g>>,
    engine: Engine<'g>,
}

impl<'g> Searcher<'g> {
    /// A search of `graph` with `settings`; `searched` is [`searched_graph`]'s (the graph with
    /// the CTC word insertion penalty applied), borrowed for as long as the searcher lives.
    pub fn new(
        graph: &SearchGraph<'g>,
        searched: &'g ctx_graph::csr::DecodingGraph,
        settings: &DecodeSettings,
    ) -> Result<Self> {
        let slot = graph.context_slot;
        if settings.word_insertion_penalty != 0.0 && std::ptr::eq(searched, graph.csr) {
            bail!(
                "dataset {}: the searched graph lacks the word insertion penalty (searched_graph)",
                graph.name
            );
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(settings.threads.max(1))
            .build()?;
        // A CTC model decodes through ctc-wfst: its input checks and blank penalty (the word
        // insertion penalty is already on `searched`'s word arcs).
        let ctc = match graph.ctc_blank {
            Some(blank) => Some(ctc_wfst::CtcDecoder::new(
                searched,
                ctc_wfst::CtcConfig {
                    search: settings.config.clone(),
                    blank,
                    blank_penalty: settings.blank_penalty,
                    word_insertion_penalty: 0.0,
                    context_slot: slot,
                    ..ctc_wfst::CtcConfig::default()
                },
            )?),
            None => {
                if settings.blank_penalty != 0.0 {
                    bail!(
                        "dataset {}: the blank penalty is a CTC setting; this is a {} graph",
                        graph.name,
                        graph.kind
                    );
                }
                None
            }
        };
        let dec = Decoder::new(searched, settings.config.clone())?.with_silence(graph.silence);
        // CTC with endpoints: the blank is silence for the rules only where a path may end.
        let dec = match (graph.ctc_blank, settings.endpointing) {
            (Some(_), Some(true)) => dec.with_word_end_endpoints(),
            _ => dec,
        };
        // A graph with the slot declares it, with contexts or without (its arcs are no word).
        let dec = match slot {
            Some(w) => dec.with_context_slot(w)?,
            None => dec,
        };
        // The backend is opened (and named) by the engine, as every front end opens it.
        let engine = Engine::open(dec, settings.backend)?;
        Ok(Self {
            graph: graph.clone(),
            settings: settings.clone(),
            pool,
            ctc,
            engine,
        })
    }

    /// The backend that decodes (cpu, cuda, shim).
    pub fn backend(&self) -> String {
        self.engine.backend().to_string()
    }

    /// Decodes `utts` in batches (a CPU thread pool or a device); `with_contexts` says
    /// open-vocabulary contexts are given (the graph must have the class slot). Results in
    /// input order; the first error in input order is returned.
    pub fn run(&mut self, utts: &dyn SearchInputs, with_contexts: bool) -> Result<DecodeRun> {
        let (graph, settings, pool, ctc) = (&self.graph, &self.settings, &self.pool, &self.ctc);
        if with_contexts && graph.context_slot.is_none() {
            bail!(
                "dataset {}: open-vocabulary contexts need a graph built with the class slot",
                graph.name
            );
        }
        let prepare = |i: usize, m: ScoreMatrix| -> Result<ScoreMatrix> {
            match ctc {
                Some(c) => {
                    let owned = match c.prepare(utts.id(i), &m)? {
                        std::borrow::Cow::Owned(x) => Some(x),
                        std::borrow::Cow::Borrowed(_) => None,
                    };
                    Ok(owned.unwrap_or(m))
                }
                None => Ok(m),
            }
        };
        let chunk_rows = ((settings.chunk_s / graph.frame_s).round() as usize).max(1);
        let endpoint = settings
            .endpointing
            .unwrap_or(graph.ctc_blank.is_none())
            .then(|| EndpointConfig::kaldi(graph.frame_s as f32));
        let n = utts.len();
        let mut results = Vec::with_capacity(n);
        let open_base = graph.words_len;
        let mut open_words = OpenWords::default();
        let (mut decode_s, mut sim_s, mut check_s, mut audio_s) = (0.0, 0.0, 0.0, 0.0);
        let batch = match &self.engine {
            Engine::Device(_) => settings.gpu_batch.max(1),
            Engine::Cpu(_) => 16 * settings.threads.max(1),
        };
        for start in (0..n).step_by(batch.max(1)) {
            let group: Vec<usize> = (start..(start + batch).min(n)).collect();
            let t = Instant::now();
            // Results gathered in order, then the first error in input order (a parallel
            // `collect::<Result<_>>` would report whichever failure a thread met first).
            let mats: Vec<Result<ScoreMatrix>> =
                pool.install(|| group.par_iter().map(|&i| utts.scores(i)).collect());
            let mats: Vec<ScoreMatrix> = mats.into_iter().collect::<Result<_>>()?;
            sim_s += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let mats: Vec<ScoreMatrix> = match ctc {
                None => mats,
                Some(_) => {
                    let v: Vec<Result<ScoreMatrix>> = pool.install(|| {
                        group
                            .par_iter()
                            .zip(mats)
                            .map(|(&i, m)| prepare(i, m))
                            .collect()
                    });
                    v.into_iter().collect::<Result<_>>()?
                }
            };
            check_s += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let out: Vec<wfst_search::Result<UtteranceResult>> = match &mut self.engine {
                Engine::Device(gpu) => {
                    let mut streams: Vec<Stream> = group
                        .iter()
                        .map(|&i| {
                            let mut s = Stream::new(utts.id(i).to_string(), utts.booster(i));
                            s.set_context(utts.context(i));
                            s
                        })
                        .collect();
                    let refs: Vec<&ScoreMatrix> = mats.iter().collect();
                    gpu.decode_utterances(&mut streams, &refs, chunk_rows, endpoint.as_ref())
                }
                Engine::Cpu(dec) => pool.install(|| {
                    group
                        .par_iter()
                        .zip(&mats)
                        .map_init(
                            || Stream::new("", Booster::None),
                            |stream, (&i, m)| {
                                stream.reset(utts.id(i).to_string(), utts.booster(i));
                                stream.set_context(utts.context(i));
                                decode_utterance(dec, stream, m, chunk_rows, endpoint.as_ref())
                            },
                        )
                        .collect()
                }),
            };
            let out = match graph.bestpath_graph_scale {
                Some(k) => pool.install(|| {
                    out.into_par_iter()
                        .map(|r| r.map(|r| lattice_pass(r, k)))
                        .collect()
                }),
                None => out,
            };
            decode_s += t.elapsed().as_secs_f64();
            for r in out {
                let mut r = r?;
                renumber_context_words(&mut r, open_base, &mut open_words);
                results.push(r);
            }
            audio_s += group.iter().map(|&i| utts.duration_s(i)).sum::<f64>();
        }
        let (backend, device) = (self.engine.backend().to_string(), self.engine.device());
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
}

/// Each segment's 1-best replaced by its lattice's cheapest path with graph costs weighted by
/// `graph_scale` (segments without a lattice keep theirs).
fn lattice_pass(mut r: UtteranceResult, graph_scale: f32) -> UtteranceResult {
    for seg in &mut r.segments {
        if let Some(p) = seg
            .lattice
            .as_ref()
            .and_then(|l| l.best_path_scaled(graph_scale))
        {
            seg.best = p;
        }
    }
    r
}

/// Word strings of word ids: the graph's words, then a run's context words (`open[k]` is word
/// id `words.len() + k`).
pub fn spell_words(setup: &Setup, open: &[String], ids: &[u32]) -> Vec<String> {
    ids.iter()
        .map(|&i| spell_word(&setup.graph.symbols.words, open, i))
        .collect()
}

/// One word id's string: `words`' symbol, or context word `open[id - words.len()]` of a run
/// (`<unk>` for an id neither holds).
pub fn spell_word(words: &ctx_core::symbols::SymbolTable, open: &[String], id: u32) -> String {
    match (id as usize).checked_sub(words.len()) {
        Some(k) if k < open.len() => open[k].clone(),
        _ => words.symbol(id).unwrap_or("<unk>").to_string(),
    }
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

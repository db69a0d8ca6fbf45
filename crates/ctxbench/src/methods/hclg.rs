//! The HCLG-boosting family (000 §4, `hclg-boost`): the online batched pipeline with a context
//! registry, each stream biased by its own context — its utterance's (ATC) or document's
//! (Earnings) list — on the CPU backend or the CUDA kernels (a GPU, or the shim).
//!
//! Rows: `hclg-boost` alone is 000's GPU "No biasing" row (same pipeline, no context);
//! with `ctx_list` and `ctx_output = "partial"` the context's arcs are boosted during the
//! search and the output is the search's best path (000's "partial hypotheses" rows); with
//! `ctx_output = "endpoints"` the search is unbiased and each segment's lattice is rescored by
//! lattice biasing with the stream's context at its endpoint (000's "at endpoints" rows).
//! `ctx_schedule` switches every stream's context at a chunk (the context-switching
//! experiment); `clients` runs the load simulation of [`super::load`] instead of the batch.
//!
//! Contexts are pre-loaded before the streams start (000 §4.3: "all expected biasing FSTs are
//! pre-loaded"), so their build time is reported (`context_s`) and not counted in RTFx.
//!
//! With `open-vocab` each context also carries an open-vocabulary graph compiled
//! from the utterance's `open_vocab` list (the lexicon, letter-to-sound for unknown words,
//! the HCLG's HMMs), followed through the graph's class slot: the words it writes need not be
//! in the graph, and are written as the list spells them.

use super::components;
use super::components::open_vocab::OpenVocab;
use super::family::{
    accuracy_measures, check_global, check_targets, common, context_words, decode_key_of,
    decode_settings, graph_bytes, load_setup, record, setup_key_of, Component, Family, FamilySpec,
    GroupContext, SetupCache,
};
use crate::experiment::{Point, SettingSpec, Settings};
use crate::pipeline::{self, ListKind, Setup, SetupOptions};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use ctx_core::bias::BiasList;
use ctx_core::scores::ScoreMatrix;
use ctx_data::dataset::Dataset;
use ctx_graph::compile::GraphKind;
use hclg_boost::{Chunk, ContextRegistry, Engine, OnlinePipeline, PipelineConfig};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;
use wfst_search::{Decoder, EndpointConfig};

/// The HCLG-boosting family (see the module docs).
pub struct HclgBoost;

const COMPONENTS: &[Component] = &[
    Component {
        name: "hclg-boost",
        doc: "the online batched pipeline of hclg-boost: per-stream contexts as HCLG arc \
              indices (000 §4), switched at any chunk, lattice biasing at endpoints",
    },
    Component {
        name: "open-vocab",
        doc: "each stream's context also an open-vocabulary graph: its list's \
              phrases pronounced (lexicon, letter-to-sound) over the HCLG's HMMs, entered \
              through the graph's class slot, words outside the graph included",
    },
];

crate::settings_block! {
    /// The family's per-stream context settings (000 §4).
    pub struct PerStream in "hclg-boost" {
        /// each stream's context: its utterance's list of this kind (sequences, unigrams, gt,
        /// list:NAME, file:PATH or KIND+file:PATH); unset: no context
        ctx_list: Option<String> = None,
        /// partial (arcs boosted during the search, output = the search's best path) or
        /// endpoints (unbiased search, lattice biasing at each endpoint)
        ctx_output: String = "partial".into(),
        /// discount on a context's arcs during the search (graph units)
        ctx_discount: f64 = -2.0,
        /// lattice-biasing discount per word at endpoints (graph units)
        ctx_lattice_discount: f64 = -2.0,
        /// right (the stream's own context throughout), wrong (another utterance's), none,
        /// wrong-then-right or right-then-wrong (switched at chunk ctx_switch_chunk)
        ctx_schedule: String = "right".into(),
        /// the chunk (0-based) from which a *-then-* schedule uses its second context
        ctx_switch_chunk: usize = 0,
        /// load simulation: this many clients stream at real-time pace into the pipeline
        /// (unset: the set decoded in batches)
        clients: Option<usize> = None,
        /// load simulation: at most this many chunks per server batch
        client_batch: usize = 256,
    }
}

/// The blocks of the family's components as one point reads them.
struct Blocks {
    common: Common,
    stream: PerStream,
    open: OpenVocab,
}

impl Blocks {
    fn read(s: &Settings) -> Result<Self> {
        Ok(Self {
            common: Common::read(s)?,
            stream: PerStream::read(s)?,
            open: OpenVocab::read(s)?,
        })
    }
}

const SCHEDULES: &[&str] = &[
    "right",
    "wrong",
    "none",
    "wrong-then-right",
    "right-then-wrong",
];

impl FamilySpec for HclgBoost {
    fn name(&self) -> &'static str {
        "hclg-boost"
    }

    fn marker(&self) -> Option<&'static str> {
        Some("hclg-boost")
    }

    fn components(&self) -> Vec<Component> {
        COMPONENTS.to_vec()
    }

    fn settings(&self) -> Vec<SettingSpec> {
        [PerStream::SPECS, OpenVocab::SPECS].concat()
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        let b = Blocks::read(s).with_context(|| what.to_string())?;
        (|| {
            let (c, st) = (&b.common, &b.stream);
            if c.graph != "hclg" {
                bail!("graph '{}': the hclg-boost family decodes an HCLG", c.graph);
            }
            if let Some(v) = &st.ctx_list {
                if ListKind::parse(v).is_none() {
                    bail!("ctx_list '{v}' (sequences, unigrams, gt, list:NAME)");
                }
            }
            b.open.check()?;
            if !["partial", "endpoints"].contains(&st.ctx_output.as_str()) {
                bail!("ctx_output '{}' (partial or endpoints)", st.ctx_output);
            }
            let v = &st.ctx_schedule;
            if !SCHEDULES.contains(&v.as_str()) {
                bail!("ctx_schedule '{v}' ({})", SCHEDULES.join(", "));
            }
            if v != "right" && st.ctx_list.is_none() && b.open.open_vocab.is_none() {
                bail!("ctx_schedule '{v}' needs a ctx_list or an open_vocab list");
            }
            for (k, x) in [
                (crate::key!(PerStream, ctx_discount), st.ctx_discount),
                (
                    crate::key!(PerStream, ctx_lattice_discount),
                    st.ctx_lattice_discount,
                ),
            ] {
                let lattice = k == crate::key!(PerStream, ctx_lattice_discount);
                if !x.is_finite() || (lattice && x > 0.0) {
                    bail!("{k} {x} must be finite (and ≤ 0 for lattice biasing)");
                }
            }
            if st.clients == Some(0) || st.client_batch == 0 {
                bail!("'clients' and 'client_batch' must be at least 1");
            }
            Ok(())
        })()
        .with_context(|| what.to_string())
    }
}

impl Family for HclgBoost {
    fn check_lists(&self, ds: &Dataset, _full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)?;
        let b = Blocks::read(&p.settings)?;
        b.open.check_lists(ds)?;
        check_global(
            ds,
            crate::key!(PerStream, ctx_list),
            b.stream.ctx_list.as_deref(),
        )
    }

    fn setup_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        // The plain HCLG (or the one with the class slot): the wfst family's key for the same
        // graph, so the two share a loaded setup.
        setup_key_of("wfst", &b.common) + &b.open.setup_key()
    }

    fn decode_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        [
            self.setup_key(p),
            decode_key_of(&b.common),
            b.stream.key(),
            b.open.key(),
            b.open.file_key(),
        ]
        .join(";")
    }

    fn run_group(
        &self,
        cx: &GroupContext<'_>,
        group: &[usize],
        setup: &mut SetupCache,
    ) -> Result<Vec<PointRecord>> {
        let first = &cx.points[group[0]];
        let b = Blocks::read(&first.settings)?;
        pipeline::reset_peak_mem();
        let opts = SetupOptions {
            kind: GraphKind::Hclg,
            noise: b.common.noise,
            snr_db: b.common.snr_db,
            context_slot: b.open.slot(),
            ..SetupOptions::hclg(b.common.subset(), cx.cache)
        };
        // The plain HCLG (or the one with the class slot): the same on-disk graph cache entry
        // as the WFST family's.
        let st = load_setup(cx, &b.common, self.setup_key(first), &opts, setup)?;
        let settings = decode_settings(&b.common, st)?;
        let open = b.open.compile(st, &settings)?;
        if let Some(o) = open.as_ref().filter(|o| o.penalized > 0) {
            bail!(
                "dataset {}: the open-vocabulary lists hold in-vocabulary phrases with a \
                 negative weight ({} over all utterances' lists); suppressing them needs the \
                 main path penalised too (a word automaton, which the online pipeline's streams \
                 do not carry): decode them with the wfst family",
                st.dataset.name,
                o.penalized
            );
        }
        let contexts = Contexts::build(st, &b.stream, open.as_ref())?;
        let dec = Decoder::new(&st.csr, settings.config.clone())?.with_silence(&st.silence);
        let dec = match (&open, st.graph.symbols.context_slot()) {
            (Some(_), Some(w)) => dec.with_context_slot(w)?,
            _ => dec,
        };
        let engine = Engine::open(dec, settings.backend)?;
        let (backend, device) = (engine.backend(), engine.device());
        let output = b.stream.ctx_output.as_str();
        let mut pipe = OnlinePipeline::new(
            engine,
            contexts.registry,
            PipelineConfig {
                boost_search: output != "endpoints",
                rescore_endpoints: output == "endpoints",
                endpoint: settings
                    .endpointing
                    .unwrap_or(true)
                    .then(|| EndpointConfig::kaldi(st.frame_s as f32)),
                threads: settings.threads,
            },
        )?;
        let schedule = Schedule::of(&b.stream);
        let chunk_rows = ((settings.chunk_s / st.frame_s).round() as usize).max(1);
        // Streams per batch: the device's batch, or as the CPU decode runs them.
        let batch = if backend == "cpu" {
            16 * settings.threads.max(1)
        } else {
            settings.gpu_batch.max(1)
        };
        let mut m = BTreeMap::new();
        let (hyps, decode_s, audio_s, segments) = match b.stream.clients {
            Some(n) => {
                let cfg = super::load::LoadConfig {
                    streams: n,
                    chunk_s: settings.chunk_s,
                    frame_s: st.frame_s,
                    max_batch: b.stream.client_batch,
                    seed: 0x5eed,
                };
                let mut server = Server {
                    pipe: &mut pipe,
                    names: &contexts.names,
                    schedule,
                    chunk: HashMap::new(),
                    words: HashMap::new(),
                    open_words: pipeline::OpenWords::default(),
                    base: st.graph.symbols.words.len() as u32,
                };
                let utts = &st.dataset.utterances;
                let durations: Vec<f64> = utts.iter().map(|u| u.duration_s).collect();
                let r =
                    super::load::simulate(&cfg, &durations, &|i| st.scores(&utts[i]), &mut server)?;
                super::load::put_measures(&r, &mut m);
                let hyps = pipeline::spell_all(st, &server.open_words.words, &r.words);
                (hyps, r.compute_s, r.audio_s, None)
            }
            None => {
                let b =
                    decode_batches(st, &mut pipe, &contexts.names, schedule, chunk_rows, batch)?;
                // A real model's scoring is part of recognising the audio (as in base_measures).
                if matches!(st.acoustic, pipeline::Acoustic::Audio(_)) {
                    m.insert("am_s".into(), b.am_s);
                    m.insert(
                        "rtfx_am".into(),
                        b.audio_s / (b.am_s + b.decode_s).max(1e-9),
                    );
                }
                (b.hyps, b.decode_s, b.audio_s, Some(b.segments))
            }
        };
        let times = pipe.times();
        let reg = pipe.registry();
        m.insert("audio_s".into(), audio_s);
        m.insert("decode_s".into(), decode_s);
        // The load simulation's RTFx is the audio it held per simulated second (set above).
        m.entry("rtfx".into())
            .or_insert(audio_s / decode_s.max(1e-9));
        m.insert("rescore_s".into(), times.rescore_s);
        if let Some(p) = pipeline::peak_mem_mb() {
            m.insert("peak_mem_mb".into(), p);
        }
        m.insert("utterances".into(), st.dataset.utterances.len() as f64);
        m.insert("graph_states".into(), st.csr.num_states() as f64);
        m.insert("graph_arcs".into(), st.csr.num_arcs() as f64);
        m.insert("graph_mb".into(), graph_bytes(&st.csr) as f64 / 1e6);
        m.insert("audio_h".into(), audio_s / 3600.0);
        let docs: std::collections::BTreeSet<_> = st
            .dataset
            .utterances
            .iter()
            .filter_map(|u| u.doc.as_ref())
            .collect();
        if !docs.is_empty() {
            m.insert("documents".into(), docs.len() as f64);
        }
        if let Some(e) = contexts.entries {
            m.insert("list_entries".into(), e);
        }
        if let Some(n) = segments {
            m.insert("segments".into(), n as f64);
        }
        if !reg.is_empty() {
            let k = reg.len() as f64;
            let sum = |f: &dyn Fn(&hclg_boost::ContextReport) -> usize| {
                reg.reports().map(f).sum::<usize>() as f64
            };
            m.insert("context_s".into(), contexts.build_s);
            m.insert("contexts".into(), k);
            m.insert("boosted_arcs".into(), sum(&|r| r.arcs) / k);
            m.insert("context_kb".into(), sum(&|r| r.pool_bytes) / k / 1e3);
            m.insert("context_host_kb".into(), sum(&|r| r.host_bytes) / k / 1e3);
            m.insert("pool_mb".into(), 4.0 * reg.pool().len() as f64 / 1e6);
            m.insert("phrases_kept".into(), sum(&|r| r.kept));
            m.insert("phrases_dropped".into(), sum(&|r| r.oov_phrases));
            m.insert(
                "unbiased_contexts".into(),
                reg.reports().filter(|r| r.warning().is_some()).count() as f64,
            );
        }
        if let Some(o) = &open {
            // As the wfst family reports its open-vocabulary rows: phrases compiled and left
            // out per utterance, distinct words written that the graph lacks.
            let n = st.dataset.utterances.len().max(1) as f64;
            m.insert("phrases_kept".into(), o.phrases as f64 / n);
            m.insert("phrases_dropped".into(), o.unspellable as f64 / n);
            m.insert("context_words".into(), context_words(st, &hyps));
        }
        let mut out = Vec::new();
        for &i in group {
            let p = &cx.points[i];
            let targets = pipeline::targets(&st.dataset, common(p)?.targets.as_deref())?;
            let t = st.score(&hyps, targets.as_ref().map(|(_, t)| t))?;
            let mut mm = accuracy_measures(&t);
            mm.extend(m.clone());
            let dev = if backend == "cpu" {
                ""
            } else {
                device.as_str()
            };
            out.push(record(cx, i, mm, dev));
        }
        Ok(out)
    }
}

/// Each utterance's right and wrong context names (`None`: no context).
struct Contexts<'g> {
    registry: ContextRegistry<'g>,
    /// Per utterance: (right, wrong).
    names: Vec<(Option<String>, Option<String>)>,
    build_s: f64,
    /// Phrases in an utterance's list, mean over utterances (000 Table 2's "biasing entities").
    entries: Option<f64>,
}

impl<'g> Contexts<'g> {
    /// One context per distinct list of the point's kind (an utterance's, a document's, a
    /// global one) and open-vocabulary graph (`open`, per utterance); the wrong context of
    /// utterance i is the one of utterance i + n/2.
    fn build(
        st: &'g Setup,
        p: &PerStream,
        open: Option<&components::open_vocab::OpenContexts>,
    ) -> Result<Self> {
        let mut registry = ContextRegistry::new(
            &st.csr,
            &st.graph.symbols.words,
            p.ctx_discount as f32,
            p.ctx_lattice_discount as f32,
        )?;
        let utts = &st.dataset.utterances;
        let l = p.ctx_list.as_deref();
        if l.is_none() && open.is_none() {
            return Ok(Self {
                registry,
                names: vec![(None, None); utts.len()],
                build_s: 0.0,
                entries: None,
            });
        }
        let kind = match l {
            Some(l) => Some(ListKind::parse(l).ok_or_else(|| anyhow!("bad ctx_list '{l}'"))?),
            None => None,
        };
        let label = l.unwrap_or("open");
        let t = Instant::now();
        // One context per distinct (list, open-vocabulary graph).
        let mut by_list: HashMap<(Vec<Vec<String>>, usize), String> = HashMap::new();
        let mut lists: Vec<(String, BiasList)> = Vec::new();
        let mut graphs = Vec::new();
        let mut right = Vec::with_capacity(utts.len());
        let mut entries = 0usize;
        for (i, u) in utts.iter().enumerate() {
            let list = match &kind {
                Some(k) => pipeline::list_of(st, u, k),
                None => BiasList::default(),
            };
            entries += list.phrases.len();
            let graph = open.and_then(|o| o.contexts[i].clone());
            let key = (
                list.phrases,
                graph
                    .as_ref()
                    .map_or(0, |g| std::sync::Arc::as_ptr(g) as usize),
            );
            let name = match by_list.get(&key) {
                Some(n) => n.clone(),
                None => {
                    let name = format!("{label}:{}", u.id);
                    lists.push((
                        name.clone(),
                        BiasList {
                            phrases: key.0.clone(),
                        },
                    ));
                    if let Some(g) = graph {
                        graphs.push((name.clone(), g));
                    }
                    by_list.insert(key, name.clone());
                    name
                }
            };
            right.push(Some(name));
        }
        registry.add_many(&lists)?;
        for (name, g) in graphs {
            registry.set_open(&name, Some(g))?;
        }
        let n = utts.len();
        let names = (0..n)
            .map(|i| (right[i].clone(), right[(i + n / 2) % n].clone()))
            .collect();
        Ok(Self {
            registry,
            names,
            build_s: t.elapsed().as_secs_f64() + open.map_or(0.0, |o| o.build_s),
            entries: kind.map(|_| entries as f64 / n.max(1) as f64),
        })
    }
}

/// Which context a stream has at each chunk.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    /// (before the switch, from the switch on): 0 none, 1 right, 2 wrong.
    parts: (u8, u8),
    switch: usize,
}

impl Schedule {
    fn of(p: &PerStream) -> Self {
        let parts = match p.ctx_schedule.as_str() {
            "wrong" => (2, 2),
            "none" => (0, 0),
            "wrong-then-right" => (2, 1),
            "right-then-wrong" => (1, 2),
            _ => (1, 1),
        };
        Self {
            parts,
            switch: p.ctx_switch_chunk,
        }
    }

    /// The context of a stream with `names` at chunk `k`.
    fn at<'n>(&self, names: &'n (Option<String>, Option<String>), k: usize) -> Option<&'n str> {
        let part = if k < self.switch {
            self.parts.0
        } else {
            self.parts.1
        };
        match part {
            1 => names.0.as_deref(),
            2 => names.1.as_deref(),
            _ => None,
        }
    }
}

/// What decoding the set in batches produced.
struct Batches {
    hyps: Vec<Vec<String>>,
    decode_s: f64,
    audio_s: f64,
    /// Seconds spent producing the scores (a real acoustic model's time; simulation's else).
    am_s: f64,
    segments: usize,
}

/// Decodes the set through the pipeline, `batch` streams at a time, all of a batch's streams
/// fed chunk k together; scores are simulated outside the timed part.
fn decode_batches(
    st: &Setup,
    pipe: &mut OnlinePipeline<'_>,
    names: &[(Option<String>, Option<String>)],
    schedule: Schedule,
    chunk_rows: usize,
    batch: usize,
) -> Result<Batches> {
    let utts = &st.dataset.utterances;
    let mut out = Batches {
        hyps: Vec::with_capacity(utts.len()),
        decode_s: 0.0,
        audio_s: 0.0,
        am_s: 0.0,
        segments: 0,
    };
    let mut unbiased = 0usize;
    for (g, group) in utts.chunks(batch.max(1)).enumerate() {
        let base = g * batch.max(1);
        let t = Instant::now();
        let mats: Vec<ScoreMatrix> = group.iter().map(|u| st.scores(u)).collect::<Result<_>>()?;
        out.am_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        for (j, _) in group.iter().enumerate() {
            let id = (base + j) as u64;
            if pipe.open(id, schedule.at(&names[base + j], 0))?.is_some() {
                unbiased += 1;
            }
        }
        let mut words: Vec<Vec<String>> = vec![Vec::new(); group.len()];
        let chunks = mats
            .iter()
            .map(|m| m.rows().div_ceil(chunk_rows))
            .max()
            .unwrap_or(0);
        for k in 0..chunks {
            if k > 0 && k == schedule.switch {
                for j in 0..group.len() {
                    if k * chunk_rows < mats[j].rows() {
                        pipe.set_context((base + j) as u64, schedule.at(&names[base + j], k))?;
                    }
                }
            }
            let slices: Vec<(usize, ScoreMatrix)> = (0..group.len())
                .filter(|&j| k * chunk_rows < mats[j].rows())
                .map(|j| {
                    let m = &mats[j];
                    (
                        j,
                        m.slice_rows(k * chunk_rows..((k + 1) * chunk_rows).min(m.rows())),
                    )
                })
                .collect();
            let feed: Vec<Chunk<'_>> = slices
                .iter()
                .map(|(j, m)| Chunk {
                    id: (base + j) as u64,
                    scores: m,
                    first: k == 0,
                    last: (k + 1) * chunk_rows >= mats[*j].rows(),
                })
                .collect();
            for ((j, _), r) in slices.iter().zip(pipe.feed(&feed)) {
                let r = r.map_err(|e| anyhow!("utterance {}: {e}", group[*j].id))?;
                for s in r.segments {
                    out.segments += 1;
                    words[*j].extend(spell(st, &s));
                }
            }
        }
        out.decode_s += t.elapsed().as_secs_f64();
        out.audio_s += group.iter().map(|u| u.duration_s).sum::<f64>();
        out.hyps.extend(words);
    }
    if unbiased > 0 {
        eprintln!(
            "hclg-boost: {unbiased} stream(s) had a context that biases nothing (empty or all out-of-vocabulary list) and decoded unbiased"
        );
    }
    Ok(out)
}

/// A finished segment's words as text: a word of its open-vocabulary context as the list
/// spells it, the others from the graph's words table.
fn spell(st: &Setup, seg: &hclg_boost::Endpointed) -> Vec<String> {
    let cw = seg.segment.context.as_ref();
    seg.path
        .words
        .iter()
        .map(|&w| match cw.and_then(|c| c.word(w)) {
            Some(t) => t.to_string(),
            None => st.words(&[w]).remove(0),
        })
        .collect()
}

/// The pipeline as the load simulation's server: a channel per client utterance, its words
/// collected from every finished segment.
struct Server<'p, 'g, 'n> {
    pipe: &'p mut OnlinePipeline<'g>,
    names: &'n [(Option<String>, Option<String>)],
    schedule: Schedule,
    /// Per open channel: (utterance, next chunk).
    chunk: HashMap<u64, (usize, usize)>,
    words: HashMap<u64, Vec<u32>>,
    /// Open-vocabulary words written, numbered after the graph's (`base` on).
    open_words: pipeline::OpenWords,
    base: u32,
}

impl Server<'_, '_, '_> {
    /// A finished segment's output words, its context words renumbered to the run's.
    fn segment_words(&mut self, s: hclg_boost::Endpointed) -> Vec<u32> {
        let mut w = s.path.words;
        self.open_words
            .renumber(self.base, s.segment.context.as_ref(), &mut w);
        w
    }
}

impl super::load::ChunkServer for Server<'_, '_, '_> {
    fn open(&mut self, id: u64, utt: usize) -> Result<()> {
        self.pipe.open(id, self.schedule.at(&self.names[utt], 0))?;
        self.chunk.insert(id, (utt, 0));
        self.words.insert(id, Vec::new());
        Ok(())
    }

    fn push(&mut self, chunks: &[(u64, &ScoreMatrix)]) -> Result<()> {
        let mut feed = Vec::with_capacity(chunks.len());
        for &(id, m) in chunks {
            let (utt, k) = *self.chunk.get(&id).ok_or_else(|| anyhow!("channel {id}"))?;
            if k > 0 && k == self.schedule.switch {
                self.pipe
                    .set_context(id, self.schedule.at(&self.names[utt], k))?;
            }
            self.chunk.insert(id, (utt, k + 1));
            feed.push(Chunk {
                id,
                scores: m,
                first: k == 0,
                last: false,
            });
        }
        for (r, (id, _)) in self.pipe.feed(&feed).into_iter().zip(chunks) {
            let mut got = Vec::new();
            for s in r?.segments {
                got.extend(self.segment_words(s));
            }
            self.words.get_mut(id).expect("open channel").extend(got);
        }
        Ok(())
    }

    fn close(&mut self, id: u64) -> Result<Vec<u32>> {
        // The stream's end: an empty last chunk finishes its open segment.
        let empty = ScoreMatrix::new(0, 0, Vec::new())?;
        let r = self
            .pipe
            .feed(&[Chunk {
                id,
                scores: &empty,
                first: false,
                last: true,
            }])
            .pop()
            .expect("one result")?;
        self.chunk.remove(&id);
        let mut w = self.words.remove(&id).unwrap_or_default();
        for s in r.segments {
            w.extend(self.segment_words(s));
        }
        Ok(w)
    }
}

//! The online batched pipeline (000 §4.3; Kaldi's batched online pipeline): streams opened and
//! closed by correlation id, fed chunk by chunk in batches, each stream with its own context
//! that it may switch at any chunk.
//!
//! Per batch of chunks: every stream's booster is set from its current context (a switch made
//! with [`OnlinePipeline::set_context`] before a chunk applies from that chunk on — no graph
//! and no array is copied, the registry's shared arrays are referenced), the engine advances
//! all of them at once (CPU backend on a thread pool, or the CUDA backend with the registry's
//! pool on the device), endpoints close segments, and the stream's last chunk closes it. Each
//! finished segment's word lattice is rescored by lattice biasing with the stream's context
//! at that moment (000's "at endpoints" rows) when [`PipelineConfig::rescore_endpoints`] is
//! set; the partial hypothesis after each chunk is the search's best path so far (000's
//! "partial hypotheses" rows, biased when [`PipelineConfig::boost_search`] is set).
//!
//! A context with an open-vocabulary graph ([`ContextRegistry::set_open`]) is also
//! followed through the decoding graph's class slot (the engine's decoder opened with
//! `with_context_slot`), whatever `boost_search` says: its phrases are decoded whether the
//! graph knows their words or not. Its switches take effect at the stream's next segment (a
//! segment's tokens never straddle two contexts); the arc discounts switch at the chunk.

use crate::error::{HclgBoostError, Result};
use crate::registry::{ContextRegistry, ContextReport};
use ctx_core::bias::BiasList;
use ctx_core::scores::ScoreMatrix;
use lattice_rescorer::prefix_biased_best_path;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::Instant;
pub use wfst_search::Engine;
use wfst_search::{Booster, DecodeError, EndpointConfig, LatticePath, SegmentResult, Stream};

/// How the pipeline decodes and what it does at endpoints.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// Boost the context's arcs during the search (000's GPU method; partial hypotheses are
    /// biased). Off: the search is unbiased.
    pub boost_search: bool,
    /// At each endpoint, rescore the segment's word lattice by lattice biasing with the
    /// stream's context (needs lattices in the decoder settings).
    pub rescore_endpoints: bool,
    /// Endpoint rules (`None`: a segment ends only with the stream's last chunk).
    pub endpoint: Option<EndpointConfig>,
    /// Threads of the CPU backend and of endpoint rescoring.
    pub threads: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            boost_search: true,
            rescore_endpoints: false,
            endpoint: None,
            threads: 1,
        }
    }
}

/// One chunk of one stream.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    /// The stream's correlation id.
    pub id: u64,
    /// Score rows of the chunk.
    pub scores: &'a ScoreMatrix,
    /// The stream's first chunk.
    pub first: bool,
    /// The stream's last chunk: its segment is finished and the stream closed.
    pub last: bool,
}

/// A finished segment.
#[derive(Debug, Clone)]
pub struct Endpointed {
    /// The segment as the search left it (its best path, lattice, rows).
    pub segment: SegmentResult,
    /// The segment's output: the lattice-biased best path when rescored, else the search's.
    pub path: LatticePath,
    /// The stream's context when the segment ended.
    pub context: Option<String>,
    /// Whether lattice biasing chose `path`.
    pub rescored: bool,
}

/// What one chunk produced.
#[derive(Debug, Clone)]
pub struct ChunkResult {
    /// The stream.
    pub id: u64,
    /// The current segment's best words after the chunk (empty right after an endpoint).
    pub partial: Vec<u32>,
    /// Segments finished during the chunk (at endpoints, or by the last chunk).
    pub segments: Vec<Endpointed>,
    /// The chunk was the stream's last: the stream is closed.
    pub last: bool,
}

/// An open stream.
struct Slot {
    stream: Stream,
    context: Option<String>,
    fed: u64,
}

/// Time spent, in seconds, by part.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PipelineTimes {
    /// Advancing streams (the search).
    pub search_s: f64,
    /// Lattice biasing at endpoints.
    pub rescore_s: f64,
}

/// The online pipeline (see the module docs).
pub struct OnlinePipeline<'g> {
    engine: Engine<'g>,
    registry: ContextRegistry<'g>,
    cfg: PipelineConfig,
    pool: rayon::ThreadPool,
    streams: BTreeMap<u64, Slot>,
    /// Correlation ids closed by their last chunk (true) or by a decoding error (false),
    /// so a chunk fed after that is named for what it is.
    closed: BTreeMap<u64, bool>,
    times: PipelineTimes,
}

impl<'g> OnlinePipeline<'g> {
    /// A pipeline over `engine` with the contexts of `registry` (same graph).
    pub fn new(
        engine: Engine<'g>,
        registry: ContextRegistry<'g>,
        cfg: PipelineConfig,
    ) -> Result<Self> {
        if !std::ptr::eq(engine.decoder().graph(), registry.graph()) {
            return Err(HclgBoostError::Config(
                "the context registry was built for another graph than the decoder's".into(),
            ));
        }
        if cfg.rescore_endpoints && !engine.decoder().config().lattice {
            return Err(HclgBoostError::Config(
                "rescoring at endpoints needs lattices (decoder setting lattice = true)".into(),
            ));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cfg.threads.max(1))
            .build()
            .map_err(|e| HclgBoostError::Config(format!("thread pool: {e}")))?;
        Ok(Self {
            engine,
            registry,
            cfg,
            pool,
            streams: BTreeMap::new(),
            closed: BTreeMap::new(),
            times: PipelineTimes::default(),
        })
    }

    /// The contexts.
    pub fn registry(&self) -> &ContextRegistry<'g> {
        &self.registry
    }

    /// The engine.
    pub fn engine(&self) -> &Engine<'g> {
        &self.engine
    }

    /// Time spent so far.
    pub fn times(&self) -> PipelineTimes {
        self.times
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Loads contexts while streams run (see [`ContextRegistry::add_many`]).
    pub fn add_contexts(&mut self, lists: &[(String, BiasList)]) -> Result<Vec<ContextReport>> {
        self.registry.add_many(lists)
    }

    /// Removes a context no open stream uses.
    pub fn remove_context(&mut self, name: &str) -> Result<ContextReport> {
        let users: Vec<String> = self
            .streams
            .iter()
            .filter(|(_, s)| s.context.as_deref() == Some(name))
            .map(|(id, _)| id.to_string())
            .collect();
        if !users.is_empty() {
            return Err(HclgBoostError::ContextInUse {
                name: name.to_string(),
                streams: users.join(", "),
            });
        }
        self.registry.remove(name)
    }

    /// Checks a context name (an open-vocabulary graph needs the decoder's class slot); the
    /// warning of a context that biases nothing.
    fn check_context(&self, context: Option<&str>) -> Result<Option<String>> {
        let Some(c) = context else {
            return Ok(None);
        };
        if self.registry.open_graph(c)?.is_some() && self.engine.decoder().slot().is_none() {
            return Err(HclgBoostError::Config(format!(
                "context '{c}' has an open-vocabulary graph but the decoder has no class slot \
                 (a graph built with the slot, the decoder opened with with_context_slot)"
            )));
        }
        Ok(self.registry.report(c)?.warning())
    }

    /// Opens a stream with correlation id `id` and its first context (or none). Returns the
    /// context's warning when it biases nothing (the stream then decodes unbiased).
    pub fn open(&mut self, id: u64, context: Option<&str>) -> Result<Option<String>> {
        if self.streams.contains_key(&id) {
            return Err(HclgBoostError::StreamOpen(id));
        }
        let warning = self.check_context(context)?;
        self.closed.remove(&id);
        self.streams.insert(
            id,
            Slot {
                stream: Stream::new(id.to_string(), Booster::None),
                context: context.map(str::to_string),
                fed: 0,
            },
        );
        Ok(warning)
    }

    /// Switches a stream's context (or to none) from its next chunk on.
    pub fn set_context(&mut self, id: u64, context: Option<&str>) -> Result<Option<String>> {
        let warning = self.check_context(context)?;
        let slot = self.slot_mut(id)?;
        slot.context = context.map(str::to_string);
        Ok(warning)
    }

    /// A stream's current context.
    pub fn context_of(&self, id: u64) -> Result<Option<&str>> {
        match self.streams.get(&id) {
            Some(s) => Ok(s.context.as_deref()),
            None => Err(self.not_open(id)),
        }
    }

    /// Closes a stream without finishing its segment (a client that went away).
    pub fn close(&mut self, id: u64) -> Result<()> {
        match self.streams.remove(&id) {
            Some(_) => Ok(()),
            None => Err(self.not_open(id)),
        }
    }

    fn not_open(&self, id: u64) -> HclgBoostError {
        match self.closed.get(&id) {
            Some(true) => HclgBoostError::AfterLast(id),
            Some(false) => HclgBoostError::ChunkFlags {
                id,
                message: "the stream was closed by a decoding error".into(),
            },
            None => HclgBoostError::UnknownStream(id),
        }
    }

    fn slot_mut(&mut self, id: u64) -> Result<&mut Slot> {
        if !self.streams.contains_key(&id) {
            return Err(self.not_open(id));
        }
        Ok(self.streams.get_mut(&id).expect("checked"))
    }

    /// Checks a chunk against its stream's state.
    fn check_chunk(&self, c: &Chunk<'_>) -> Result<()> {
        let slot = self.streams.get(&c.id).ok_or_else(|| self.not_open(c.id))?;
        if c.first != (slot.fed == 0) {
            let message = if c.first {
                format!("first-chunk flag on chunk {} of the stream", slot.fed + 1)
            } else {
                "the stream's first chunk lacks the first-chunk flag".to_string()
            };
            return Err(HclgBoostError::ChunkFlags { id: c.id, message });
        }
        Ok(())
    }

    /// Feeds one chunk to each of several streams, all advanced as one batch. One result per
    /// chunk, in order: a chunk that cannot be decoded (an unknown or closed stream, wrong
    /// flags, a stream twice in the batch, a decoding error) gets its error and the others
    /// go on; a stream whose decoding failed is closed.
    pub fn feed(&mut self, chunks: &[Chunk<'_>]) -> Vec<Result<ChunkResult>> {
        let n = chunks.len();
        let mut out: Vec<Option<Result<ChunkResult>>> = (0..n).map(|_| None).collect();
        let mut seen = std::collections::BTreeSet::new();
        let mut batch: Vec<usize> = Vec::with_capacity(n);
        for (i, c) in chunks.iter().enumerate() {
            if !seen.insert(c.id) {
                out[i] = Some(Err(HclgBoostError::TwiceInBatch(c.id)));
                continue;
            }
            match self.check_chunk(c) {
                Ok(()) => batch.push(i),
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        // Take the batch's streams out, each with its current context's booster.
        let mut streams: Vec<Stream> = Vec::with_capacity(batch.len());
        let mut contexts: Vec<Option<String>> = Vec::with_capacity(batch.len());
        for &i in &batch {
            let slot = self.streams.get_mut(&chunks[i].id).expect("checked");
            let booster = match (&slot.context, self.cfg.boost_search) {
                (Some(c), true) => self.registry.booster(c).unwrap_or(Booster::None),
                _ => Booster::None,
            };
            let mut s = std::mem::replace(&mut slot.stream, Stream::new("", Booster::None));
            s.set_booster(booster);
            // The open-vocabulary graph (the one held already costs nothing to set again).
            let open = slot
                .context
                .as_deref()
                .and_then(|c| self.registry.open_graph(c).ok().flatten());
            s.set_context(open.cloned());
            streams.push(s);
            contexts.push(slot.context.clone());
            slot.fed += 1;
        }
        let refs: Vec<&ScoreMatrix> = batch.iter().map(|&i| chunks[i].scores).collect();
        let t = Instant::now();
        let endpoint = self.cfg.endpoint.as_ref();
        // On the device, the registry's pool first (a no-op unless it changed).
        let pool_loaded = match &mut self.engine {
            Engine::Device(gpu) => {
                let (id, generation) = self.registry.pool_key();
                gpu.load_arc_pool(id, generation, self.registry.pool())
            }
            Engine::Cpu(_) => Ok(()),
        };
        let engine = &mut self.engine;
        let mut res = match pool_loaded {
            Ok(()) => self
                .pool
                .install(|| engine.advance(&mut streams, &refs, endpoint)),
            Err(e) => (0..streams.len())
                .map(|_| Err(DecodeError::Gpu(e.to_string())))
                .collect(),
        };
        // The last chunk finishes the open segment.
        for (k, &i) in batch.iter().enumerate() {
            let s = &mut streams[k];
            if let (true, Ok(segs)) = (chunks[i].last, &mut res[k]) {
                if s.in_segment() && s.segment_rows() > 0 {
                    match self.engine.finish(s) {
                        Ok(seg) => segs.push(seg),
                        Err(e) => res[k] = Err(e),
                    }
                }
            }
        }
        self.times.search_s += t.elapsed().as_secs_f64();
        // Rescore finished segments with each stream's context, in parallel.
        let t = Instant::now();
        let registry = &self.registry;
        let rescore = self.cfg.rescore_endpoints;
        let results: Vec<Result<ChunkResult>> = self.pool.install(|| {
            res.into_par_iter()
                .zip(contexts.par_iter())
                .zip(streams.par_iter())
                .zip(batch.par_iter())
                .map(|(((r, ctx), s), &i)| {
                    let segs = r?;
                    let automaton = match (rescore, ctx) {
                        (true, Some(c)) => registry.automaton(c).ok().flatten(),
                        _ => None,
                    };
                    let segments = segs
                        .into_iter()
                        .map(|seg| endpointed(seg, ctx.clone(), automaton))
                        .collect();
                    let partial = if s.in_segment() {
                        s.partial().words
                    } else {
                        Vec::new()
                    };
                    Ok(ChunkResult {
                        id: chunks[i].id,
                        partial,
                        segments,
                        last: chunks[i].last,
                    })
                })
                .collect()
        });
        self.times.rescore_s += t.elapsed().as_secs_f64();
        // Streams back in their slots; closed ones out.
        for ((&i, s), r) in batch.iter().zip(streams).zip(results) {
            let id = chunks[i].id;
            let ok = r.is_ok();
            if chunks[i].last || !ok {
                self.streams.remove(&id);
                self.closed.insert(id, ok);
            } else {
                self.streams.get_mut(&id).expect("open").stream = s;
            }
            out[i] = Some(r);
        }
        out.into_iter()
            .map(|r| r.expect("every chunk answered"))
            .collect()
    }
}

/// A finished segment's output: lattice biasing with `automaton` when given.
fn endpointed(
    segment: SegmentResult,
    context: Option<String>,
    automaton: Option<&wfst_search::PhraseAutomaton>,
) -> Endpointed {
    let biased = match (automaton, &segment.lattice) {
        (Some(a), Some(lat)) => prefix_biased_best_path(lat, a),
        _ => None,
    };
    let rescored = biased.is_some();
    let path = biased.map_or_else(|| segment.best.clone(), |b| b.path);
    Endpointed {
        segment,
        path,
        context,
        rescored,
    }
}

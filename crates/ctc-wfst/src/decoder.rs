//! The CTC WFST decoder: offline batches and streaming channels over one TLG.
//!
//! A [`CtcDecoder`] owns the settings and (when a word insertion penalty is set) its own copy
//! of the graph with the penalty on every word arc; the search itself is `wfst-search`'s
//! frame-synchronous beam search with the blank as its silence label (for endpointing).
//! Boosters are per utterance or per channel and never copy the graph.

use crate::check::{check_normalised, check_topology, check_width};
use crate::config::CtcConfig;
use crate::error::{CtcError, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use wfst_search::{
    decode_utterance, Booster, Decoder, EndpointConfig, Engine, SegmentResult, Stream,
    UtteranceResult,
};

/// A CTC WFST decoder over one TLG.
#[derive(Debug, Clone)]
pub struct CtcDecoder<'g> {
    graph: Cow<'g, DecodingGraph>,
    config: CtcConfig,
    num_tokens: Option<usize>,
}

/// One utterance of an offline batch.
#[derive(Debug, Clone)]
pub struct CtcInput<'a> {
    /// Utterance id (names it in errors).
    pub id: &'a str,
    /// Log-probabilities, frames × tokens (blank included).
    pub scores: &'a ScoreMatrix,
    /// Its context (word or phrase boosting), or [`Booster::None`].
    pub booster: Booster,
    /// Its open-vocabulary context ([`CtcDecoder::context`]; needs a graph with a slot).
    pub context: Option<Arc<ContextGraph>>,
}

impl<'g> CtcDecoder<'g> {
    /// A decoder over `graph` (checked for the blank self-loop) with `config` (checked). With a
    /// word insertion penalty the decoder keeps a copy of the graph with the penalty added to
    /// every arc that emits a word.
    pub fn new(graph: &'g DecodingGraph, config: CtcConfig) -> Result<Self> {
        config.validate()?;
        check_topology(graph, config.blank)?;
        let graph = with_word_penalty(graph, config.word_insertion_penalty, config.context_slot);
        Ok(Self {
            graph,
            config,
            num_tokens: None,
        })
    }

    /// Requires every score matrix to have `n` columns (the size of tokens.txt).
    pub fn with_tokens(mut self, n: usize) -> Self {
        self.num_tokens = Some(n);
        self
    }

    /// The graph searched (with the word insertion penalty, when set).
    pub fn graph(&self) -> &DecodingGraph {
        &self.graph
    }

    /// The settings.
    pub fn config(&self) -> &CtcConfig {
        &self.config
    }

    /// The search engine over the graph, with the blank as its silence label (and the class
    /// slot, when the graph has one).
    pub fn engine(&self) -> Result<Decoder<'_>> {
        let d = Decoder::new(&self.graph, self.config.search.clone())?
            .with_silence(&[self.config.blank + 1]);
        Ok(match self.config.context_slot {
            Some(w) => d.with_context_slot(w)?,
            None => d,
        })
    }

    /// A stream's open-vocabulary context ready for this decoder: the word insertion penalty
    /// on every arc that writes a word, as on the TLG's own word arcs, so a phrase from the list
    /// and the same words through the graph pay alike.
    pub fn context(&self, mut context: ContextGraph) -> Arc<ContextGraph> {
        add_word_penalty(&mut context, self.config.word_insertion_penalty);
        Arc::new(context)
    }

    /// Checks an utterance's scores (width, normalisation) and applies the blank penalty.
    pub fn prepare<'a>(&self, utt: &str, m: &'a ScoreMatrix) -> Result<Cow<'a, ScoreMatrix>> {
        if let Some(n) = self.num_tokens {
            check_width(utt, m, n)?;
        }
        if (self.config.blank as usize) >= m.cols() {
            return Err(CtcError::Config(format!(
                "utterance {utt}: blank column {} is beyond the {} score columns",
                self.config.blank,
                m.cols()
            )));
        }
        check_normalised(utt, m, self.config.normalised_tol)?;
        if self.config.blank_penalty == 0.0 {
            return Ok(Cow::Borrowed(m));
        }
        let mut m = m.clone();
        let b = self.config.blank as usize;
        for t in 0..m.rows() {
            m.row_mut(t)[b] -= self.config.blank_penalty;
        }
        Ok(Cow::Owned(m))
    }

    /// Decodes a batch of whole utterances (offline: one segment each, no endpointing), in
    /// parallel on the current rayon pool, `chunk_rows` rows per step of partial hypotheses.
    /// One result per input, in order.
    pub fn decode_batch(
        &self,
        inputs: &[CtcInput<'_>],
        chunk_rows: usize,
    ) -> Vec<Result<UtteranceResult>> {
        let engine = match self.engine() {
            Ok(e) => e,
            Err(e) => {
                let msg = e.to_string();
                return inputs
                    .iter()
                    .map(|_| Err(CtcError::Config(msg.clone())))
                    .collect();
            }
        };
        inputs
            .par_iter()
            .map(|i| {
                let m = self.prepare(i.id, i.scores)?;
                let mut s = Stream::new(i.id, i.booster.clone());
                s.set_context(i.context.clone());
                Ok(decode_utterance(&engine, &mut s, &m, chunk_rows, None)?)
            })
            .collect()
    }

    /// A streaming front end over this decoder on the CPU backend; `endpoint` splits channels
    /// into segments.
    pub fn streaming(&self, endpoint: Option<EndpointConfig>) -> Result<StreamingCtc<'_>> {
        self.streaming_on(endpoint, ctx_cuda::Backend::Cpu)
    }

    /// [`Self::streaming`] on `backend`: the CUDA backend keeps the channels' state on the host
    /// between chunks, as the CPU backend does, and advances each batch of chunks as one batch
    /// of lanes on the device (001 §3.4).
    pub fn streaming_on(
        &self,
        endpoint: Option<EndpointConfig>,
        backend: ctx_cuda::Backend,
    ) -> Result<StreamingCtc<'_>> {
        // With endpoints, the blank is silence only where a path may end (never inside a word).
        let engine = match endpoint {
            Some(_) => self.engine()?.with_word_end_endpoints(),
            None => self.engine()?,
        };
        Ok(StreamingCtc {
            dec: self,
            engine: Engine::open(engine, backend)?,
            endpoint,
            channels: HashMap::new(),
        })
    }
}

/// Adds a word insertion penalty `p` to every arc of `context` that writes a word (what
/// [`CtcDecoder::context`] does; for callers that compile contexts without a decoder at hand).
pub fn add_word_penalty(context: &mut ContextGraph, p: f32) {
    if p != 0.0 {
        let g = &mut context.graph;
        for (w, &o) in g.weight.iter_mut().zip(&g.olabel) {
            if o != 0 {
                *w += p;
            }
        }
    }
}

/// `graph` with the word insertion penalty `p` added to every arc that writes a word (a copy),
/// or `graph` itself when `p` is 0. The class slot's arcs (output `slot`) write no word and keep
/// their entry cost.
pub fn with_word_penalty(
    graph: &DecodingGraph,
    p: f32,
    slot: Option<u32>,
) -> Cow<'_, DecodingGraph> {
    if p == 0.0 {
        return Cow::Borrowed(graph);
    }
    let mut g = graph.clone();
    let slot = slot.unwrap_or(0);
    for (w, &o) in g.weight.iter_mut().zip(&graph.olabel) {
        if o != 0 && o != slot {
            *w += p;
        }
    }
    Cow::Owned(g)
}

/// What one chunk of one channel produced.
#[derive(Debug, Clone, Default)]
pub struct ChunkResult {
    /// The partial hypothesis of the open segment after the chunk (word ids).
    pub partial: Vec<u32>,
    /// Segments an endpoint finished during the chunk.
    pub segments: Vec<SegmentResult>,
}

/// Streaming CTC decoding (001 §3.4): channels opened and closed by correlation id keep their
/// decoder state between chunks; a batch of chunks from different channels advances together.
pub struct StreamingCtc<'d> {
    dec: &'d CtcDecoder<'d>,
    engine: Engine<'d>,
    endpoint: Option<EndpointConfig>,
    channels: HashMap<u64, Stream>,
}

impl<'d> StreamingCtc<'d> {
    /// Opens channel `id` with its context.
    pub fn open(&mut self, id: u64, booster: Booster) -> Result<()> {
        if self.channels.contains_key(&id) {
            return Err(CtcError::Channel(id, "already open".into()));
        }
        self.channels
            .insert(id, Stream::new(format!("channel {id}"), booster));
        Ok(())
    }

    /// Switches channel `id`'s context; it applies from the next chunk.
    pub fn set_context(&mut self, id: u64, booster: Booster) -> Result<()> {
        let s = self
            .channels
            .get_mut(&id)
            .ok_or_else(|| CtcError::Channel(id, "not open".into()))?;
        s.set_booster(booster);
        Ok(())
    }

    /// Sets, switches or (with `None`) removes channel `id`'s open-vocabulary context
    /// ([`CtcDecoder::context`]); it applies from the channel's next segment (at once when no
    /// segment is open), so a segment never mixes two lists.
    pub fn set_open_context(&mut self, id: u64, context: Option<Arc<ContextGraph>>) -> Result<()> {
        let s = self
            .channels
            .get_mut(&id)
            .ok_or_else(|| CtcError::Channel(id, "not open".into()))?;
        s.set_context(context);
        Ok(())
    }

    /// `cpu`, `shim` or `cuda`, and the device's name ("" on the CPU).
    pub fn backend(&self) -> (&'static str, String) {
        (self.engine.backend(), self.engine.device())
    }

    /// Open channels.
    pub fn num_open(&self) -> usize {
        self.channels.len()
    }

    /// Advances each named channel by its chunk, channels in parallel; one result per chunk in
    /// order. A channel named twice in one batch is an error.
    pub fn push(&mut self, chunks: &[(u64, &ScoreMatrix)]) -> Result<Vec<ChunkResult>> {
        // Take the channels out of the table for the parallel step; put them back on every path.
        let mut ids = Vec::with_capacity(chunks.len());
        let mut streams = Vec::with_capacity(chunks.len());
        let mut prepared = Vec::with_capacity(chunks.len());
        let mut failed = None;
        for &(id, m) in chunks {
            let Some(s) = self.channels.remove(&id) else {
                failed = Some(CtcError::Channel(
                    id,
                    "not open (or named twice in one batch)".into(),
                ));
                break;
            };
            let p = self.dec.prepare(&s.id, m);
            ids.push(id);
            streams.push(s);
            match p {
                Ok(p) => prepared.push(p),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            self.channels.extend(ids.into_iter().zip(streams));
            return Err(e);
        }
        let refs: Vec<&ScoreMatrix> = prepared.iter().map(|p| p.as_ref()).collect();
        let out = self
            .engine
            .advance(&mut streams, &refs, self.endpoint.as_ref());
        let mut results = Vec::with_capacity(out.len());
        let mut err = None;
        for ((id, s), r) in ids.into_iter().zip(streams).zip(out) {
            match r {
                Ok(segments) => results.push(ChunkResult {
                    partial: if s.in_segment() {
                        s.partial().words
                    } else {
                        Vec::new()
                    },
                    segments,
                }),
                Err(e) => {
                    err.get_or_insert(e);
                }
            }
            self.channels.insert(id, s);
        }
        match err {
            Some(e) => Err(e.into()),
            None => Ok(results),
        }
    }

    /// Closes channel `id`: its open segment is finished (final lattice and best path).
    pub fn close(&mut self, id: u64) -> Result<Option<SegmentResult>> {
        let mut s = self
            .channels
            .remove(&id)
            .ok_or_else(|| CtcError::Channel(id, "not open".into()))?;
        if s.in_segment() && s.segment_rows() > 0 {
            Ok(Some(self.engine.finish(&mut s)?))
        } else {
            Ok(None)
        }
    }
}

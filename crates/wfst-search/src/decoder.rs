//! Many streams at once and whole utterances: the entry points of the CPU backend.

use crate::config::DecoderConfig;
use crate::context::{ContextWords, SlotInfo};
use crate::endpoint::EndpointConfig;
use crate::error::{DecodeError, Result};
use crate::lattice::{self, LatticePath, WordLattice};
use crate::search::Stream;
use crate::space::SearchSpace;
use crate::tokens::Partial;
use ctx_core::scores::ScoreMatrix;
use ctx_graph::csr::DecodingGraph;
use rayon::prelude::*;

/// A decoder: the graph, the search settings and the silence labels used for endpointing.
#[derive(Debug, Clone)]
pub struct Decoder<'g> {
    /// The graph, settings, silence labels and class slot the search reads.
    space: SearchSpace<'g>,
    /// With [`Self::with_word_end_endpoints`] (CTC): the states where a path may end; trailing
    /// silence counts toward an endpoint only there.
    may_end: Option<Vec<bool>>,
}

/// One finished segment (an utterance, or the part of a stream between endpoints).
#[derive(Debug, Clone)]
pub struct SegmentResult {
    /// Stream row where the segment starts.
    pub start_row: u64,
    /// Rows in the segment.
    pub rows: u64,
    /// Tokens kept over the segment's frames (after the beam, ε-closure included): divided by
    /// `rows`, the average active tokens per frame — how much a booster widens the search.
    pub tokens: u64,
    /// The Viterbi best path (start rows relative to the segment). Its graph/acoustic split
    /// comes from the lattice; without a lattice both are NaN (only the words are known).
    pub best: LatticePath,
    /// Whether the best path ends in a final state (otherwise every state counted as final).
    pub reached_final: bool,
    /// The pruned word lattice (when the config records lattices).
    pub lattice: Option<WordLattice>,
    /// Whether an endpoint rule ended the segment (false: end of stream).
    pub endpoint: bool,
    /// The open-vocabulary context the segment was decoded with: it spells the word ids from
    /// its base on (words the graph's table may not have).
    pub context: Option<ContextWords>,
}

/// A whole utterance decoded, possibly in several segments.
#[derive(Debug, Clone)]
pub struct UtteranceResult {
    /// Utterance id.
    pub id: String,
    /// Segments in order.
    pub segments: Vec<SegmentResult>,
    /// Partial hypotheses after each chunk (row after the chunk, words) when they changed.
    pub partials: Vec<(u64, Vec<u32>)>,
}

impl UtteranceResult {
    /// The words of all segments in order.
    pub fn words(&self) -> Vec<u32> {
        self.segments
            .iter()
            .flat_map(|s| s.best.words.iter().copied())
            .collect()
    }

    /// The running hypothesis after each chunk where it changed, as (row after the chunk,
    /// words): what a client of the online decoder sees — the words of the segments finished
    /// by then, followed by the open segment's partial hypothesis.
    pub fn running_partials(&self) -> Vec<(u64, Vec<u32>)> {
        let mut out: Vec<(u64, Vec<u32>)> = Vec::new();
        for (row, partial) in &self.partials {
            // A partial is taken only while a segment is open, so a segment ending at its row
            // is that open one (closed later, at the end of the stream): finished ones end
            // before it.
            let mut words: Vec<u32> = self
                .segments
                .iter()
                .filter(|s| s.start_row + s.rows < *row)
                .flat_map(|s| s.best.words.iter().copied())
                .collect();
            words.extend(partial);
            if out.last().map(|(_, w)| w) != Some(&words) {
                out.push((*row, words));
            }
        }
        out
    }
}

impl<'g> Decoder<'g> {
    /// A decoder over `graph` (checked) with `config` (checked).
    pub fn new(graph: &'g DecodingGraph, config: DecoderConfig) -> Result<Self> {
        config.validate()?;
        graph
            .validate()
            .map_err(|e| DecodeError::Config(format!("decoding graph: {e}")))?;
        Ok(Self {
            space: SearchSpace {
                graph,
                max_ilabel: graph.max_ilabel(),
                config,
                silence: Vec::new(),
                slot: None,
            },
            may_end: None,
        })
    }

    /// A CTC model's endpoints. CTC emits blank between a word's pieces as between words, and a
    /// path that reads a word's first spike as blank can be best for a few frames while a close
    /// competitor carries the word (Kaldi's rules would end the segment there and lose
    /// the word). So trailing silence counts only while the best path may end
    /// ([`crate::endpoint::may_end`]), and only as far back as every frontier token within the
    /// lattice beam of the best has been silent.
    pub fn with_word_end_endpoints(mut self) -> Self {
        self.may_end = Some(crate::endpoint::may_end(self.space.graph));
        self
    }

    /// The trailing silence rows and whether the best path has a word, as the endpoint rules
    /// read them ([`Self::with_word_end_endpoints`]: no trailing silence inside a word or while
    /// a close competitor is still emitting).
    pub(crate) fn endpoint_facts(&self, stream: &Stream) -> (u32, bool) {
        let (trailing, has_words) = stream.trailing_facts();
        match (&self.may_end, stream.best_state()) {
            (Some(ok), Some(s)) if !ok[s as usize] => (0, has_words),
            (Some(_), _) => (
                trailing.min(stream.trailing_within(self.space.config.lattice_beam)),
                has_words,
            ),
            _ => (trailing, has_words),
        }
    }

    /// Declares the graph's class slot (the output label of `LangSymbols::context_slot`), so
    /// its streams may carry open-vocabulary contexts ([`Stream::set_context`]) and streams
    /// without one skip the slot's arcs. A graph built with a slot must be opened this way: its
    /// slot arcs are otherwise ordinary ε arcs. Fails when the graph has no slot arc.
    ///
    /// Where the graph's slot arcs leave states that loop on a silence label ([`Self::with_silence`],
    /// given before or after), only those enter a context ([`SlotInfo::find`]).
    pub fn with_context_slot(mut self, word: u32) -> Result<Self> {
        let silence = |l: u32| self.is_silence(l);
        let slot = SlotInfo::find(self.space.graph, word, &silence).map_err(DecodeError::Config)?;
        self.space.slot = Some(slot);
        Ok(self)
    }

    /// The graph's class slot, when declared.
    pub fn slot(&self) -> Option<&SlotInfo> {
        self.space.slot()
    }

    /// Input labels that count as silence for endpointing (hybrid: the SIL pdfs + 1; CTC: the
    /// blank label).
    pub fn with_silence(mut self, labels: &[u32]) -> Self {
        let n = labels.iter().copied().max().map_or(0, |m| m as usize + 1);
        self.space.silence = vec![false; n];
        for &l in labels {
            self.space.silence[l as usize] = true;
        }
        // The slot's entries depend on the silence labels.
        if let Some(w) = self.space.slot.as_ref().map(|s| s.word) {
            let silence = |l: u32| self.is_silence(l);
            self.space.slot = SlotInfo::find(self.space.graph, w, &silence).ok();
        }
        self
    }

    /// What the search reads: graph, settings, silence labels, class slot.
    pub(crate) fn space(&self) -> &SearchSpace<'g> {
        &self.space
    }

    /// The graph.
    pub fn graph(&self) -> &'g DecodingGraph {
        self.space.graph()
    }

    /// The settings.
    pub fn config(&self) -> &DecoderConfig {
        self.space.config()
    }

    /// Whether `ilabel` is a silence label.
    #[inline]
    pub fn is_silence(&self, ilabel: u32) -> bool {
        self.space.is_silence(ilabel)
    }

    /// Checks a stream's chunk: wide enough for the graph and the stream's context, finite.
    /// The largest input label of the graph: score rows need that many columns.
    pub(crate) fn max_ilabel(&self) -> u32 {
        self.space.max_ilabel
    }

    pub(crate) fn check_stream_scores(&self, stream: &Stream, m: &ScoreMatrix) -> Result<()> {
        let needed = stream.context_max_ilabel().max(self.space.max_ilabel);
        self.check_rows(
            &stream.id,
            m,
            0..m.rows(),
            stream.rows_total() as usize,
            needed,
        )
    }

    /// Checks rows `rows` of `m` (stream row `row0` is the first of them).
    fn check_rows(
        &self,
        utt: &str,
        m: &ScoreMatrix,
        rows: std::ops::Range<usize>,
        row0: usize,
        max_ilabel: u32,
    ) -> Result<()> {
        if !rows.is_empty() && m.cols() < max_ilabel as usize {
            return Err(DecodeError::ScoreWidth {
                utt: utt.to_string(),
                cols: m.cols(),
                needed: max_ilabel as usize - 1,
                needed_label: max_ilabel,
            });
        }
        let cols = m.cols();
        if ctx_core::scores::all_finite(&m.data()[rows.start * cols..rows.end * cols]) {
            return Ok(());
        }
        for t in rows.clone() {
            if let Some((c, &v)) = m.row(t).iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(DecodeError::NonFinite {
                    utt: utt.to_string(),
                    frame: row0 + t - rows.start,
                    col: c,
                    value: v,
                });
            }
        }
        Ok(())
    }

    /// Feeds a chunk to one stream, row by row; with `endpoint`, a segment that reaches an
    /// endpoint is finished (and returned) and the next row starts a new one.
    pub fn feed(
        &self,
        stream: &mut Stream,
        chunk: &ScoreMatrix,
        endpoint: Option<&EndpointConfig>,
    ) -> Result<Vec<SegmentResult>> {
        self.feed_rows(stream, chunk, 0..chunk.rows(), endpoint)
    }

    /// [`Self::feed`] of rows `rows` of `m` (a chunk of a whole utterance, without copying it).
    pub fn feed_rows(
        &self,
        stream: &mut Stream,
        m: &ScoreMatrix,
        rows: std::ops::Range<usize>,
        endpoint: Option<&EndpointConfig>,
    ) -> Result<Vec<SegmentResult>> {
        // A stream's context may read columns the main graph does not.
        let needed = stream.context_max_ilabel().max(self.space.max_ilabel);
        self.check_rows(
            &stream.id,
            m,
            rows.clone(),
            stream.rows_total() as usize,
            needed,
        )?;
        stream
            .booster()
            .validate(self.space.graph.num_arcs(), self.space.graph.num_states())?;
        let mut done = Vec::new();
        for t in rows {
            if !stream.in_segment() {
                stream.begin_segment(&self.space)?;
            }
            stream.step_row(&self.space, m.row(t))?;
            if let Some(ep) = endpoint {
                let (trailing, has_words) = self.endpoint_facts(stream);
                if ep.detected(stream.segment_rows(), trailing, has_words, || {
                    stream.relative_final_cost(self.space.graph)
                }) {
                    let mut seg = self.finish(stream)?;
                    seg.endpoint = true;
                    done.push(seg);
                }
            }
        }
        Ok(done)
    }

    /// Advances many streams by one chunk each, in parallel (rayon); results per stream.
    pub fn advance(
        &self,
        streams: &mut [Stream],
        chunks: &[&ScoreMatrix],
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<Vec<SegmentResult>>> {
        streams
            .par_iter_mut()
            .zip(chunks.par_iter())
            .map(|(s, c)| self.feed(s, c, endpoint))
            .collect()
    }

    /// Ends the stream's current segment: final lattice pruning, the word lattice and the best
    /// path. The stream is ready for a new segment afterwards.
    pub fn finish(&self, stream: &mut Stream) -> Result<SegmentResult> {
        let g = self.space.graph;
        if !stream.in_segment() || stream.segment_rows() == 0 {
            return Err(DecodeError::EmptyUtterance {
                utt: stream.id.clone(),
            });
        }
        let (best, reached_final) = stream
            .best_final(g)
            .expect("a started segment has a frontier");
        let start_row = stream.segment_start();
        let rows = stream.segment_rows();
        let tokens = stream.segment_tokens();
        let lattice = if self.space.config.lattice {
            let front = &stream.frames.last().unwrap().toks;
            let best_total = best.cost;
            let finals = final_costs(front, g, stream.booster(), reached_final);
            let extra: Vec<f32> = front
                .iter()
                .zip(&finals)
                .map(|(t, f)| {
                    let e = t.cost + f - best_total;
                    if e.is_finite() {
                        e.max(0.0)
                    } else {
                        f32::INFINITY
                    }
                })
                .collect();
            lattice::prune(
                &mut stream.frames,
                self.space.config.lattice_beam,
                Some(&extra),
            );
            // Frontier tokens were compacted with the same order; recompute their finals.
            let front = &stream.frames.last().unwrap().toks;
            let finals = final_costs(front, g, stream.booster(), reached_final);
            let labels = stream.labels(&self.space);
            let lat =
                lattice::word_lattice(&stream.frames, &labels, &finals).map_err(|message| {
                    DecodeError::Lattice {
                        utt: stream.id.clone(),
                        message,
                    }
                })?;
            Some(lat)
        } else {
            None
        };
        let context = stream.active.as_ref().map(|a| ContextWords {
            base: a.word_base,
            graph: a.graph.clone(),
        });
        stream.end_segment();
        let best = LatticePath {
            words: best.words,
            start_rows: best.start_rows,
            graph: f32::NAN,
            ac: f32::NAN,
        };
        Ok(SegmentResult {
            start_row,
            rows,
            tokens,
            best: fill_costs(best, lattice.as_ref()),
            reached_final,
            lattice,
            endpoint: false,
            context,
        })
    }
}

/// Final cost of each frontier token (0 for all when no final state was reached).
fn final_costs(
    front: &[crate::tokens::LTok],
    g: &DecodingGraph,
    booster: &crate::booster::Booster,
    reached_final: bool,
) -> Vec<f32> {
    front
        .iter()
        .map(|t| {
            if reached_final {
                crate::tokens::main_final(g, t.state) + booster.final_cost(t.lm)
            } else {
                0.0
            }
        })
        .collect()
}

/// Takes the split costs of the best path from the lattice when it has the same words.
fn fill_costs(mut best: LatticePath, lat: Option<&WordLattice>) -> LatticePath {
    if let Some(p) = lat.and_then(|l| l.best_path()) {
        if p.words == best.words {
            best.graph = p.graph;
            best.ac = p.ac;
        }
    }
    best
}

/// Decodes one utterance in chunks of `chunk_rows` rows, recording partial hypotheses after
/// each chunk and, with `endpoint`, splitting it at endpoints. `stream` is reset and reused.
pub fn decode_utterance(
    dec: &Decoder<'_>,
    stream: &mut Stream,
    scores: &ScoreMatrix,
    chunk_rows: usize,
    endpoint: Option<&EndpointConfig>,
) -> Result<UtteranceResult> {
    if scores.rows() == 0 {
        return Err(DecodeError::EmptyUtterance {
            utt: stream.id.clone(),
        });
    }
    let chunk_rows = chunk_rows.max(1);
    let mut segments = Vec::new();
    let mut partials: Vec<(u64, Vec<u32>)> = Vec::new();
    let mut t = 0;
    while t < scores.rows() {
        let end = (t + chunk_rows).min(scores.rows());
        segments.extend(dec.feed_rows(stream, scores, t..end, endpoint)?);
        if stream.in_segment() {
            let p: Partial = stream.partial();
            if partials.last().map(|(_, w)| w) != Some(&p.words) {
                partials.push((stream.rows_total(), p.words));
            }
        }
        t = end;
    }
    if stream.in_segment() && stream.segment_rows() > 0 {
        segments.push(dec.finish(stream)?);
    }
    Ok(UtteranceResult {
        id: stream.id.clone(),
        segments,
        partials,
    })
}

//! The CUDA backend of the engine (docs/design.md §4, §10): the frame step of [`crate::search`] as
//! the kernels of `kernels/decoder.cu`, run for a batch of streams at once on a
//! [`ctx_cuda::Device`] — a GPU, or the CPU shim that runs the same kernels as C++.
//!
//! Division of labour. The device computes each frame: expansion, recombination, beam and
//! ε-closure, with the CPU's cost formula, tie rules and token numbering, and returns the
//! frame's tokens, back-pointers and lattice links. The host keeps what the CPU backend keeps
//! per stream (the lattice frames, word traces, endpointing, lattice pruning, the word lattice)
//! and runs the very same code on the returned frames ([`crate::search::Stream`]'s
//! `commit_frame`, [`crate::Decoder::finish`]), so a stream decoded here holds exactly the
//! frames the CPU backend would have built. A segment's first frame (the start state's
//! ε-closure) is built on the host.
//!
//! Streams are the "channels" (state that survives between chunks, on the host, with the
//! device's copy of each frontier reused while a stream keeps its lane); the device buffers
//! are "lanes", one per stream of the batch being advanced ([`frame`]). What the device
//! supports: no booster, one arc-index set per stream (sorted arc list, binary search), or one
//! word table per stream (sorted word ids, binary search on each arc's output label); and an
//! open-vocabulary context per stream ([`contexts`]: the batch's context graphs in one device
//! pool, a lane following its stream's through the class slot).
//! Word automata (LM difference, phrase automaton) and stacks stay on the CPU backend.

mod contexts;
mod frame;
mod step;

use crate::booster::Booster;
use crate::decoder::{Decoder, SegmentResult, UtteranceResult};
use crate::endpoint::EndpointConfig;
use crate::error::{DecodeError, Result};
use crate::search::Stream;
use crate::tokens::Partial;
use contexts::ContextPool;
use ctx_core::scores::ScoreMatrix;
use ctx_cuda::{DevPtr, Device};
use frame::{upload_new, Caps, GraphBufs, LaneBufs, LastStep, Launched, STEP_KERNELS};
use rayon::prelude::*;

/// What the device did so far: the work (frames, relaxed arcs) and its cost in launches and
/// synchronising copies — the figures to read before profiling.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuStats {
    /// Stream frames computed (one per stream per score row).
    pub frames: u64,
    /// Batched frame steps (one per score row of a batch).
    pub steps: u64,
    /// Arcs relaxed: emitting arcs of the expanded tokens plus ε arcs of the closure rounds.
    pub arcs: u64,
    /// ε-closure rounds (summed over steps).
    pub rounds: u64,
    /// Kernel launches.
    pub launches: u64,
    /// Copies of counts or results back to the host (each a synchronisation on a GPU).
    pub readbacks: u64,
    /// Frame steps replayed after a lane outgrew its buffers (the buffers grown first).
    pub replays: u64,
    /// Wall seconds in the frame steps (launches, waits on the device, the copies back and
    /// their unpacking per lane).
    pub step_s: f64,
    /// Wall seconds in the host's share after each step (every stream's `commit_frame` and
    /// endpoint check, run on the calling rayon pool's threads, one stream per task).
    pub host_s: f64,
}

/// The most streams one batch may hold: a lane is a row of the kernels' grid, and a CUDA grid
/// has at most 65,535 rows.
pub const MAX_BATCH: usize = 65_535;

/// A decoder whose frame step runs on a device (see the module doc).
pub struct GpuDecoder<'g> {
    dec: Decoder<'g>,
    dev: Box<dyn Device>,
    graph: GraphBufs,
    lanes: Option<LaneBufs>,
    boost: Option<BoostBufs>,
    /// A pool of arc lists held on the device ([`Self::load_arc_pool`]).
    pool: Option<DevicePool>,
    /// The batch's open-vocabulary context graphs on the device.
    contexts: Option<ContextPool>,
    /// The lane-context words last uploaded (empty: none since the lanes were allocated).
    lane_ctx_sent: Vec<u32>,
    /// Per-lane scratch to start with: tokens, enumerated arcs, links (grown on demand).
    initial: (usize, usize, usize),
    /// The chunk's scores as this decoder uploaded them (None: none, or resident scores).
    rows: Option<DevPtr>,
    /// Where the step's score rows are: row t of lane l at `row_base + (t · row_lanes + l) ·
    /// row_cols` floats (the uploaded chunk, or resident scores from their start row).
    row_base: u64,
    row_lanes: usize,
    /// Columns per row.
    row_cols: usize,
    /// Last frame number handed out (`Stream::gpu_epoch`).
    epoch: u64,
    /// Per lane: the epoch of the frontier its buffers hold (0: none).
    lane_epoch: Vec<u64>,
    /// The step's kernels, resolved once (`STEP_KERNELS`).
    kernels: [ctx_cuda::KernelId; STEP_KERNELS.len()],
    /// Threads per block of the item kernels.
    block: u32,
    /// Threads per block of the block-cooperative kernels (one block per lane).
    cta_block: u32,
    /// The last step's sizes (they size the next step's grids and copy back).
    last: LastStep,
    stats: GpuStats,
}

/// Where a batch's score rows come from.
enum Rows<'a> {
    /// Host matrices, one per stream: the chunk is uploaded (one copy).
    Host(&'a [&'a ScoreMatrix]),
    /// Scores on the device, from this row on.
    Device(&'a DeviceScores, usize),
}

/// Utterances' scores held on the device ([`GpuDecoder::upload_scores`]): row t of utterance
/// i at `(t · streams + i) · cols` floats — the layout of a batched model output `[T, B, V]`.
#[derive(Debug)]
pub struct DeviceScores {
    ptr: DevPtr,
    streams: usize,
    cols: usize,
    lens: Vec<usize>,
    /// Per utterance, its first non-finite value (row, column, value), seen at upload.
    non_finite: Vec<Option<(usize, usize, f32)>>,
}

impl DeviceScores {
    /// Rows per utterance.
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.ptr.bytes
    }
}

/// A pool of arc lists on the device: which pool, its layout generation, its length.
struct DevicePool {
    id: u64,
    generation: u64,
    len: usize,
    arcs: DevPtr,
}

/// The arc lists and word tables of a batch's boosters, with per-lane offsets: the lists
/// concatenated for this batch, or (`pooled`) the device pool's buffer itself.
struct BoostBufs {
    key: Vec<(usize, usize, u32)>,
    pooled: bool,
    arcs: DevPtr,
    off: DevPtr,
    len: DevPtr,
    discount: DevPtr,
    words: DevPtr,
    word_cost: DevPtr,
    word_off: DevPtr,
    word_len: DevPtr,
}

impl BoostBufs {
    fn free(&self, dev: &mut dyn Device) {
        if !self.pooled {
            dev.free(self.arcs);
        }
        for p in [
            self.off,
            self.len,
            self.discount,
            self.words,
            self.word_cost,
            self.word_off,
            self.word_len,
        ] {
            dev.free(p);
        }
    }
}

impl std::fmt::Debug for GpuDecoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuDecoder({})", self.dev.name())
    }
}

impl<'g> GpuDecoder<'g> {
    /// A decoder with `dec`'s graph and settings on `dev` (the graph is uploaded once).
    pub fn new(dec: Decoder<'g>, mut dev: Box<dyn Device>) -> Result<Self> {
        let is_gpu = dev.is_gpu();
        let mut kernels = [ctx_cuda::KernelId(0); STEP_KERNELS.len()];
        for (k, name) in kernels.iter_mut().zip(STEP_KERNELS) {
            *k = dev.kernel(name)?;
        }
        let graph = GraphBufs::upload(dev.as_mut(), dec.graph(), dec.slot())?;
        Ok(Self {
            dec,
            dev,
            graph,
            lanes: None,
            boost: None,
            pool: None,
            contexts: None,
            lane_ctx_sent: Vec::new(),
            initial: (1024, 8192, 8192),
            rows: None,
            row_base: 0,
            row_lanes: 0,
            row_cols: 0,
            epoch: 0,
            lane_epoch: Vec::new(),
            kernels,
            block: 256,
            cta_block: if is_gpu { 256 } else { shim_block() },
            last: LastStep::default(),
            stats: GpuStats::default(),
        })
    }

    /// Runs the block-cooperative kernels (one block per lane) with `threads` threads per block
    /// (1 to 1024; default 256 on a GPU, `CTX_SHIM_BLOCK` or 8 on the shim): every size gives
    /// the same frames, which the shim tests check.
    pub fn with_block_threads(mut self, threads: u32) -> Self {
        self.cta_block = threads.clamp(1, 1024);
        self
    }

    /// Starts each lane's scratch at `tokens` tokens, `arcs` enumerated arcs and `links`
    /// lattice links (at least 1 each, arcs at least tokens; default 1024, 8192, 8192): the
    /// buffers grow, and the frame is replayed, when a frame needs more. Small values exercise
    /// that path in tests.
    pub fn with_scratch(mut self, tokens: usize, arcs: usize, links: usize) -> Self {
        let tokens = tokens.max(1);
        // (The arc-sized buffers also hold per-token scan data: never fewer arcs than tokens.)
        self.initial = (tokens, arcs.max(tokens), links.max(1));
        self
    }

    /// The device's name (results carry it).
    pub fn device_name(&self) -> String {
        self.dev.name()
    }

    /// Whether the device is a real GPU (not the CPU shim).
    pub fn is_gpu(&self) -> bool {
        self.dev.is_gpu()
    }

    /// The host-side decoder (graph, settings, silence labels).
    pub fn decoder(&self) -> &Decoder<'g> {
        &self.dec
    }

    /// What the device did since this decoder was made.
    pub fn stats(&self) -> GpuStats {
        self.stats
    }

    /// Device bytes held by the lanes' scratch (0 before the first batch).
    pub fn scratch_bytes(&self) -> usize {
        self.lanes.as_ref().map_or(0, LaneBufs::bytes)
    }

    /// Puts a pool of arc lists on the device (replacing the one held): streams whose arc set
    /// carries a [`crate::PoolSlot`] of this pool, generation and length then read their list
    /// from it — a context switch changes a lane's offset, not the lists on the device.
    /// `(id, generation, arcs.len())` equal to the pool held already is a no-op.
    pub fn load_arc_pool(&mut self, id: u64, generation: u64, arcs: &[u32]) -> Result<()> {
        if self
            .pool
            .as_ref()
            .is_some_and(|p| (p.id, p.generation, p.len) == (id, generation, arcs.len()))
        {
            return Ok(());
        }
        let dev = self.dev.as_mut();
        // A batch reading the old pool must rebuild its tables.
        if let Some(b) = self.boost.take() {
            b.free(dev);
        }
        if let Some(p) = self.pool.take() {
            dev.free(p.arcs);
        }
        let data: &[u32] = if arcs.is_empty() { &[0] } else { arcs };
        let ptr = upload_new(dev, data, "the context registry's arc pool")?;
        self.pool = Some(DevicePool {
            id,
            generation,
            len: arcs.len(),
            arcs: ptr,
        });
        Ok(())
    }

    /// The pool held on the device: (id, generation, length).
    pub fn arc_pool(&self) -> Option<(u64, u64, usize)> {
        self.pool.as_ref().map(|p| (p.id, p.generation, p.len))
    }

    /// Advances every stream by its chunk, all streams as one batch on the device; like
    /// [`Decoder::advance`], one result per stream (segments finished at endpoints).
    pub fn advance(
        &mut self,
        streams: &mut [Stream],
        chunks: &[&ScoreMatrix],
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<Vec<SegmentResult>>> {
        let n = streams.len();
        if chunks.len() != n {
            let m = format!("{} streams but {} chunks", n, chunks.len());
            return (0..n).map(|_| Err(DecodeError::Gpu(m.clone()))).collect();
        }
        if n > MAX_BATCH {
            let m = format!(
                "a batch of {n} streams: one launch covers at most {MAX_BATCH} (a CUDA grid's \
                 rows, one per stream): decode fewer streams at once (--gpu-batch)"
            );
            return (0..n).map(|_| Err(DecodeError::Gpu(m.clone()))).collect();
        }
        let mut out: Vec<Result<Vec<SegmentResult>>> = (0..n).map(|_| Ok(Vec::new())).collect();
        for (i, (s, c)) in streams.iter().zip(chunks).enumerate() {
            if let Err(e) = self
                .dec
                .check_stream_scores(s, c)
                .and_then(|_| self.usable(s))
            {
                out[i] = Err(e);
            }
        }
        if let Err(e) = self.prepare(streams, Rows::Host(chunks)) {
            return (0..n).map(|_| Err(batch_error(&e, n))).collect();
        }
        let lens: Vec<usize> = chunks.iter().map(|c| c.rows()).collect();
        self.run_rows(streams, &lens, out, endpoint)
    }

    /// Advances every stream by rows `start..start + lens[i]` of scores already on the device
    /// (`upload_scores`, or a model's output), read where they are — as riva-asrlib-decoder
    /// takes its acoustic model's output tensor; like [`Self::advance`] otherwise.
    pub fn advance_resident(
        &mut self,
        streams: &mut [Stream],
        scores: &DeviceScores,
        start: usize,
        lens: &[usize],
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<Vec<SegmentResult>>> {
        let n = streams.len();
        if scores.streams != n || lens.len() != n {
            let m = format!(
                "{n} streams, {} lengths, resident scores of {} streams",
                lens.len(),
                scores.streams
            );
            return (0..n).map(|_| Err(DecodeError::Gpu(m.clone()))).collect();
        }
        let mut out: Vec<Result<Vec<SegmentResult>>> = (0..n).map(|_| Ok(Vec::new())).collect();
        for (i, s) in streams.iter().enumerate() {
            let needed = s.context_max_ilabel().max(self.dec.max_ilabel()) as usize;
            let r = if start + lens[i] > scores.lens[i] {
                Err(DecodeError::Gpu(format!(
                    "utterance {}: rows {}..{} of resident scores with {} rows",
                    s.id,
                    start,
                    start + lens[i],
                    scores.lens[i]
                )))
            } else if lens[i] > 0 && scores.cols < needed {
                Err(DecodeError::ScoreWidth {
                    utt: s.id.clone(),
                    cols: scores.cols,
                    needed: needed - 1,
                    needed_label: needed as u32,
                })
            } else {
                match scores.non_finite[i] {
                    Some((row, col, value)) if (start..start + lens[i]).contains(&row) => {
                        Err(DecodeError::NonFinite {
                            utt: s.id.clone(),
                            frame: s.rows_total() as usize + row - start,
                            col,
                            value,
                        })
                    }
                    _ => self.usable(s),
                }
            };
            if let Err(e) = r {
                out[i] = Err(e);
            }
        }
        if let Err(e) = self.prepare(streams, Rows::Device(scores, start)) {
            return (0..n).map(|_| Err(batch_error(&e, n))).collect();
        }
        self.run_rows(streams, lens, out, endpoint)
    }

    /// Puts whole utterances' scores on the device for [`Self::advance_resident`] and
    /// [`Self::decode_resident`]: one upload, row t of utterance i at `(t · n + i) · cols`
    /// (the widest matrix's width; shorter rows padded). Non-finite values are noted per
    /// utterance here, where the host still sees them, and refused when decoded.
    pub fn upload_scores(&mut self, scores: &[&ScoreMatrix]) -> Result<DeviceScores> {
        let n = scores.len();
        let cols = scores.iter().map(|c| c.cols()).max().unwrap_or(0).max(1);
        let rows = scores.iter().map(|c| c.rows()).max().unwrap_or(0).max(1);
        let mut buf = vec![0f32; rows * n.max(1) * cols];
        let mut non_finite = vec![None; n];
        for (l, c) in scores.iter().enumerate() {
            for t in 0..c.rows() {
                let o = (t * n + l) * cols;
                buf[o..o + c.cols()].copy_from_slice(c.row(t));
                if non_finite[l].is_none() {
                    if let Some((k, &v)) = c.row(t).iter().enumerate().find(|(_, v)| !v.is_finite())
                    {
                        non_finite[l] = Some((t, k, v));
                    }
                }
            }
        }
        let ptr = upload_new(self.dev.as_mut(), &buf, "resident scores")?;
        Ok(DeviceScores {
            ptr,
            streams: n,
            cols,
            lens: scores.iter().map(|c| c.rows()).collect(),
            non_finite,
        })
    }

    /// Frees resident scores.
    pub fn free_scores(&mut self, scores: DeviceScores) {
        self.dev.free(scores.ptr);
    }

    /// Decodes whole utterances whose scores are on the device, as one batch and one chunk
    /// (no partial hypotheses between chunks); `streams[i]` decodes utterance i (streams are
    /// reset first). What [`Self::decode_utterances`] gives for one chunk, without the copy.
    pub fn decode_resident(
        &mut self,
        streams: &mut [Stream],
        scores: &DeviceScores,
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<UtteranceResult>> {
        for s in streams.iter_mut() {
            let b = s.booster().clone();
            let id = s.id.clone();
            s.reset(id, b);
        }
        let lens = scores.lens.clone();
        let res = self.advance_resident(streams, scores, 0, &lens, endpoint);
        res.into_iter()
            .zip(streams.iter_mut())
            .zip(&lens)
            .map(|((r, s), &len)| {
                let mut segments = r?;
                if len == 0 {
                    return Err(DecodeError::EmptyUtterance { utt: s.id.clone() });
                }
                if s.in_segment() && s.segment_rows() > 0 {
                    segments.push(self.dec.finish(s)?);
                }
                Ok(UtteranceResult {
                    id: s.id.clone(),
                    segments,
                    partials: Vec::new(),
                })
            })
            .collect()
    }

    /// Whether a stream can run here: its booster fits the graph and the device has it.
    fn usable(&self, s: &Stream) -> Result<()> {
        s.booster()
            .validate(self.dec.graph().num_arcs(), self.dec.graph().num_states())
            .and_then(|_| supported(s))
    }

    /// The frame loop over `lens[i]` rows per stream of the prepared scores (`out[i]` an error
    /// already: that stream sits the batch out).
    fn run_rows(
        &mut self,
        streams: &mut [Stream],
        lens: &[usize],
        mut out: Vec<Result<Vec<SegmentResult>>>,
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<Vec<SegmentResult>>> {
        let n = streams.len();
        let max_rows = lens.iter().copied().max().unwrap_or(0);
        // Without endpoint detection no segment ends inside the chunk: step t + 1 is launched
        // before the host commits step t (its lanes continue from the frontier and expand cut
        // the device holds), so the host's share runs while the device computes.
        let pipelined = endpoint.is_none();
        let mut next: Option<(Vec<bool>, Vec<bool>, Option<Launched>)> = None;
        for t in 0..max_rows {
            let t0 = std::time::Instant::now();
            let (active, cont, launched) = match next.take() {
                Some(x) => x,
                None => {
                    let mut active = vec![false; n];
                    for i in 0..n {
                        if out[i].is_ok() && t < lens[i] {
                            if !streams[i].in_segment() {
                                if let Err(e) = streams[i].begin_segment(self.dec.space()) {
                                    out[i] = Err(e);
                                    continue;
                                }
                            }
                            active[i] = true;
                        }
                    }
                    (active, Vec::new(), None)
                }
            };
            let step = self
                .run_step(streams, &active, &cont, t, launched)
                .and_then(|frames| {
                    if !pipelined || t + 1 >= max_rows {
                        return Ok((frames, None));
                    }
                    let a2: Vec<bool> = (0..n)
                        .map(|i| {
                            active[i]
                                && out[i].is_ok()
                                && matches!(frames[i], Some(Ok(_)))
                                && t + 1 < lens[i]
                        })
                        .collect();
                    let l = self.launch_step(streams, &a2, &a2, t + 1)?;
                    Ok((frames, Some((a2.clone(), a2, l))))
                });
            let frames = match step {
                Ok((f, nx)) => {
                    next = nx;
                    f
                }
                Err(e) => {
                    // A device failure ends the batch for every stream still in it.
                    for (i, a) in active.iter().enumerate() {
                        if *a {
                            out[i] = Err(batch_error(&e, n));
                        }
                    }
                    return out;
                }
            };
            self.stats.step_s += t0.elapsed().as_secs_f64();
            let t1 = std::time::Instant::now();
            // The host's share, every stream on its own (the streams are independent; the
            // epochs are numbered by lane, so the outcome does not depend on the threads).
            let base = self.epoch;
            let dec = &self.dec;
            streams
                .par_iter_mut()
                .zip(frames.into_par_iter())
                .zip(out.par_iter_mut())
                .enumerate()
                .for_each(|(i, ((s, f), o))| {
                    let Some(f) = f else { return };
                    if o.is_err() {
                        // Failed while this frame was computed (step t + 1 runs ahead).
                        return;
                    }
                    let f = match f {
                        Err(e) => {
                            *o = Err(e);
                            return;
                        }
                        Ok(f) => f,
                    };
                    s.bp = f.bps;
                    s.fit_map(&f.toks);
                    if let Err(e) =
                        s.commit_frame(dec.space(), f.toks, f.links, f.num_emitting, f.cutoff)
                    {
                        *o = Err(e);
                        return;
                    }
                    s.gpu_epoch = base + i as u64 + 1;
                    let Some(ep) = endpoint else { return };
                    let (trailing, has_words) = dec.endpoint_facts(s);
                    let g = dec.graph();
                    if ep.detected(s.segment_rows(), trailing, has_words, || {
                        s.relative_final_cost(g)
                    }) {
                        match dec.finish(s) {
                            Ok(mut seg) => {
                                seg.endpoint = true;
                                if let Ok(v) = o {
                                    v.push(seg);
                                }
                            }
                            Err(e) => *o = Err(e),
                        }
                    }
                });
            for (i, s) in streams.iter().enumerate() {
                if s.gpu_epoch == base + i as u64 + 1 {
                    self.lane_epoch[i] = s.gpu_epoch;
                }
            }
            self.epoch = base + n as u64;
            self.stats.host_s += t1.elapsed().as_secs_f64();
        }
        out
    }

    /// Ends a stream's segment (host code, as on the CPU backend).
    pub fn finish(&self, stream: &mut Stream) -> Result<SegmentResult> {
        self.dec.finish(stream)
    }

    /// Decodes whole utterances as one batch, in chunks of `chunk_rows` rows, with partial
    /// hypotheses after each chunk and endpoint splitting — [`crate::decode_utterance`] for
    /// many streams at once. `streams[i]` decodes `scores[i]` (streams are reset first).
    pub fn decode_utterances(
        &mut self,
        streams: &mut [Stream],
        scores: &[&ScoreMatrix],
        chunk_rows: usize,
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<UtteranceResult>> {
        let n = streams.len();
        if scores.len() != n {
            let m = format!("{} streams but {} score matrices", n, scores.len());
            return (0..n).map(|_| Err(DecodeError::Gpu(m.clone()))).collect();
        }
        let chunk_rows = chunk_rows.max(1);
        let mut segments: Vec<Vec<SegmentResult>> = vec![Vec::new(); n];
        let mut partials: Vec<Vec<(u64, Vec<u32>)>> = vec![Vec::new(); n];
        let mut failed: Vec<Option<DecodeError>> = (0..n).map(|_| None).collect();
        for (i, s) in streams.iter_mut().enumerate() {
            let b = s.booster().clone();
            let id = s.id.clone();
            s.reset(id, b);
            if scores[i].rows() == 0 {
                failed[i] = Some(DecodeError::EmptyUtterance { utt: s.id.clone() });
            }
        }
        let max_rows = scores.iter().map(|m| m.rows()).max().unwrap_or(0);
        let empty = ScoreMatrix::new(0, 0, Vec::new()).expect("an empty matrix");
        let mut t = 0;
        while t < max_rows {
            let chunks: Vec<ScoreMatrix> = (0..n)
                .map(|i| {
                    let m = scores[i];
                    if failed[i].is_some() || t >= m.rows() {
                        empty.clone()
                    } else {
                        m.slice_rows(t..(t + chunk_rows).min(m.rows()))
                    }
                })
                .collect();
            let refs: Vec<&ScoreMatrix> = chunks.iter().collect();
            let res = self.advance(streams, &refs, endpoint);
            for (i, r) in res.into_iter().enumerate() {
                if failed[i].is_some() || t >= scores[i].rows() {
                    continue;
                }
                match r {
                    Err(e) => failed[i] = Some(e),
                    Ok(segs) => {
                        segments[i].extend(segs);
                        let s = &streams[i];
                        if s.in_segment() {
                            let p: Partial = s.partial();
                            if partials[i].last().map(|(_, w)| w) != Some(&p.words) {
                                partials[i].push((s.rows_total(), p.words));
                            }
                        }
                    }
                }
            }
            t += chunk_rows;
        }
        let mut out = Vec::with_capacity(n);
        for (i, s) in streams.iter_mut().enumerate() {
            if let Some(e) = failed[i].take() {
                out.push(Err(e));
                continue;
            }
            if s.in_segment() && s.segment_rows() > 0 {
                match self.dec.finish(s) {
                    Ok(seg) => segments[i].push(seg),
                    Err(e) => {
                        out.push(Err(e));
                        continue;
                    }
                }
            }
            out.push(Ok(UtteranceResult {
                id: s.id.clone(),
                segments: std::mem::take(&mut segments[i]),
                partials: std::mem::take(&mut partials[i]),
            }));
        }
        out
    }

    /// Lanes for the batch, the boosters' arc lists, the context graphs and the chunks' scores
    /// on the device.
    fn prepare(&mut self, streams: &[Stream], rows: Rows<'_>) -> ctx_cuda::Result<()> {
        let n = streams.len().max(1);
        let dev = self.dev.as_mut();
        // Context graphs: the segments' own and the ones asked for (a segment that starts in
        // this batch takes the latter), in one pool; kept while it holds every one of them.
        let graphs = contexts::distinct(streams.iter().flat_map(|s| {
            s.active
                .as_ref()
                .map(|a| &a.graph)
                .into_iter()
                .chain(s.context())
        }));
        if graphs.is_empty() {
            if let Some(p) = self.contexts.take() {
                p.free(dev);
            }
        } else if !self.contexts.as_ref().is_some_and(|p| p.holds_all(&graphs)) {
            if let Some(p) = self.contexts.take() {
                p.free(dev);
            }
            self.contexts = Some(ContextPool::upload(dev, graphs)?);
        }
        // Per-state entries per lane: the main graph's, then each return index's context.
        let returns = self.dec.slot().map_or(0, |s| s.returns.len());
        let states = self.dec.graph().num_states()
            + returns * self.contexts.as_ref().map_or(0, |p| p.max_states);
        if self
            .lanes
            .as_ref()
            .is_none_or(|l| l.caps.lanes < n || l.caps.states < states)
        {
            let caps = match &self.lanes {
                Some(l) => Caps {
                    lanes: n.max(l.caps.lanes),
                    states: states.max(l.caps.states),
                    ..l.caps
                },
                None => Caps {
                    lanes: n,
                    tok: self.initial.0,
                    arc: self.initial.1,
                    link: self.initial.2,
                    states,
                },
            };
            if let Some(l) = self.lanes.take() {
                l.free(dev);
            }
            self.lanes = Some(LaneBufs::new(dev, caps)?);
            self.lane_epoch = vec![0; caps.lanes];
            self.lane_ctx_sent.clear();
        }
        let lanes = self.lanes.as_ref().expect("lanes").caps.lanes;
        // Boosters: one arc list per distinct list, a lane points at its stream's.
        let key: Vec<(usize, usize, u32)> = (0..lanes)
            .map(|i| match streams.get(i).map(Stream::booster) {
                Some(Booster::ArcSet(b)) if !b.arcs().is_empty() => (
                    b.arcs().as_ptr() as usize,
                    b.arcs().len(),
                    b.discount().to_bits(),
                ),
                Some(Booster::Words(b)) if !b.words().is_empty() => {
                    (b.words().as_ptr() as usize, b.words().len(), 1)
                }
                _ => (0, 0, 0),
            })
            .collect();
        if self.boost.as_ref().is_none_or(|b| b.key != key) {
            if let Some(b) = self.boost.take() {
                b.free(dev);
            }
            // Every arc set of the batch in the device pool: lanes point into it, nothing
            // is copied; otherwise the batch's lists are concatenated.
            let in_pool = |b: &crate::ArcSetBooster| {
                matches!((b.slot(), &self.pool), (Some(s), Some(p))
                    if s.pool == p.id && s.generation == p.generation
                        && s.offset as usize + b.arcs().len() <= p.len)
            };
            let pooled = self.pool.is_some()
                && streams.iter().all(|s| match s.booster() {
                    Booster::ArcSet(b) => b.arcs().is_empty() || in_pool(b),
                    _ => true,
                });
            let mut arcs: Vec<u32> = Vec::new();
            let mut seen: std::collections::HashMap<usize, u32> = Default::default();
            let (mut off, mut len, mut disc) =
                (vec![0u32; lanes], vec![0u32; lanes], vec![0f32; lanes]);
            for (i, k) in key.iter().enumerate() {
                if let Some(Booster::ArcSet(b)) = streams.get(i).map(Stream::booster) {
                    if k.1 == 0 {
                        continue;
                    }
                    let o = match b.slot() {
                        Some(slot) if pooled => slot.offset,
                        _ => *seen.entry(k.0).or_insert_with(|| {
                            let o = arcs.len() as u32;
                            arcs.extend_from_slice(b.arcs());
                            o
                        }),
                    };
                    off[i] = o;
                    len[i] = k.1 as u32;
                    disc[i] = b.discount();
                }
            }
            // Word tables, likewise.
            let mut words: Vec<u32> = Vec::new();
            let mut costs: Vec<f32> = Vec::new();
            let mut wseen: std::collections::HashMap<usize, u32> = Default::default();
            let (mut woff, mut wlen) = (vec![0u32; lanes], vec![0u32; lanes]);
            for (i, k) in key.iter().enumerate() {
                if let Some(Booster::Words(b)) = streams.get(i).map(Stream::booster) {
                    if k.1 == 0 {
                        continue;
                    }
                    woff[i] = *wseen.entry(k.0).or_insert_with(|| {
                        let o = words.len() as u32;
                        words.extend_from_slice(b.words());
                        costs.extend_from_slice(b.costs());
                        o
                    });
                    wlen[i] = k.1 as u32;
                }
            }
            if arcs.is_empty() {
                arcs.push(0);
            }
            if words.is_empty() {
                words.push(0);
                costs.push(0.0);
            }
            let arcs = match (&self.pool, pooled) {
                (Some(p), true) => p.arcs,
                _ => upload_new(dev, &arcs, "the boosted arc lists")?,
            };
            self.boost = Some(BoostBufs {
                key,
                pooled,
                arcs,
                off: upload_new(dev, &off, "the boosted arc lists")?,
                len: upload_new(dev, &len, "the boosted arc lists")?,
                discount: upload_new(dev, &disc, "the boosted arc lists")?,
                words: upload_new(dev, &words, "the word boosting tables")?,
                word_cost: upload_new(dev, &costs, "the word boosting tables")?,
                word_off: upload_new(dev, &woff, "the word boosting tables")?,
                word_len: upload_new(dev, &wlen, "the word boosting tables")?,
            });
        }
        if let Some(r) = self.rows.take() {
            dev.free(r);
        }
        match rows {
            Rows::Host(chunks) => {
                // Scores: [row][lane][column], the widest chunk's width.
                let cols = chunks.iter().map(|c| c.cols()).max().unwrap_or(0).max(1);
                let rows = chunks.iter().map(|c| c.rows()).max().unwrap_or(0).max(1);
                let mut buf = vec![0f32; rows * lanes * cols];
                for (l, c) in chunks.iter().enumerate() {
                    for t in 0..c.rows() {
                        let o = (t * lanes + l) * cols;
                        buf[o..o + c.cols()].copy_from_slice(c.row(t));
                    }
                }
                let p = upload_new(dev, &buf, "the chunk's scores")?;
                self.rows = Some(p);
                (self.row_base, self.row_lanes, self.row_cols) = (p.addr, lanes, cols);
            }
            Rows::Device(s, start) => {
                let base = s.ptr.addr + (4 * start * s.streams * s.cols) as u64;
                (self.row_base, self.row_lanes, self.row_cols) = (base, s.streams, s.cols);
            }
        }
        Ok(())
    }
}

impl Drop for GpuDecoder<'_> {
    fn drop(&mut self) {
        let dev = self.dev.as_mut();
        self.graph.free(dev);
        if let Some(l) = self.lanes.take() {
            l.free(dev);
        }
        if let Some(b) = self.boost.take() {
            b.free(dev);
        }
        if let Some(p) = self.pool.take() {
            dev.free(p.arcs);
        }
        if let Some(p) = self.contexts.take() {
            p.free(dev);
        }
        if let Some(r) = self.rows.take() {
            dev.free(r);
        }
    }
}

/// Threads per block of the block-cooperative kernels on the shim: `CTX_SHIM_BLOCK` (1 to
/// 1024) or 8 — each thread is a fiber there, and a few already interleave at every barrier.
fn shim_block() -> u32 {
    static BLOCK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *BLOCK.get_or_init(|| match std::env::var("CTX_SHIM_BLOCK") {
        Err(_) => 8,
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=1024).contains(&n) => n,
            _ => {
                eprintln!("CTX_SHIM_BLOCK={v:?} is not a block size from 1 to 1024: 8 used");
                8
            }
        },
    })
}

/// A device error of a batch of `n` streams; out of memory says how to make the batch fit.
fn batch_error(e: &ctx_cuda::CudaError, n: usize) -> DecodeError {
    match e {
        ctx_cuda::CudaError::OutOfMemory { .. } => DecodeError::Gpu(format!(
            "{e}; each of the batch's {n} streams takes its own scratch (16 bytes per graph \
             state, plus token, arc and link buffers): decode fewer streams at once (--gpu-batch)"
        )),
        _ => DecodeError::Gpu(e.to_string()),
    }
}

/// Whether the device can run this stream's booster.
fn supported(s: &Stream) -> Result<()> {
    match s.booster() {
        Booster::None | Booster::ArcSet(_) | Booster::Words(_) => Ok(()),
        Booster::Lm(_) | Booster::Phrases(_) => Err(DecodeError::Gpu(format!(
            "utterance {}: the CUDA backend has no word-automaton booster (LM difference, phrase automaton); decode it with --backend cpu",
            s.id
        ))),
        Booster::Stack(_) => Err(DecodeError::Gpu(format!(
            "utterance {}: the CUDA backend takes one arc set per stream, not a stack of boosters",
            s.id
        ))),
    }
}

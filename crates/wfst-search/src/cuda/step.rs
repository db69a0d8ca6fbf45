//! One frame step for a batch of lanes: the five launches of `kernels/decoder.cu` (its header
//! lists them) over grids that no count decides, then one copy back of the packed result —
//! the counts stay on the device. A lane that outgrew its buffers says so in the result's
//! header; the step is then replayed with grown buffers.

// Lanes index several parallel per-lane arrays (counts, flags, streams) at once.
#![allow(clippy::needless_range_loop)]

use super::contexts::ContextPool;
use super::frame::{
    Caps, FrameParams, LaneBufs, Launched, HDR, HDR0, LANE_CTX, LANE_IN, STEP_KERNELS,
    ST_EPS_CYCLE, ST_NO_SURVIVORS, ST_OVERFLOW,
};
use super::GpuDecoder;
use crate::config::HISTOGRAM_BINS;
use crate::error::{DecodeError, Result};
use crate::search::Stream;
use crate::tokens::{Bp, LTok, Link};
use ctx_cuda::device::{as_bytes, as_bytes_mut};
use rayon::prelude::*;

/// A frame as the device computed it, ready for [`Stream::commit_frame`].
pub(crate) struct FrameOut {
    pub toks: Vec<LTok>,
    pub bps: Vec<Bp>,
    pub links: Vec<Link>,
    pub num_emitting: usize,
    pub cutoff: f32,
}

/// Why a frame attempt stopped: a lane needs bigger buffers (replay after growing), or the
/// device failed.
enum Stop {
    Grow(Caps),
    Device(ctx_cuda::CudaError),
}

impl From<ctx_cuda::CudaError> for Stop {
    fn from(e: ctx_cuda::CudaError) -> Self {
        Stop::Device(e)
    }
}

impl GpuDecoder<'_> {
    /// Step `t` (launched already when `launched` holds it: lanes in `cont` then took their
    /// frontier and expand cut from the device), its result collected; after an overflow the
    /// buffers grow and the step is launched again from the streams' frames, until it fits.
    pub(super) fn run_step(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        cont: &[bool],
        t: usize,
        launched: Option<Launched>,
    ) -> ctx_cuda::Result<Vec<Option<Result<FrameOut>>>> {
        let (mut launched, mut cont) = (launched, cont);
        loop {
            let r = match launched.take() {
                Some(l) => self.collect(streams, l),
                None => self
                    .launch(streams, active, cont, t)
                    .and_then(|l| self.collect(streams, l)),
            };
            match r {
                Ok(v) => return Ok(v),
                Err(Stop::Device(e)) => return Err(e),
                Err(Stop::Grow(caps)) => {
                    // Bigger scratch; every lane's frontier is uploaded again and the frame
                    // replayed from the start (deterministic: the same frame comes out).
                    self.stats.replays += 1;
                    let dev = self.dev.as_mut();
                    if let Some(l) = self.lanes.take() {
                        l.free(dev);
                    }
                    self.lanes = Some(LaneBufs::new(dev, caps)?);
                    self.lane_epoch.iter_mut().for_each(|e| *e = 0);
                    self.lane_ctx_sent.clear();
                    // The device's frontiers went with the old buffers.
                    cont = &[];
                }
            }
        }
    }

    /// Launches step `t` for the active lanes without waiting for it: its inputs uploaded
    /// (lanes in `cont` continue from the frame the device holds, the others from their
    /// stream's last frame), then the five kernels. A launch error or a lane too big for the
    /// buffers before any launch stops it.
    pub(super) fn launch_step(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        cont: &[bool],
        t: usize,
    ) -> ctx_cuda::Result<Option<Launched>> {
        match self.launch(streams, active, cont, t) {
            Ok(l) => Ok(Some(l)),
            // Collected (grown and replayed) by run_step.
            Err(Stop::Grow(_)) => Ok(None),
            Err(Stop::Device(e)) => Err(e),
        }
    }

    fn launch(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        cont: &[bool],
        t: usize,
    ) -> std::result::Result<Launched, Stop> {
        let (errors, act) = self.upload_inputs(streams, active, cont)?;
        let p = self.step_params(t);
        let nl = self.lanes.as_ref().expect("lanes prepared").caps.lanes;
        let (block, cta) = (self.block, self.cta_block);
        // Item kernels' widths from the last step's sizes (any width is correct: the threads
        // stride to the device-held count).
        let wide = |n: usize| (n as u32).div_ceil(block).clamp(1, 256);
        let grids = [
            ((1, nl as u32), cta),
            ((wide(self.last.arcs), nl as u32), block),
            ((1, nl as u32), cta),
            ((1, 1), cta),
            ((wide(self.last.items), nl as u32), block),
        ];
        let dev = self.dev.as_mut();
        for (&k, (grid, b)) in self.kernels.iter().zip(grids) {
            dev.launch_kernel(k, grid, b, p.bytes())?;
        }
        self.stats.launches += STEP_KERNELS.len() as u64;
        Ok(Launched { errors, act })
    }

    /// Waits for a launched step and unpacks it: per lane its frame or its error, `None` for
    /// lanes that sat it out. An overflowed lane stops it (the caller grows and replays).
    fn collect(
        &mut self,
        streams: &[Stream],
        launched: Launched,
    ) -> std::result::Result<Vec<Option<Result<FrameOut>>>, Stop> {
        let Launched { mut errors, act } = launched;
        let lanes = self.lanes.as_ref().expect("lanes prepared");
        let caps = lanes.caps;
        let nl = caps.lanes;
        let dev = self.dev.as_mut();

        // One copy back: the header and as much of the body as the last step had (a second
        // copy only when this one's is larger).
        let head = HDR0 + HDR * nl;
        let cap = LaneBufs::out_words(caps);
        let guess = (head + self.last.body + self.last.body / 4 + 1024).min(cap);
        let mut out = vec![0u32; guess];
        dev.download(lanes.out, 0, as_bytes_mut(&mut out))?;
        self.stats.readbacks += 1;
        let (tt, tk) = (out[0] as usize, out[1] as usize);
        let body = 4 * tt + 5 * tk;
        if head + body > out.len() {
            let have = out.len();
            out.resize(head + body, 0);
            dev.download(lanes.out, 4 * have, as_bytes_mut(&mut out[have..]))?;
            self.stats.readbacks += 1;
        }

        // The header: overflows (replay), errors, work.
        let hdr = |i: usize, k: usize| out[HDR0 + HDR * i + k];
        let mut need = (0usize, 0usize, 0usize);
        let (mut arcs, mut rounds, mut items) = (0u64, 0u64, 0usize);
        for i in 0..nl {
            if act[i] == 0 {
                continue;
            }
            let st = hdr(i, 0);
            if st & ST_OVERFLOW != 0 {
                need.0 = need.0.max(hdr(i, 7) as usize);
                need.1 = need.1.max(hdr(i, 8) as usize);
                need.2 = need.2.max(hdr(i, 9) as usize);
            } else if st & ST_NO_SURVIVORS != 0 {
                errors[i] = Some(DecodeError::NoSurvivors {
                    utt: streams[i].id.clone(),
                    frame: (streams[i].rows_total() + 1) as usize,
                });
            } else if st & ST_EPS_CYCLE != 0 {
                errors[i] = Some(DecodeError::EpsilonCycle {
                    utt: streams[i].id.clone(),
                    frame: streams[i].frames.len(),
                });
            }
            arcs += hdr(i, 10) as u64;
            rounds = rounds.max(hdr(i, 11) as u64);
            items = items.max(hdr(i, 1).max(hdr(i, 2)) as usize);
        }
        if need != (0, 0, 0) {
            return Err(Stop::Grow(grown(caps, need)));
        }
        self.last.arcs = (0..nl).map(|i| hdr(i, 10) as usize).max().unwrap_or(0);
        self.last.items = items;
        self.last.body = body;

        // Each lane's slice of the packed arrays, lanes unpacked side by side.
        let base = head;
        let words = |k: usize, n: usize| &out[base + k..base + k + n];
        let (st, co, bs, ba) = (
            words(0, tt),
            words(tt, tt),
            words(2 * tt, tt),
            words(3 * tt, tt),
        );
        let l0 = 4 * tt;
        let (ls, ld, la, lg, lc) = (
            words(l0, tk),
            words(l0 + tk, tk),
            words(l0 + 2 * tk, tk),
            words(l0 + 3 * tk, tk),
            words(l0 + 4 * tk, tk),
        );
        let frames: Vec<Option<Result<FrameOut>>> = errors
            .into_par_iter()
            .enumerate()
            .take(streams.len())
            .map(|(i, e)| {
                if let Some(e) = e {
                    return Some(Err(e));
                }
                if act[i] == 0 {
                    return None;
                }
                let (n, o) = (hdr(i, 1) as usize, hdr(i, 5) as usize);
                let toks = (o..o + n)
                    .map(|j| LTok {
                        state: st[j],
                        lm: 0,
                        cost: f32::from_bits(co[j]),
                        extra: 0.0,
                    })
                    .collect();
                let bps = (o..o + n)
                    .map(|j| Bp {
                        src: bs[j],
                        arc: ba[j],
                    })
                    .collect();
                let (n, o) = (hdr(i, 2) as usize, hdr(i, 6) as usize);
                let links = (o..o + n)
                    .map(|j| Link {
                        src: ls[j],
                        dst: ld[j],
                        arc: la[j],
                        graph: f32::from_bits(lg[j]),
                        ac: f32::from_bits(lc[j]),
                    })
                    .collect();
                Some(Ok(FrameOut {
                    toks,
                    bps,
                    links,
                    num_emitting: hdr(i, 3) as usize,
                    cutoff: f32::from_bits(hdr(i, 4)),
                }))
            })
            .collect();
        let s = &mut self.stats;
        s.frames += act.iter().filter(|&&a| a == 1).count() as u64;
        s.steps += 1;
        s.arcs += arcs;
        s.rounds += rounds;
        // This frame's tokens are the next frame's frontier: swap the buffers. Lanes that sat
        // this frame out, or stopped, lose theirs (uploaded again when they come back).
        let lanes = self.lanes.as_mut().expect("lanes");
        std::mem::swap(&mut lanes.p_state, &mut lanes.c_state);
        std::mem::swap(&mut lanes.p_cost, &mut lanes.c_cost);
        for i in 0..nl {
            if act[i] == 0 || hdr(i, 0) != 0 {
                self.lane_epoch[i] = 0;
            }
        }
        Ok(frames)
    }

    /// The step's per-lane inputs in one upload (active flag, frontier size, enumeration items,
    /// expand cut), each lane's context words when they changed, and the frontiers a lane does
    /// not hold yet. Returns the lanes' errors found here and their active flags.
    #[allow(clippy::type_complexity)]
    fn upload_inputs(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        cont: &[bool],
    ) -> std::result::Result<(Vec<Option<DecodeError>>, Vec<u32>), Stop> {
        let lanes = self.lanes.as_ref().expect("lanes prepared");
        let caps = lanes.caps;
        let nl = caps.lanes;
        let mut lane_in = vec![0u32; LANE_IN * nl];
        let mut act = vec![0u32; nl];
        let mut errors: Vec<Option<DecodeError>> = (0..nl).map(|_| None).collect();
        // Each lane's context (its segment's; all 0 without one).
        let mut ctx_words = vec![0u32; LANE_CTX * nl];
        let dev = self.dev.as_mut();
        for (i, s) in streams.iter().enumerate() {
            if !active[i] {
                continue;
            }
            match ContextPool::lane_words(self.contexts.as_ref(), s.active.as_ref()) {
                Some(w) => ctx_words[LANE_CTX * i..LANE_CTX * (i + 1)].copy_from_slice(&w),
                None => {
                    errors[i] = Some(DecodeError::Gpu(format!(
                        "utterance {}: its context graph is not in the device's pool (a context \
                         set while the batch ran?)",
                        s.id
                    )));
                    continue;
                }
            }
            if cont.get(i).copied().unwrap_or(false) {
                // The frontier and expand cut of the frame the device computed last.
                act[i] = 1;
                lane_in[LANE_IN * i] = 1;
                lane_in[LANE_IN * i + 3] = 1;
                continue;
            }
            let front = &s.frames.last().expect("a started segment").toks;
            // A lane with a context enumerates its tokens twice (main-graph tokens' arcs,
            // then context tokens'); the enumeration's scan input has arc-buffer room.
            let items = if ctx_words[LANE_CTX * i] != 0 {
                2 * front.len()
            } else {
                front.len()
            };
            fits(caps, Field::Tok, front.len())?;
            fits(caps, Field::Arc, items)?;
            act[i] = 1;
            let e = s.expand;
            let bins = if e.bins == u32::MAX {
                -1.0
            } else {
                e.bins as f32
            };
            let w = &mut lane_in[LANE_IN * i..LANE_IN * (i + 1)];
            w[..3].copy_from_slice(&[1, front.len() as u32, items as u32]);
            for (k, v) in [e.best, e.width, bins, e.cutoff].into_iter().enumerate() {
                w[4 + k] = v.to_bits();
            }
            if s.gpu_epoch == 0 || self.lane_epoch[i] != s.gpu_epoch {
                let st: Vec<u32> = front.iter().map(|t| t.state).collect();
                let co: Vec<f32> = front.iter().map(|t| t.cost).collect();
                dev.upload(lanes.p_state, i * caps.tok * 4, as_bytes(&st))?;
                dev.upload(lanes.p_cost, i * caps.tok * 4, as_bytes(&co))?;
            }
        }
        const { assert!(HISTOGRAM_BINS == 256) };
        dev.upload(lanes.lane_in, 0, as_bytes(&lane_in))?;
        if self.lane_ctx_sent != ctx_words {
            dev.upload(lanes.lane_ctx, 0, as_bytes(&ctx_words))?;
            self.lane_ctx_sent = ctx_words;
        }
        Ok((errors, act))
    }

    /// The kernels' parameters for score row `t` of the chunk: the lanes', graph's, boosters'
    /// and context pool's buffers, the search settings.
    fn step_params(&self, t: usize) -> FrameParams {
        let cfg = self.dec.config();
        let lanes = self.lanes.as_ref().expect("lanes prepared");
        let boost = self.boost.as_ref().expect("boosters prepared");
        let mut p = lanes.params(&self.graph, self.dec.graph().num_states());
        p.rows = self.row_base + (4 * t * self.row_lanes * self.row_cols) as u64;
        p.cols = self.row_cols as u32;
        p.beam = cfg.beam;
        p.scale = cfg.acoustic_scale;
        p.lattice = cfg.lattice as u32;
        p.max_active = cfg.max_active.min(u32::MAX as usize) as u32;
        p.boost_arcs = boost.arcs.addr;
        p.boost_off = boost.off.addr;
        p.boost_len = boost.len.addr;
        p.boost_discount = boost.discount.addr;
        p.word_ids = boost.words.addr;
        p.word_cost = boost.word_cost.addr;
        p.word_off = boost.word_off.addr;
        p.word_len = boost.word_len.addr;
        if let Some(x) = &self.contexts {
            p.x_e_off = x.e_off.addr;
            p.x_ne_off = x.ne_off.addr;
            p.x_final = x.final_cost.addr;
            p.x_ilabel = x.ilabel.addr;
            p.x_weight = x.weight.addr;
            p.x_next = x.next.addr;
            p.x_src = x.src.addr;
        }
        p
    }
}

/// The buffer a lane outgrew.
#[derive(Clone, Copy)]
enum Field {
    Tok,
    Arc,
}

/// Ok when `need` items fit the `field` capacity; else stops the attempt with that capacity
/// grown (the frame is then replayed).
fn fits(caps: Caps, field: Field, need: usize) -> std::result::Result<(), Stop> {
    match field {
        Field::Tok if need > caps.tok => Err(Stop::Grow(grown(caps, (need, 0, 0)))),
        Field::Arc if need > caps.arc => Err(Stop::Grow(grown(caps, (0, need, 0)))),
        _ => Ok(()),
    }
}

/// Capacities that hold `need` (tokens, arcs, links; 0: as they are), each grown one at least
/// doubled. Per-token scan inputs and outputs (frontier flags, positions) live in the
/// arc-sized buffers: the arc capacity never falls below the token capacity.
fn grown(caps: Caps, need: (usize, usize, usize)) -> Caps {
    let g = |have: usize, need: usize| {
        if need > have {
            (2 * have).max(need + need / 2)
        } else {
            have
        }
    };
    let tok = g(caps.tok, need.0);
    Caps {
        tok,
        arc: g(caps.arc, need.1).max(tok),
        link: g(caps.link, need.2),
        ..caps
    }
}

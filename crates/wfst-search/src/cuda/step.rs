//! One frame for a batch of lanes: the launch sequence of `kernels/decoder.cu` (its header
//! lists it), the counts read back between phases, buffer growth and replay when a lane needs
//! more room than the scratch has, and the frame's results copied back for the host.

// Lanes index several parallel per-lane arrays (counts, flags, streams) at once.
#![allow(clippy::needless_range_loop)]

use super::contexts::ContextPool;
use super::frame::{Caps, FrameParams, LaneBufs, LANE_CTX};
use super::GpuDecoder;
use crate::config::HISTOGRAM_BINS;
use crate::error::{DecodeError, Result};
use crate::search::{Bp, LTok, Link, Stream, NONE};
use ctx_cuda::device::{as_bytes, as_bytes_mut};
use ctx_cuda::{DevPtr, Device, Pod};
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
    /// Computes frame `t` of the chunk for every active lane (lane i = stream i): per lane, the
    /// frame or that stream's error; `None` for inactive lanes.
    pub(super) fn run_frame(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        t: usize,
    ) -> ctx_cuda::Result<Vec<Option<Result<FrameOut>>>> {
        loop {
            match self.try_frame(streams, active, t) {
                Ok(v) => return Ok(v),
                Err(Stop::Device(e)) => return Err(e),
                Err(Stop::Grow(caps)) => {
                    // Bigger scratch; every lane's frontier is uploaded again and the frame
                    // replayed from the start (deterministic: the same frame comes out).
                    let dev = self.dev.as_mut();
                    if let Some(l) = self.lanes.take() {
                        l.free(dev);
                    }
                    self.lanes = Some(LaneBufs::new(dev, caps)?);
                    self.lane_epoch.iter_mut().for_each(|e| *e = 0);
                    self.lane_ctx_sent.clear();
                }
            }
        }
    }

    fn try_frame(
        &mut self,
        streams: &[Stream],
        active: &[bool],
        t: usize,
    ) -> std::result::Result<Vec<Option<Result<FrameOut>>>, Stop> {
        let cfg = self.dec.config().clone();
        let num_states = self.dec.graph().num_states();
        let block = self.block;
        let lanes = self.lanes.as_ref().expect("lanes prepared");
        let caps = lanes.caps;
        let nl = caps.lanes;
        let boost = self.boost.as_ref().expect("boosters prepared");
        let mut p = lanes.params(&self.graph, num_states);
        p.rows = self.rows.expect("scores prepared").addr + (t * nl * self.row_cols * 4) as u64;
        p.cols = self.row_cols as u32;
        p.beam = cfg.beam;
        p.scale = cfg.acoustic_scale;
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
        let l = LaneView {
            active: lanes.active,
            n_prev: lanes.n_prev,
            n_items: lanes.n_items,
            lane_ctx: lanes.lane_ctx,
            cut: lanes.cut,
            n_exp: lanes.n_exp,
            n_touched: lanes.n_touched,
            n_tok: lanes.n_tok,
            n_front: lanes.n_front,
            n_fexp: lanes.n_fexp,
            n_link_e: lanes.n_link_e,
            n_link: lanes.n_link,
            tot: lanes.tot,
            p_state: lanes.p_state,
            p_cost: lanes.p_cost,
            cutoff: lanes.cutoff,
            slot: lanes.slot,
            first: lanes.first,
            map: lanes.map,
            sx: lanes.sx,
            flags: lanes.flags,
            eoff: lanes.eoff,
            pos: lanes.pos,
            out_tok_off: lanes.out_tok_off,
            out_link_off: lanes.out_link_off,
            o_state: lanes.o_state,
            o_cost: lanes.o_cost,
            o_bpsrc: lanes.o_bpsrc,
            o_bparc: lanes.o_bparc,
            o_lsrc: lanes.o_lsrc,
            o_ldst: lanes.o_ldst,
            o_larc: lanes.o_larc,
            o_lgraph: lanes.o_lgraph,
            o_lac: lanes.o_lac,
        };
        let dev = self.dev.as_mut();

        // Per-lane inputs: active flags, frontier sizes, expand cuts; frontiers a lane does
        // not hold yet.
        let mut act = vec![0u32; nl];
        let mut n_prev = vec![0u32; nl];
        let mut cut = vec![0f32; 4 * nl];
        let mut errors: Vec<Option<DecodeError>> = (0..nl).map(|_| None).collect();
        // Each lane's context (its segment's; all 0 without one).
        let mut ctx_words = vec![0u32; LANE_CTX * nl];
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
            let front = &s.frames.last().expect("a started segment").toks;
            fits(caps, Field::Tok, front.len())?;
            act[i] = 1;
            n_prev[i] = front.len() as u32;
            let e = s.expand;
            cut[4 * i..4 * i + 4].copy_from_slice(&[
                e.best,
                e.width,
                if e.bins == u32::MAX {
                    -1.0
                } else {
                    e.bins as f32
                },
                e.cutoff,
            ]);
            if s.gpu_epoch == 0 || self.lane_epoch[i] != s.gpu_epoch {
                let st: Vec<u32> = front.iter().map(|t| t.state).collect();
                let co: Vec<f32> = front.iter().map(|t| t.cost).collect();
                dev.upload(l.p_state, i * caps.tok * 4, as_bytes(&st))?;
                dev.upload(l.p_cost, i * caps.tok * 4, as_bytes(&co))?;
            }
        }
        debug_assert!(cut.iter().all(|c| !c.is_nan()) && HISTOGRAM_BINS == 256);
        dev.upload(l.active, 0, as_bytes(&act))?;
        dev.upload(l.n_prev, 0, as_bytes(&n_prev))?;
        dev.upload(l.cut, 0, as_bytes(&cut))?;
        if self.lane_ctx_sent != ctx_words {
            dev.upload(l.lane_ctx, 0, as_bytes(&ctx_words))?;
            self.lane_ctx_sent = ctx_words.clone();
        }
        let max_prev = n_prev.iter().copied().max().unwrap_or(0) as usize;
        // The expansion's enumeration items: a lane with a context takes its tokens twice
        // (main-graph tokens' arcs, then context tokens'); without any, the items are the
        // tokens (`n_items` is `n_prev` itself).
        let mut n_items = n_prev.clone();
        for i in 0..nl {
            if ctx_words[LANE_CTX * i] != 0 {
                n_items[i] *= 2;
            }
        }
        let max_items = max(&n_items);
        fits(caps, Field::Arc, max_items)?;
        if n_items != n_prev {
            dev.upload(l.n_items, 0, as_bytes(&n_items))?;
            p.n_items = l.n_items.addr;
        }

        let mut k = Launcher {
            dev,
            p,
            block,
            lanes: nl,
            launches: 0,
            readbacks: 0,
        };
        let mut arcs = 0u64;
        let (eoff_stride, arc_stride) = (2 * caps.tok + 1, caps.arc + 1);

        // Emitting expansion.
        k.per_lane("init_frame")?;
        k.items("best_expandable", max_prev)?;
        k.per_lane("bound")?;
        k.items("degrees_emit", max_items)?;
        let items = if n_items != n_prev {
            l.n_items
        } else {
            l.n_prev
        };
        k.scan(
            l.sx,
            caps.arc,
            l.eoff,
            eoff_stride,
            items,
            l.n_exp,
            max_items,
        )?;
        let n_exp = k.counts(l.n_exp, &act)?;
        let max_exp = max(&n_exp);
        fits(caps, Field::Arc, max_exp)?;
        arcs += n_exp.iter().map(|&x| x as u64).sum::<u64>();
        k.items("expand", max_exp)?;
        k.items("emit_min", max_exp)?;
        k.per_lane("cutoff")?;
        k.items("mark_emit", max_exp)?;
        k.scan(
            l.flags, caps.arc, l.pos, arc_stride, l.n_exp, l.n_tok, max_exp,
        )?;
        let mut n_tok = k.counts(l.n_tok, &act)?;
        let n_touched = k.counts(l.n_touched, &act)?;
        let mut deactivated = false;
        for i in 0..nl {
            if act[i] == 1 && n_touched[i] == 0 {
                errors[i] = Some(DecodeError::NoSurvivors {
                    utt: streams[i].id.clone(),
                    frame: (streams[i].rows_total() + 1) as usize,
                });
                act[i] = 0;
                n_tok[i] = 0;
                deactivated = true;
            }
        }
        if deactivated {
            k.dev.upload(l.active, 0, as_bytes(&act))?;
        }
        let max_tok = max(&n_tok);
        fits(caps, Field::Tok, max_tok)?;
        k.items("write_emit", max_exp)?;
        k.items("emit_bp_links", max_exp)?;
        if cfg.lattice {
            k.scan(
                l.flags, caps.arc, l.pos, arc_stride, l.n_exp, l.tot, max_exp,
            )?;
            k.per_lane("set_link_e")?;
            let n_link_e = k.counts(l.n_link_e, &act)?;
            fits(caps, Field::Link, max(&n_link_e))?;
            k.items("write_emit_links", max_exp)?;
        }

        // ε-closure in rounds.
        k.items("tok_init", max_tok)?;
        k.scan(l.sx, caps.arc, l.pos, arc_stride, l.n_tok, l.tot, max_tok)?;
        k.items("write_frontier", max_tok)?;
        k.per_lane("set_front_count")?;
        let mut n_front = k.counts(l.n_front, &act)?;
        let mut pops = vec![0usize; nl];
        let mut rounds = 0u64;
        while n_front.iter().any(|&f| f > 0) {
            for i in 0..nl {
                pops[i] += n_front[i] as usize;
                if act[i] == 1 && pops[i] > 64 * n_tok[i] as usize + 100_000 {
                    errors[i] = Some(DecodeError::EpsilonCycle {
                        utt: streams[i].id.clone(),
                        frame: streams[i].frames.len(),
                    });
                    act[i] = 0;
                    n_front[i] = 0;
                    k.dev.upload(l.active, 0, as_bytes(&act))?;
                    // Its slots are left mid-closure: clear the lane's per-state arrays.
                    let s = caps.states;
                    k.dev.fill(l.slot, 8 * s * i, 8 * s, 0xff)?;
                    k.dev.fill(l.first, 4 * s * i, 4 * s, 0xff)?;
                    k.dev.fill(l.map, 4 * s * i, 4 * s, 0xff)?;
                }
            }
            let max_front = max(&n_front);
            if max_front == 0 {
                break;
            }
            k.items("degrees_front", max_front)?;
            k.scan(
                l.sx,
                caps.arc,
                l.eoff,
                eoff_stride,
                l.n_front,
                l.n_fexp,
                max_front,
            )?;
            let n_fexp = k.counts(l.n_fexp, &act)?;
            let max_fexp = max(&n_fexp);
            fits(caps, Field::Arc, max_fexp)?;
            arcs += n_fexp.iter().map(|&x| x as u64).sum::<u64>();
            rounds += 1;
            k.items("relax_eps", max_fexp)?;
            k.items("mark_new", max_fexp)?;
            k.scan(
                l.flags, caps.arc, l.pos, arc_stride, l.n_fexp, l.tot, max_fexp,
            )?;
            let news = k.counts(l.tot, &act)?;
            for i in 0..nl {
                n_tok[i] += news[i];
            }
            let max_tok = max(&n_tok);
            fits(caps, Field::Tok, max_tok)?;
            k.items("write_new", max_fexp)?;
            k.per_lane("add_new")?;
            k.items("tok_update", max_tok)?;
            k.scan(l.sx, caps.arc, l.pos, arc_stride, l.n_tok, l.tot, max_tok)?;
            k.items("write_frontier", max_tok)?;
            k.per_lane("set_front_count")?;
            n_front = k.counts(l.n_front, &act)?;
        }
        let max_tok = max(&n_tok);

        // ε links.
        let mut n_link = vec![0u32; nl];
        if cfg.lattice {
            k.items("degrees_all_eps", max_tok)?;
            k.scan(
                l.sx,
                caps.arc,
                l.eoff,
                eoff_stride,
                l.n_tok,
                l.n_fexp,
                max_tok,
            )?;
            let n_fexp = k.counts(l.n_fexp, &act)?;
            let max_fexp = max(&n_fexp);
            fits(caps, Field::Arc, max_fexp)?;
            k.items("eps_link_flags", max_fexp)?;
            k.scan(
                l.flags, caps.arc, l.pos, arc_stride, l.n_fexp, l.tot, max_fexp,
            )?;
            k.per_lane("add_eps_links")?;
            n_link = k.counts(l.n_link, &act)?;
            fits(caps, Field::Link, max(&n_link))?;
            k.items("write_eps_links", max_fexp)?;
        }

        // The frame back to the host.
        let n_link_e: Vec<u32> = if cfg.lattice {
            k.read(l.n_link_e, nl)?
        } else {
            vec![0; nl]
        };
        let cutoffs: Vec<f32> = k.read(l.cutoff, nl)?;
        // Every lane's tokens and links packed on the device, then one copy per array.
        let (mut tok_off, mut link_off) = (vec![0u32; nl], vec![0u32; nl]);
        let (mut nt, mut nk) = (0u32, 0u32);
        for i in 0..nl {
            if act[i] == 0 {
                n_tok[i] = 0;
                n_link[i] = 0;
            }
            tok_off[i] = nt;
            link_off[i] = nk;
            nt += n_tok[i];
            nk += n_link[i];
        }
        k.dev.upload(l.out_tok_off, 0, as_bytes(&tok_off))?;
        k.dev.upload(l.out_link_off, 0, as_bytes(&link_off))?;
        k.items("gather_out", max(&n_tok).max(max(&n_link)))?;
        let (nt, nk) = (nt as usize, nk as usize);
        let st: Vec<u32> = k.read(l.o_state, nt)?;
        let co: Vec<f32> = k.read(l.o_cost, nt)?;
        let bs: Vec<u32> = k.read(l.o_bpsrc, nt)?;
        let ba: Vec<u32> = k.read(l.o_bparc, nt)?;
        let ls: Vec<u32> = k.read(l.o_lsrc, nk)?;
        let ld: Vec<u32> = k.read(l.o_ldst, nk)?;
        let la: Vec<u32> = k.read(l.o_larc, nk)?;
        let lg: Vec<f32> = k.read(l.o_lgraph, nk)?;
        let lc: Vec<f32> = k.read(l.o_lac, nk)?;
        debug_assert!(ld.iter().all(|&d| d != NONE));
        // Each lane's slice of the packed arrays, lanes unpacked side by side.
        let out: Vec<Option<Result<FrameOut>>> = errors
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
                let t = tok_off[i] as usize..(tok_off[i] + n_tok[i]) as usize;
                let toks = st[t.clone()]
                    .iter()
                    .zip(&co[t.clone()])
                    .map(|(&state, &cost)| LTok {
                        state,
                        lm: 0,
                        cost,
                        extra: 0.0,
                    })
                    .collect();
                let bps = bs[t.clone()]
                    .iter()
                    .zip(&ba[t])
                    .map(|(&src, &arc)| Bp { src, arc })
                    .collect();
                let o = link_off[i] as usize;
                let links = (o..o + n_link[i] as usize)
                    .map(|j| Link {
                        src: ls[j],
                        dst: ld[j],
                        arc: la[j],
                        graph: lg[j],
                        ac: lc[j],
                    })
                    .collect();
                Some(Ok(FrameOut {
                    toks,
                    bps,
                    links,
                    num_emitting: n_link_e[i] as usize,
                    cutoff: cutoffs[i],
                }))
            })
            .collect();
        k.items("reset_frame", max_tok)?;
        let st = &mut self.stats;
        st.frames += act.iter().filter(|&&a| a == 1).count() as u64;
        st.steps += 1;
        st.arcs += arcs;
        st.rounds += rounds;
        st.launches += k.launches;
        st.readbacks += k.readbacks;
        // This frame's tokens are the next frame's frontier: swap the buffers. Lanes that sat
        // this frame out lose theirs (uploaded again when they come back).
        let lanes = self.lanes.as_mut().expect("lanes");
        std::mem::swap(&mut lanes.p_state, &mut lanes.c_state);
        std::mem::swap(&mut lanes.p_cost, &mut lanes.c_cost);
        for i in 0..nl {
            if act[i] == 0 {
                self.lane_epoch[i] = 0;
            }
        }
        Ok(out)
    }
}

/// The buffers `try_frame` names (copied out of [`LaneBufs`] so the device can be borrowed).
struct LaneView {
    active: DevPtr,
    n_prev: DevPtr,
    n_items: DevPtr,
    lane_ctx: DevPtr,
    cut: DevPtr,
    n_exp: DevPtr,
    n_touched: DevPtr,
    n_tok: DevPtr,
    n_front: DevPtr,
    n_fexp: DevPtr,
    n_link_e: DevPtr,
    n_link: DevPtr,
    tot: DevPtr,
    p_state: DevPtr,
    p_cost: DevPtr,
    cutoff: DevPtr,
    slot: DevPtr,
    first: DevPtr,
    map: DevPtr,
    sx: DevPtr,
    flags: DevPtr,
    eoff: DevPtr,
    pos: DevPtr,
    out_tok_off: DevPtr,
    out_link_off: DevPtr,
    o_state: DevPtr,
    o_cost: DevPtr,
    o_bpsrc: DevPtr,
    o_bparc: DevPtr,
    o_lsrc: DevPtr,
    o_ldst: DevPtr,
    o_larc: DevPtr,
    o_lgraph: DevPtr,
    o_lac: DevPtr,
}

/// Launches kernels with the frame's parameters.
struct Launcher<'a> {
    dev: &'a mut dyn Device,
    p: FrameParams,
    block: u32,
    lanes: usize,
    launches: u64,
    readbacks: u64,
}

impl Launcher<'_> {
    /// The per-lane counts at `p`, 0 for lanes not active this frame (their device values are
    /// left from an earlier frame).
    fn counts(&mut self, p: DevPtr, act: &[u32]) -> ctx_cuda::Result<Vec<u32>> {
        let mut v: Vec<u32> = self.read(p, act.len())?;
        for (x, &a) in v.iter_mut().zip(act) {
            if a == 0 {
                *x = 0;
            }
        }
        Ok(v)
    }

    /// Copies `n` values back (a synchronisation point on a GPU).
    fn read<T: Pod + Default + Clone>(&mut self, p: DevPtr, n: usize) -> ctx_cuda::Result<Vec<T>> {
        self.readbacks += 1;
        let mut v = vec![T::default(); n];
        self.dev.download(p, 0, as_bytes_mut(&mut v))?;
        Ok(v)
    }

    /// A kernel with one thread per lane.
    fn per_lane(&mut self, name: &str) -> ctx_cuda::Result<()> {
        let gx = (self.lanes as u32).div_ceil(self.block).max(1);
        self.launches += 1;
        self.dev.launch(name, (gx, 1), self.block, self.p.bytes())
    }

    /// A kernel whose threads stride over up to `n` items per lane.
    fn items(&mut self, name: &str, n: usize) -> ctx_cuda::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let gx = (n as u32).div_ceil(self.block).clamp(1, 1024);
        self.launches += 1;
        self.dev
            .launch(name, (gx, self.lanes as u32), self.block, self.p.bytes())
    }

    /// Exclusive scan per lane of `input` (lane stride `in_stride`) into `output` (stride
    /// `out_stride`), over `n[lane]` items; the total into `tot[lane]`.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &mut self,
        input: DevPtr,
        in_stride: usize,
        output: DevPtr,
        out_stride: usize,
        n: DevPtr,
        tot: DevPtr,
        max_n: usize,
    ) -> ctx_cuda::Result<()> {
        self.p.scan_in = input.addr;
        self.p.scan_in_stride = in_stride as u32;
        self.p.scan_out = output.addr;
        self.p.scan_out_stride = out_stride as u32;
        self.p.scan_n = n.addr;
        self.p.scan_tot = tot.addr;
        let tiles = max_n.div_ceil(super::frame::SCAN_TILE);
        self.items("scan_tiles", tiles)?;
        self.per_lane("scan_tile_sums")?;
        self.items("scan_apply", tiles)
    }
}

/// The buffer a lane outgrew.
#[derive(Clone, Copy)]
enum Field {
    Tok,
    Arc,
    Link,
}

/// Ok when `need` items fit the `field` capacity; else stops the attempt with that capacity
/// grown (the frame is then replayed).
fn fits(caps: Caps, field: Field, need: usize) -> std::result::Result<(), Stop> {
    let have = match field {
        Field::Tok => caps.tok,
        Field::Arc => caps.arc,
        Field::Link => caps.link,
    };
    if need <= have {
        return Ok(());
    }
    let n = grow(have, need);
    Err(Stop::Grow(match field {
        // Per-token scan inputs and outputs (frontier flags, positions) live in the arc-sized
        // buffers: the arc capacity never falls below the token capacity.
        Field::Tok => Caps {
            tok: n,
            arc: caps.arc.max(n),
            ..caps
        },
        Field::Arc => Caps { arc: n, ..caps },
        Field::Link => Caps { link: n, ..caps },
    }))
}

fn max(v: &[u32]) -> usize {
    v.iter().copied().max().unwrap_or(0) as usize
}

/// A capacity that holds `need`, at least twice the old one.
fn grow(old: usize, need: usize) -> usize {
    (2 * old).max(need + need / 2)
}

//! The device buffers of the CUDA backend and the `Frame` parameter struct every kernel of
//! `kernels/decoder.cu` takes (field for field the same layout: `#[repr(C)]`, pointers as u64).

use crate::context::SlotInfo;
use ctx_cuda::device::as_bytes;
use ctx_cuda::{DevPtr, Device, Pod, Result};
use ctx_graph::csr::DecodingGraph;

ctx_cuda::kernel_params! {
    /// `struct Frame` of kernels/decoder.cu.
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct FrameParams {
        pub e_off: u64,
        pub ne_off: u64,
        pub ilabel: u64,
        pub weight: u64,
        pub next: u64,
        pub src: u64,
        pub olabel: u64,
        pub rows: u64,
        pub boost_arcs: u64,
        pub boost_off: u64,
        pub boost_len: u64,
        pub boost_discount: u64,
        pub word_ids: u64,
        pub word_cost: u64,
        pub word_off: u64,
        pub word_len: u64,
        pub lane_in: u64,
        pub lane_cur: u64,
        pub next_cut: u64,
        pub status: u64,
        pub need: u64,
        pub work: u64,
        pub best_key: u64,
        pub bound: u64,
        pub n_exp: u64,
        pub emit_min: u64,
        pub cutoff: u64,
        pub n_touched: u64,
        pub n_tok: u64,
        pub n_new: u64,
        pub n_link_e: u64,
        pub n_link: u64,
        pub p_state: u64,
        pub p_cost: u64,
        pub c_state: u64,
        pub c_cost: u64,
        pub c_bpsrc: u64,
        pub c_bparc: u64,
        pub fr_tok: u64,
        pub fr_cost: u64,
        pub slot: u64,
        pub first: u64,
        pub map: u64,
        pub e_gc: u64,
        pub e_ac: u64,
        pub e_ok: u64,
        pub flags: u64,
        pub touched: u64,
        pub eoff: u64,
        pub pos: u64,
        pub sx: u64,
        pub l_src: u64,
        pub l_dst: u64,
        pub l_arc: u64,
        pub l_graph: u64,
        pub l_ac: u64,
        pub lane_scan: u64,
        pub out: u64,
        pub x_e_off: u64,
        pub x_ne_off: u64,
        pub x_final: u64,
        pub x_ilabel: u64,
        pub x_weight: u64,
        pub x_next: u64,
        pub x_src: u64,
        pub lane_ctx: u64,
        pub entry_arc: u64,
        pub entry_weight: u64,
        pub entry_ri: u64,
        pub returns: u64,
        pub num_states: u32,
        pub cols: u32,
        pub tok_cap: u32,
        pub arc_cap: u32,
        pub link_cap: u32,
        pub sx_stride: u32,
        pub lanes: u32,
        pub state_stride: u32,
        pub eoff_stride: u32,
        pub a_main: u32,
        pub slot_word: u32,
        pub n_entries: u32,
        pub n_returns: u32,
        pub lattice: u32,
        pub unused: u32,
        pub beam: f32,
        pub scale: f32,
        pub max_active: u32,
    }
}

impl FrameParams {
    /// The struct's bytes, as a launch passes them.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: repr(C), u64 fields then an even number (18) of 4-byte fields: no padding.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}

/// Uploads `v` into a new allocation.
pub(crate) fn upload_new<T: Pod>(dev: &mut dyn Device, v: &[T], what: &str) -> Result<DevPtr> {
    let p = dev.alloc(std::mem::size_of_val(v), 0, what)?;
    dev.upload(p, 0, as_bytes(v))?;
    Ok(p)
}

/// The graph on the device (shared by every lane), with its class slot's entry arcs and
/// return states (one-entry placeholders without a slot).
pub(crate) struct GraphBufs {
    pub e_off: DevPtr,
    pub ne_off: DevPtr,
    pub ilabel: DevPtr,
    pub weight: DevPtr,
    pub next: DevPtr,
    pub src: DevPtr,
    pub olabel: DevPtr,
    pub entry_arc: DevPtr,
    pub entry_weight: DevPtr,
    pub entry_ri: DevPtr,
    pub returns: DevPtr,
    pub n_entries: u32,
    pub n_returns: u32,
    pub slot_word: u32,
    pub a_main: u32,
}

impl GraphBufs {
    /// Uploads the CSR arrays and the source state of every arc. With a class slot, the slot's
    /// arcs go up at +∞ weight (a lane without a context never follows them, as the CPU search
    /// does not) and its entry arcs, with their true weights and return indices, as a sorted
    /// table that a lane with a context looks its slot arcs up in.
    pub fn upload(
        dev: &mut dyn Device,
        g: &DecodingGraph,
        slot: Option<&SlotInfo>,
    ) -> Result<Self> {
        let slot_word = slot.map(|s| s.word);
        let mut src = vec![0u32; g.num_arcs()];
        for s in 0..g.num_states() as u32 {
            for a in g.emitting(s).chain(g.non_emitting(s)) {
                src[a] = s;
            }
        }
        let closed;
        let weight = match slot_word {
            None => &g.weight,
            Some(w) => {
                closed = g
                    .weight
                    .iter()
                    .zip(&g.olabel)
                    .map(|(&c, &o)| if o == w { f32::INFINITY } else { c })
                    .collect::<Vec<f32>>();
                &closed
            }
        };
        let entries = slot.map(|s| s.entries(g)).unwrap_or_default();
        let mut returns = slot.map(|s| s.returns.clone()).unwrap_or_default();
        let (n_entries, n_returns) = (entries.len() as u32, returns.len() as u32);
        let (mut e_arc, mut e_w, mut e_ri): (Vec<u32>, Vec<f32>, Vec<u32>) = (
            entries.iter().map(|e| e.0).collect(),
            entries.iter().map(|e| e.1).collect(),
            entries.iter().map(|e| e.2).collect(),
        );
        for v in [&mut e_arc, &mut e_ri, &mut returns] {
            if v.is_empty() {
                v.push(0);
            }
        }
        if e_w.is_empty() {
            e_w.push(0.0);
        }
        Ok(Self {
            entry_arc: upload_new(dev, &e_arc, "the class slot's entry arcs")?,
            entry_weight: upload_new(dev, &e_w, "the class slot's entry arcs")?,
            entry_ri: upload_new(dev, &e_ri, "the class slot's entry arcs")?,
            returns: upload_new(dev, &returns, "the class slot's return states")?,
            n_entries,
            n_returns,
            slot_word: slot_word.unwrap_or(u32::MAX),
            a_main: g.num_arcs() as u32,
            e_off: upload_new(dev, &g.e_offsets, "the graph's emitting offsets")?,
            ne_off: upload_new(dev, &g.ne_offsets, "the graph's epsilon offsets")?,
            ilabel: upload_new(dev, &g.ilabel, "the graph's input labels")?,
            weight: upload_new(dev, weight, "the graph's arc weights")?,
            next: upload_new(dev, &g.next, "the graph's destinations")?,
            src: upload_new(dev, &src, "the graph's arc sources")?,
            olabel: upload_new(dev, &g.olabel, "the graph's output labels")?,
        })
    }

    pub fn free(&self, dev: &mut dyn Device) {
        for p in [
            self.e_off,
            self.ne_off,
            self.ilabel,
            self.weight,
            self.next,
            self.src,
            self.olabel,
            self.entry_arc,
            self.entry_weight,
            self.entry_ri,
            self.returns,
        ] {
            dev.free(p);
        }
    }
}

/// Capacities of the per-lane scratch ("lanes" in Kaldi's terms): grown when a frame needs more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Caps {
    pub lanes: usize,
    pub tok: usize,
    pub arc: usize,
    pub link: usize,
    /// Per-state entries per lane: the main graph's states, then every return index's copy of
    /// the largest context of the batch's pool.
    pub states: usize,
}

/// u32 words per lane in the lane-context table (`LANE_CTX` in decoder.cu).
pub(crate) const LANE_CTX: usize = 8;

/// Words of the packed output's header before the per-lane entries (`HDR0` in decoder.cu).
pub(crate) const HDR0: usize = 4;
/// Header words per lane (`HDR` in decoder.cu): status, tokens, links, emitting links, cutoff,
/// token offset, link offset, tokens / arcs / links needed, arcs relaxed, closure rounds.
pub(crate) const HDR: usize = 12;
/// Words per lane of the step's inputs (`LANE_IN` in decoder.cu).
pub(crate) const LANE_IN: usize = 8;
/// Lane status bits (`ST_*` in decoder.cu).
pub(crate) const ST_OVERFLOW: u32 = 1;
pub(crate) const ST_NO_SURVIVORS: u32 = 2;
pub(crate) const ST_EPS_CYCLE: u32 = 4;

/// Lane-major scratch and per-lane scalars for a batch of `caps.lanes` lanes.
pub(crate) struct LaneBufs {
    pub caps: Caps,
    pub all: Vec<DevPtr>,
    pub lane_in: DevPtr,
    pub lane_cur: DevPtr,
    pub next_cut: DevPtr,
    pub status: DevPtr,
    pub need: DevPtr,
    pub work: DevPtr,
    pub best_key: DevPtr,
    pub bound: DevPtr,
    pub n_exp: DevPtr,
    pub emit_min: DevPtr,
    pub cutoff: DevPtr,
    pub n_touched: DevPtr,
    pub n_tok: DevPtr,
    pub n_new: DevPtr,
    pub n_link_e: DevPtr,
    pub n_link: DevPtr,
    pub p_state: DevPtr,
    pub p_cost: DevPtr,
    pub c_state: DevPtr,
    pub c_cost: DevPtr,
    pub c_bpsrc: DevPtr,
    pub c_bparc: DevPtr,
    pub lane_ctx: DevPtr,
    pub fr_tok: DevPtr,
    pub fr_cost: DevPtr,
    pub eoff: DevPtr,
    pub slot: DevPtr,
    pub first: DevPtr,
    pub map: DevPtr,
    pub e_gc: DevPtr,
    pub e_ac: DevPtr,
    pub e_ok: DevPtr,
    pub flags: DevPtr,
    pub touched: DevPtr,
    pub pos: DevPtr,
    pub sx: DevPtr,
    pub l_src: DevPtr,
    pub l_dst: DevPtr,
    pub l_arc: DevPtr,
    pub l_graph: DevPtr,
    pub l_ac: DevPtr,
    pub lane_scan: DevPtr,
    pub out: DevPtr,
}

impl LaneBufs {
    /// Allocates every buffer (slots at "none": all bytes 0xff); on failure (out of device
    /// memory) frees what it had allocated.
    pub fn new(dev: &mut dyn Device, caps: Caps) -> Result<Self> {
        let mut all = Vec::new();
        let r = Self::build(dev, caps, &mut all);
        if r.is_err() {
            for p in all {
                dev.free(p);
            }
        }
        r
    }

    /// u32 words of the packed output: the header, then every lane's tokens and links at full
    /// capacity.
    pub fn out_words(caps: Caps) -> usize {
        HDR0 + HDR * caps.lanes + caps.lanes * (4 * caps.tok + 5 * caps.link)
    }

    fn build(dev: &mut dyn Device, caps: Caps, all: &mut Vec<DevPtr>) -> Result<Self> {
        let (l, t, a, k, s) = (caps.lanes, caps.tok, caps.arc, caps.link, caps.states);
        let mut al = |bytes: usize, fill: u8, what: &str| -> Result<DevPtr> {
            let p = dev.alloc(bytes, fill, what)?;
            all.push(p);
            Ok(p)
        };
        Ok(Self {
            lane_in: al(4 * LANE_IN * l, 0, "lane inputs")?,
            lane_cur: al(4 * LANE_IN * l, 0, "lane inputs")?,
            next_cut: al(16 * l, 0, "expand cuts")?,
            status: al(4 * l, 0, "lane flags")?,
            need: al(12 * l, 0, "lane needs")?,
            work: al(8 * l, 0, "lane counts")?,
            best_key: al(8 * l, 0xff, "lane minima")?,
            bound: al(4 * l, 0, "lane bounds")?,
            n_exp: al(4 * l, 0, "lane counts")?,
            emit_min: al(4 * l, 0xff, "lane minima")?,
            cutoff: al(4 * l, 0, "lane cutoffs")?,
            n_touched: al(4 * l, 0, "lane counts")?,
            n_tok: al(4 * l, 0, "lane counts")?,
            n_new: al(4 * l, 0, "lane counts")?,
            n_link_e: al(4 * l, 0, "lane counts")?,
            n_link: al(4 * l, 0, "lane counts")?,
            p_state: al(4 * l * t, 0, "previous tokens")?,
            p_cost: al(4 * l * t, 0, "previous tokens")?,
            c_state: al(4 * l * t, 0, "frame tokens")?,
            c_cost: al(4 * l * t, 0, "frame tokens")?,
            c_bpsrc: al(4 * l * t, 0, "frame back-pointers")?,
            c_bparc: al(4 * l * t, 0, "frame back-pointers")?,
            fr_tok: al(4 * l * t, 0, "closure frontiers")?,
            fr_cost: al(4 * l * t, 0, "closure frontiers")?,
            eoff: al(4 * l * (2 * t + 1), 0, "enumeration offsets")?,
            lane_ctx: al(4 * LANE_CTX * l, 0, "lane contexts")?,
            slot: al(8 * l * s, 0xff, "per-state recombination slots")?,
            first: al(4 * l * s, 0xff, "per-state discoveries")?,
            map: al(4 * l * s, 0xff, "per-state token maps")?,
            e_gc: al(4 * l * a, 0, "expanded-arc costs")?,
            e_ac: al(4 * l * a, 0, "expanded-arc costs")?,
            e_ok: al(4 * l * a, 0, "expanded-arc flags")?,
            flags: al(4 * l * a, 0, "compaction flags")?,
            touched: al(4 * l * a, 0, "touched states")?,
            pos: al(4 * l * (a + 1), 0, "compaction positions")?,
            sx: al(4 * l * a, 0, "scan inputs")?,
            l_src: al(4 * l * k, 0, "lattice links")?,
            l_dst: al(4 * l * k, 0, "lattice links")?,
            l_arc: al(4 * l * k, 0, "lattice links")?,
            l_graph: al(4 * l * k, 0, "lattice links")?,
            l_ac: al(4 * l * k, 0, "lattice links")?,
            lane_scan: al(16 * (l + 1), 0, "lane offsets")?,
            out: al(4 * Self::out_words(caps), 0, "packed frame output")?,
            caps,
            all: all.clone(),
        })
    }

    pub fn free(&self, dev: &mut dyn Device) {
        for &p in &self.all {
            dev.free(p);
        }
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.all.iter().map(|p| p.bytes).sum()
    }

    /// The kernels' parameters over these buffers and graph `g` (the scores, boosters, context
    /// pool and per-step fields are set by the caller).
    pub fn params(&self, g: &GraphBufs, num_states: usize) -> FrameParams {
        let c = self.caps;
        FrameParams {
            e_off: g.e_off.addr,
            ne_off: g.ne_off.addr,
            ilabel: g.ilabel.addr,
            weight: g.weight.addr,
            next: g.next.addr,
            src: g.src.addr,
            olabel: g.olabel.addr,
            lane_in: self.lane_in.addr,
            lane_cur: self.lane_cur.addr,
            next_cut: self.next_cut.addr,
            status: self.status.addr,
            need: self.need.addr,
            work: self.work.addr,
            best_key: self.best_key.addr,
            bound: self.bound.addr,
            n_exp: self.n_exp.addr,
            emit_min: self.emit_min.addr,
            cutoff: self.cutoff.addr,
            n_touched: self.n_touched.addr,
            n_tok: self.n_tok.addr,
            n_new: self.n_new.addr,
            n_link_e: self.n_link_e.addr,
            n_link: self.n_link.addr,
            p_state: self.p_state.addr,
            p_cost: self.p_cost.addr,
            c_state: self.c_state.addr,
            c_cost: self.c_cost.addr,
            c_bpsrc: self.c_bpsrc.addr,
            c_bparc: self.c_bparc.addr,
            fr_tok: self.fr_tok.addr,
            fr_cost: self.fr_cost.addr,
            slot: self.slot.addr,
            first: self.first.addr,
            map: self.map.addr,
            e_gc: self.e_gc.addr,
            e_ac: self.e_ac.addr,
            e_ok: self.e_ok.addr,
            flags: self.flags.addr,
            touched: self.touched.addr,
            eoff: self.eoff.addr,
            pos: self.pos.addr,
            sx: self.sx.addr,
            l_src: self.l_src.addr,
            l_dst: self.l_dst.addr,
            l_arc: self.l_arc.addr,
            l_graph: self.l_graph.addr,
            l_ac: self.l_ac.addr,
            lane_scan: self.lane_scan.addr,
            out: self.out.addr,
            lane_ctx: self.lane_ctx.addr,
            entry_arc: g.entry_arc.addr,
            entry_weight: g.entry_weight.addr,
            entry_ri: g.entry_ri.addr,
            returns: g.returns.addr,
            n_entries: g.n_entries,
            n_returns: g.n_returns,
            slot_word: g.slot_word,
            a_main: g.a_main,
            state_stride: c.states as u32,
            eoff_stride: (2 * c.tok + 1) as u32,
            num_states: num_states as u32,
            tok_cap: c.tok as u32,
            arc_cap: c.arc as u32,
            link_cap: c.link as u32,
            sx_stride: c.arc as u32,
            lanes: c.lanes as u32,
            ..Default::default()
        }
    }
}

/// The kernels of one step, in launch order (decoder.cu's header).
pub(crate) const STEP_KERNELS: [&str; 5] = [
    "emit_begin",
    "expand",
    "frame_finish",
    "pack_offsets",
    "gather_out",
];

/// A step launched and not yet collected: the lanes' errors found before the launch, and
/// which lanes run it.
pub(crate) struct Launched {
    pub errors: Vec<Option<crate::error::DecodeError>>,
    pub act: Vec<u32>,
}

/// The sizes of the last step, which size the next step's item grids and first copy back.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LastStep {
    /// The most arcs one lane relaxed.
    pub arcs: usize,
    /// The most tokens or links one lane had.
    pub items: usize,
    /// Words of the packed body.
    pub body: usize,
}

#[cfg(test)]
mod tests {
    use super::FrameParams;

    /// Every field of `FrameParams` where the kernels' C++ compiler puts `struct Frame`'s.
    #[test]
    fn frame_params_are_laid_out_as_the_kernels_struct() {
        let size = std::mem::size_of::<FrameParams>();
        ctx_cuda::shim::check_layout("Frame", FrameParams::FIELDS, size).unwrap();
        assert_eq!(FrameParams::default().bytes().len(), size);
    }
}

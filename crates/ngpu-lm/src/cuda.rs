//! NGPU-LM queries on a device (docs/design.md §10): the arrays uploaded once, and the kernels of
//! `kernels/ngpu_lm.cu` (one thread per output cell, back-off chain walked per label) launched
//! for a batch of states. The device is a GPU or the CPU shim that runs the same kernels as C++;
//! results equal [`NgramLm`]'s CPU queries bit for bit (same summation order, no FMA).

use crate::arrays::NgramLm;
use crate::error::{NgpuError, Result};
use crate::forest::{check_roots, Forest};
use crate::query::{check_advance, check_final, check_sparse};

/// The most rows one launch covers (CUDA's limit on a grid's y dimension).
const MAX_GRID_Y: usize = 65_535;
use ctx_cuda::device::{as_bytes, as_bytes_mut};
use ctx_cuda::{CudaError, DevPtr, Device, Pod};

ctx_cuda::kernel_params! {
    /// `struct NgpuQuery` of kernels/ngpu_lm.cu (pointers as u64, then four u32: no padding).
    #[derive(Debug, Clone, Copy, Default)]
    struct QueryParams {
        arc_start: u64,
        arc_label: u64,
        arc_weight: u64,
        arc_to: u64,
        backoff_to: u64,
        backoff_weight: u64,
        final_weight: u64,
        states: u64,
        labels: u64,
        roots: u64,
        scores: u64,
        next: u64,
        vocab: u32,
        rows: u32,
        k: u32,
        pad: u32,
    }
}

impl QueryParams {
    fn bytes(&self) -> &[u8] {
        // SAFETY: repr(C), twelve u64 then four u32: no padding.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}

ctx_cuda::kernel_params! {
    /// `struct NgpuWalk` of kernels/ngpu_lm.cu (five pointers, two u32: no padding).
    #[derive(Debug, Clone, Copy, Default)]
    struct WalkParams {
        states: u64,
        labels: u64,
        scores: u64,
        next: u64,
        picked: u64,
        vocab: u32,
        rows: u32,
    }
}

impl WalkParams {
    fn bytes(&self) -> &[u8] {
        // SAFETY: repr(C), five u64 then two u32: no padding.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}

/// What [`DeviceLm::walk_resident`] measured: the scores each row picked (step-major: step t's
/// rows at `t · B`), the rows' last states, and the seconds of the device loop (launches to the
/// one copy back), with its launches and copies back.
#[derive(Debug, Clone)]
pub struct ResidentWalk {
    /// The score each row picked, step-major.
    pub picked: Vec<f32>,
    /// The rows' states after the last step.
    pub states: Vec<u32>,
    /// Seconds from the first launch to the picked scores back on the host.
    pub seconds: f64,
    /// Kernel launches.
    pub launches: usize,
    /// Copies back (the picked scores, the last states).
    pub readbacks: usize,
}

impl From<CudaError> for NgpuError {
    fn from(e: CudaError) -> Self {
        NgpuError::Device(e.to_string())
    }
}

fn upload_new<T: Pod>(dev: &mut dyn Device, v: &[T], what: &str) -> Result<DevPtr> {
    let p = dev.alloc(std::mem::size_of_val(v).max(4), 0, what)?;
    dev.upload(p, 0, as_bytes(v))?;
    Ok(p)
}

/// Batch buffers, grown on demand.
#[derive(Default)]
struct Batch {
    states: Option<DevPtr>,
    labels: Option<DevPtr>,
    roots: Option<DevPtr>,
    scores: Option<DevPtr>,
    next: Option<DevPtr>,
}

/// An [`NgramLm`] on a device: the batched queries of [`NgramLm::advance`],
/// [`NgramLm::advance_sparse`] and [`NgramLm::final_weights`] run as kernels.
pub struct DeviceLm {
    dev: Box<dyn Device>,
    lm: [DevPtr; 7],
    vocab: usize,
    states: usize,
    /// The states a query may name as its root, sorted ([0] for an LM, a forest's tree roots).
    roots: Vec<u32>,
    batch: Batch,
    block: u32,
}

impl std::fmt::Debug for DeviceLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceLm({}, V = {})", self.dev.name(), self.vocab)
    }
}

impl DeviceLm {
    /// Uploads `lm`'s arrays to `dev` (once; queries then copy only states and results).
    pub fn new(lm: &NgramLm, mut dev: Box<dyn Device>) -> Result<Self> {
        let d = dev.as_mut();
        let arrays = [
            upload_new(d, &lm.arc_start, "the LM's arc offsets")?,
            upload_new(d, &lm.arc_label, "the LM's arc labels")?,
            upload_new(d, &lm.arc_weight, "the LM's arc weights")?,
            upload_new(d, &lm.arc_to, "the LM's arc destinations")?,
            upload_new(d, &lm.backoff_to, "the LM's back-off targets")?,
            upload_new(d, &lm.backoff_weight, "the LM's back-off weights")?,
            upload_new(d, &lm.final_weight, "the LM's final weights")?,
        ];
        Ok(Self {
            dev,
            lm: arrays,
            vocab: lm.vocab,
            states: lm.num_states(),
            roots: vec![0],
            batch: Batch::default(),
            block: 256,
        })
    }

    /// Uploads a forest's arrays ([`Forest`]: many trees, each query row from its tree's root,
    /// [`Self::advance_rooted`]).
    pub fn new_forest(forest: &Forest, dev: Box<dyn Device>) -> Result<Self> {
        let mut d = Self::new(forest.arrays(), dev)?;
        d.roots = forest.roots().to_vec();
        d.roots.sort_unstable();
        Ok(d)
    }

    /// Labels of the LM.
    pub fn vocab_size(&self) -> usize {
        self.vocab
    }

    /// States of the LM.
    pub fn num_states(&self) -> usize {
        self.states
    }

    /// The device's name ("cpu-shim" for the shim).
    pub fn device_name(&self) -> String {
        self.dev.name()
    }

    /// The device memory's peak bandwidth in GB/s, when the device says.
    pub fn peak_bandwidth_gbs(&self) -> Option<f64> {
        self.dev.peak_bandwidth_gbs()
    }

    fn ensure(
        dev: &mut dyn Device,
        slot: &mut Option<DevPtr>,
        bytes: usize,
        what: &str,
    ) -> Result<DevPtr> {
        match *slot {
            Some(p) if p.bytes >= bytes => Ok(p),
            old => {
                if let Some(p) = old {
                    dev.free(p);
                }
                let p = dev.alloc(bytes.max(4), 0, what)?;
                *slot = Some(p);
                Ok(p)
            }
        }
    }

    fn params(&self, rows: usize, k: usize, rooted: bool) -> QueryParams {
        let addr = |p: Option<DevPtr>| p.map_or(0, |p| p.addr);
        QueryParams {
            arc_start: self.lm[0].addr,
            arc_label: self.lm[1].addr,
            arc_weight: self.lm[2].addr,
            arc_to: self.lm[3].addr,
            backoff_to: self.lm[4].addr,
            backoff_weight: self.lm[5].addr,
            final_weight: self.lm[6].addr,
            states: addr(self.batch.states),
            labels: addr(self.batch.labels),
            roots: if rooted { addr(self.batch.roots) } else { 0 },
            scores: addr(self.batch.scores),
            next: addr(self.batch.next),
            vocab: self.vocab as u32,
            rows: rows as u32,
            k: k as u32,
            pad: 0,
        }
    }

    /// Uploads the states and sizes the outputs for `cells` cells.
    fn stage(&mut self, states: &[u32], cells: usize) -> Result<()> {
        let d = self.dev.as_mut();
        let p = Self::ensure(
            d,
            &mut self.batch.states,
            states.len() * 4,
            "the query's states",
        )?;
        d.upload(p, 0, as_bytes(states))?;
        Self::ensure(d, &mut self.batch.scores, cells * 4, "the query's scores")?;
        Self::ensure(
            d,
            &mut self.batch.next,
            cells * 4,
            "the query's next states",
        )?;
        Ok(())
    }

    fn fetch(&mut self, scores: &mut [f32], next: Option<&mut [u32]>) -> Result<()> {
        let d = self.dev.as_mut();
        d.download(self.batch.scores.unwrap(), 0, as_bytes_mut(scores))?;
        if let Some(next) = next {
            d.download(self.batch.next.unwrap(), 0, as_bytes_mut(next))?;
        }
        Ok(())
    }

    /// Blocks per row for `cells` cells of a row (at most 64: threads stride beyond).
    fn blocks(&self, cells: usize) -> u32 {
        (cells.div_ceil(self.block as usize)).clamp(1, 64) as u32
    }

    /// Launches `kernel` over `rows` rows of `cells` cells each, in slices of at most
    /// [`MAX_GRID_Y`] rows (a grid's y dimension), the row pointers advanced per slice.
    fn launch_rows(
        &mut self,
        kernel: &str,
        rows: usize,
        cells: usize,
        k: usize,
        rooted: bool,
    ) -> Result<()> {
        let mut start = 0;
        while start < rows {
            let n = (rows - start).min(MAX_GRID_Y);
            let mut p = self.params(n, k, rooted);
            let row_bytes = (cells * 4) as u64;
            p.states += start as u64 * 4;
            if rooted {
                p.roots += start as u64 * 4;
            }
            p.labels += if k > 0 { start as u64 * row_bytes } else { 0 };
            p.scores += start as u64 * row_bytes;
            p.next += start as u64 * row_bytes;
            let grid = (self.blocks(cells), n as u32);
            self.dev.launch(kernel, grid, self.block, p.bytes())?;
            start += n;
        }
        Ok(())
    }

    /// [`NgramLm::advance`] on the device: `scores[b * V + l]`, `next[b * V + l]`.
    pub fn advance(&mut self, states: &[u32], scores: &mut [f32], next: &mut [u32]) -> Result<()> {
        let v = self.vocab;
        check_advance(self.states, v, states, scores.len(), next.len())?;
        if states.is_empty() {
            return Ok(());
        }
        self.stage(states, states.len() * v)?;
        self.launch_rows("ngpu_advance", states.len(), v, 0, false)?;
        self.fetch(scores, Some(next))
    }

    /// [`Forest::advance_rooted`] on the device: row `b` from `states[b]` in the tree whose
    /// root is `roots[b]` (a root of the forest this device holds; state 0 for an LM).
    pub fn advance_rooted(
        &mut self,
        states: &[u32],
        roots: &[u32],
        scores: &mut [f32],
        next: &mut [u32],
    ) -> Result<()> {
        let v = self.vocab;
        check_advance(self.states, v, states, scores.len(), next.len())?;
        check_roots(&self.roots, states, roots)?;
        if states.is_empty() {
            return Ok(());
        }
        self.stage(states, states.len() * v)?;
        let d = self.dev.as_mut();
        let rp = Self::ensure(
            d,
            &mut self.batch.roots,
            roots.len() * 4,
            "the query's roots",
        )?;
        d.upload(rp, 0, as_bytes(roots))?;
        self.launch_rows("ngpu_advance", states.len(), v, 0, true)?;
        self.fetch(scores, Some(next))
    }

    /// [`NgramLm::advance_sparse`] on the device: K labels per row.
    pub fn advance_sparse(
        &mut self,
        states: &[u32],
        labels: &[u32],
        scores: &mut [f32],
        next: &mut [u32],
    ) -> Result<()> {
        let k = check_sparse(
            self.states,
            self.vocab,
            states,
            labels,
            scores.len(),
            next.len(),
        )?;
        if k == 0 {
            return Ok(());
        }
        self.stage(states, labels.len())?;
        let d = self.dev.as_mut();
        let lp = Self::ensure(
            d,
            &mut self.batch.labels,
            labels.len() * 4,
            "the query's labels",
        )?;
        d.upload(lp, 0, as_bytes(labels))?;
        self.launch_rows("ngpu_sparse", states.len(), k, k, false)?;
        self.fetch(scores, Some(next))
    }

    /// `labels.len() / states.len()` batched full-vocabulary queries ([`Self::advance`]) back to
    /// back on the device, each row then moving to the next state of its label for that step
    /// (`labels[t · B + b]`), nothing copied back between steps: the device's own query rate,
    /// as a decoder that keeps the LM's outputs on the device (fusion's argmax there) sees it.
    /// The picked scores and last states come back once, at the end.
    pub fn walk_resident(&mut self, states: &[u32], labels: &[u32]) -> Result<ResidentWalk> {
        let (b, v) = (states.len(), self.vocab);
        check_advance(self.states, v, states, b * v, b * v)?;
        if b == 0 || labels.is_empty() || !labels.len().is_multiple_of(b) {
            return Err(NgpuError::Device(format!(
                "a resident walk needs whole steps of {b} labels, got {}",
                labels.len()
            )));
        }
        if let Some(&l) = labels.iter().find(|&&l| l as usize >= v) {
            return Err(NgpuError::Device(format!(
                "a resident walk's label {l} is outside the vocabulary of {v}"
            )));
        }
        let steps = labels.len() / b;
        self.stage(states, b * v)?;
        let d = self.dev.as_mut();
        let lab = upload_new(d, labels, "the walk's labels")?;
        let picked = d.alloc(4 * labels.len(), 0, "the walk's picked scores")?;
        d.synchronize()?;
        let walk = d.kernel("ngpu_walk")?;
        let t0 = std::time::Instant::now();
        let mut launches = 0;
        let mut run = || -> Result<()> {
            for t in 0..steps {
                launches += b.div_ceil(MAX_GRID_Y) + 1;
                self.launch_rows("ngpu_advance", b, v, 0, false)?;
                let w = WalkParams {
                    states: self.batch.states.expect("staged").addr,
                    labels: lab.addr + (4 * t * b) as u64,
                    scores: self.batch.scores.expect("staged").addr,
                    next: self.batch.next.expect("staged").addr,
                    picked: picked.addr + (4 * t * b) as u64,
                    vocab: v as u32,
                    rows: b as u32,
                };
                let grid = (self.blocks(b), 1);
                self.dev.launch_kernel(walk, grid, self.block, w.bytes())?;
            }
            Ok(())
        };
        let r = run();
        let d = self.dev.as_mut();
        let mut out = ResidentWalk {
            picked: vec![0f32; labels.len()],
            states: vec![0u32; b],
            seconds: 0.0,
            launches,
            readbacks: 2,
        };
        let r = r.and_then(|_| {
            d.download(picked, 0, as_bytes_mut(&mut out.picked))?;
            out.seconds = t0.elapsed().as_secs_f64();
            d.download(
                self.batch.states.expect("staged"),
                0,
                as_bytes_mut(&mut out.states),
            )?;
            Ok(())
        });
        d.free(lab);
        d.free(picked);
        r.map(|_| out)
    }

    /// [`NgramLm::final_weights`] on the device.
    pub fn final_weights(&mut self, states: &[u32], out: &mut [f32]) -> Result<()> {
        check_final(self.states, states, out.len())?;
        if states.is_empty() {
            return Ok(());
        }
        self.stage(states, states.len())?;
        let p = self.params(states.len(), 0, false);
        let grid = (self.blocks(states.len()), 1);
        self.dev.launch("ngpu_final", grid, self.block, p.bytes())?;
        self.fetch(out, None)
    }
}

impl Drop for DeviceLm {
    fn drop(&mut self) {
        let d = self.dev.as_mut();
        for p in self.lm {
            d.free(p);
        }
        let b = &self.batch;
        for p in [b.states, b.labels, b.roots, b.scores, b.next]
            .into_iter()
            .flatten()
        {
            d.free(p);
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::{QueryParams, WalkParams};

    /// The query and walk parameters where the kernels' C++ compiler puts their structs'.
    #[test]
    fn query_and_walk_params_are_laid_out_as_the_kernels_structs() {
        use ctx_cuda::shim::check_layout;
        check_layout(
            "NgpuQuery",
            QueryParams::FIELDS,
            std::mem::size_of::<QueryParams>(),
        )
        .unwrap();
        check_layout(
            "NgpuWalk",
            WalkParams::FIELDS,
            std::mem::size_of::<WalkParams>(),
        )
        .unwrap();
    }
}

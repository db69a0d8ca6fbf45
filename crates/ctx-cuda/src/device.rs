//! The device a method crate's host code drives: buffers addressed by [`DevPtr`], copies, fills
//! and launches of kernels by name with one parameter struct passed by value.

use crate::error::Result;

/// An allocation on a device: its address (a device pointer on a GPU, a host address on the
/// shim) and size. Kernels receive addresses inside their parameter struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevPtr {
    /// Address of the first byte.
    pub addr: u64,
    /// Size in bytes.
    pub bytes: usize,
}

/// A kernel looked up once by name ([`Device::kernel`]): launching it by id does no lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelId(pub u32);

/// A device's kernels: each entry point by [`KernelId`] (the order they were added), and its id
/// by name — the one lookup both devices share.
#[derive(Debug)]
pub(crate) struct KernelTable<F> {
    entries: Vec<(String, F)>,
    ids: std::collections::HashMap<String, u32>,
}

impl<F: Copy> KernelTable<F> {
    /// A table of `(name, entry point)` pairs.
    pub(crate) fn new(kernels: impl IntoIterator<Item = (String, F)>) -> Self {
        let entries: Vec<(String, F)> = kernels.into_iter().collect();
        let ids = entries
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i as u32))
            .collect();
        Self { entries, ids }
    }

    /// The id of kernel `name`.
    pub(crate) fn id(&self, name: &str) -> Result<KernelId> {
        self.ids
            .get(name)
            .map(|&i| KernelId(i))
            .ok_or_else(|| crate::CudaError::UnknownKernel(name.to_string()))
    }

    /// Kernel `k`'s name and entry point.
    pub(crate) fn get(&self, k: KernelId) -> Result<(&str, F)> {
        self.entries
            .get(k.0 as usize)
            .map(|(n, f)| (n.as_str(), *f))
            .ok_or_else(|| crate::CudaError::UnknownKernel(format!("#{}", k.0)))
    }
}

/// Plain data that may be copied to and from a device byte for byte.
///
/// # Safety
/// Implementors must have no padding and no invalid bit patterns.
pub unsafe trait Pod: Copy + 'static {}
unsafe impl Pod for u8 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for i32 {}
unsafe impl Pod for f32 {}

/// The bytes of a slice of plain data.
pub fn as_bytes<T: Pod>(v: &[T]) -> &[u8] {
    // SAFETY: T is Pod (no padding); the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// The bytes of a mutable slice of plain data.
pub fn as_bytes_mut<T: Pod>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: T is Pod (every bit pattern valid); the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

/// A device: a GPU (`cuda::CudaDevice`, the driver API) or the CPU shim (`shim::ShimDevice`).
/// Launches are ordered: a copy after a launch sees its writes.
pub trait Device: Send {
    /// The device's name as results report it (e.g. "NVIDIA H100 80GB HBM3", "cpu-shim").
    fn name(&self) -> String;
    /// Whether this is a real GPU.
    fn is_gpu(&self) -> bool;
    /// Allocates `bytes` bytes, every byte set to `fill`; `what` names the buffer in errors.
    fn alloc(&mut self, bytes: usize, fill: u8, what: &str) -> Result<DevPtr>;
    /// Frees an allocation.
    fn free(&mut self, p: DevPtr);
    /// Copies `src` to `dst` at byte `offset`.
    fn upload(&mut self, dst: DevPtr, offset: usize, src: &[u8]) -> Result<()>;
    /// Copies from `src` at byte `offset` into `dst`.
    fn download(&mut self, src: DevPtr, offset: usize, dst: &mut [u8]) -> Result<()>;
    /// Sets `bytes` bytes from `offset` to `value`.
    fn fill(&mut self, p: DevPtr, offset: usize, bytes: usize, value: u8) -> Result<()>;
    /// The kernel named `name`, resolved once (an unknown name is [`crate::CudaError::UnknownKernel`]).
    fn kernel(&self, name: &str) -> Result<KernelId>;
    /// Launches kernel `k` on a grid of `grid.0 × grid.1` blocks of `block` threads, with
    /// `params` (the bytes of the kernel's parameter struct) as its one argument.
    fn launch_kernel(
        &mut self,
        k: KernelId,
        grid: (u32, u32),
        block: u32,
        params: &[u8],
    ) -> Result<()>;
    /// Launches kernel `name` (looked up now: hot loops resolve theirs once with
    /// [`Device::kernel`]).
    fn launch(&mut self, name: &str, grid: (u32, u32), block: u32, params: &[u8]) -> Result<()> {
        let k = self.kernel(name)?;
        self.launch_kernel(k, grid, block, params)
    }
    /// Waits for every launch and copy.
    fn synchronize(&mut self) -> Result<()>;
    /// The memory's peak bandwidth in GB/s (2 × memory clock × bus width), what a
    /// memory-bound kernel's rate is reported against; None where the device does not say
    /// (the shim).
    fn peak_bandwidth_gbs(&self) -> Option<f64> {
        None
    }
}

/// Checks a copy against its buffer.
pub(crate) fn check_range(p: DevPtr, offset: usize, bytes: usize) -> Result<()> {
    if offset.checked_add(bytes).is_none_or(|end| end > p.bytes) {
        return Err(crate::CudaError::OutOfBounds {
            what: format!("at {:#x}", p.addr),
            offset,
            bytes,
            size: p.bytes,
        });
    }
    Ok(())
}

//! The CPU shim device: host memory, and the kernels of `kernels/` compiled as C++ against
//! `kernels/shim.h` (by build.rs), each grid run block by block and thread by thread — the
//! threads of a block-cooperative kernel's block as fibers that meet at each `__syncthreads`.
//! A kernel bug (a wrong packing, a wrong prefix sum, a lost token, a missing barrier) shows on
//! the CPU as it would on a GPU.
//! A [`ShimDevice::with_schedule`] runs each grid's threads reversed or shuffled (seeded): a
//! result that depends on which thread runs first — what makes a GPU nondeterministic — then
//! differs from the in-order one. [`ShimDevice::with_threads`] runs each grid on several OS
//! threads at once, so the kernels' threads truly interleave (real atomics): a plain read of
//! memory that another thread of the same launch writes can then change the result, as a race
//! does on a GPU.

use crate::device::{check_range, DevPtr, Device, KernelId, KernelTable};
use crate::error::{CudaError, Result};
use std::collections::HashMap;

type ShimFn = unsafe extern "C" fn(u32, u32, u32, *const u8, u64, u64, u64);
/// Writes a parameter struct's field offsets in order and returns its size.
type LayoutFn = unsafe extern "C" fn(*mut u64) -> u64;

include!(concat!(env!("OUT_DIR"), "/shim_table.rs"));

/// Host memory standing in for device memory, and the shim kernels.
#[derive(Debug)]
pub struct ShimDevice {
    /// Allocations by address (u64 words: 8-byte aligned, as device allocations are).
    mem: HashMap<u64, Vec<u64>>,
    /// Every kernel's entry point, by [`KernelId`] (the order of `SHIM_KERNELS`) and by name.
    kernels: KernelTable<ShimFn>,
    /// Device memory to emulate (None: as much as the host has).
    limit: Option<usize>,
    used: usize,
    /// The order each grid's threads run in (0 in order, 1 reversed, else a seeded shuffle).
    schedule: u64,
    /// OS threads that run each grid together (1: one after another).
    threads: usize,
}

/// A number from the environment variable `name`, or `default` when it is unset; a value that
/// is not a number is said once on stderr (`what` says what the variable means) and ignored.
fn env_number(name: &str, what: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("{name}={v:?} is not a number ({what}): ignored");
            default
        }),
    }
}

impl ShimDevice {
    /// A shim device with every exported kernel, threads in order on one OS thread — or in
    /// the schedule that the environment variable `CTX_SHIM_SCHEDULE` names and on the number
    /// of OS threads `CTX_SHIM_THREADS` names: a whole test suite or a `--backend shim` run can
    /// be repeated under another thread order, or concurrently.
    pub fn new() -> Self {
        static SCHEDULE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        static THREADS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let schedule = *SCHEDULE.get_or_init(|| {
            env_number(
                "CTX_SHIM_SCHEDULE",
                "0 in order, 1 reversed, else a shuffle seed",
                0,
            )
        });
        let threads =
            *THREADS.get_or_init(|| env_number("CTX_SHIM_THREADS", "OS threads per launch", 1));
        Self {
            mem: HashMap::new(),
            kernels: KernelTable::new(SHIM_KERNELS.iter().map(|&(n, f, _)| (n.to_string(), f))),
            limit: None,
            used: 0,
            schedule,
            threads: threads.max(1) as usize,
        }
    }

    /// A shim device that runs each grid's (block, thread) pairs in the order of `schedule`:
    /// 0 in order, 1 reversed, any other value a seeded shuffle (an affine permutation).
    pub fn with_schedule(schedule: u64) -> Self {
        Self {
            schedule,
            ..Self::new()
        }
    }

    /// A shim device with only `bytes` of memory: allocations beyond it fail as on a GPU
    /// ([`CudaError::OutOfMemory`]), so the out-of-memory paths can be tested without one.
    pub fn with_memory(bytes: usize) -> Self {
        Self {
            limit: Some(bytes),
            ..Self::new()
        }
    }

    /// This device, each grid run by `threads` OS threads at once (each every `threads`-th
    /// (block, thread) pair of the schedule): the kernels' threads interleave for real.
    pub fn with_threads(self, threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            ..self
        }
    }

    /// The thread order of this device's grids.
    pub fn schedule(&self) -> u64 {
        self.schedule
    }

    /// The OS threads that run each grid.
    pub fn threads(&self) -> usize {
        self.threads
    }

    fn bytes_mut(&mut self, p: DevPtr) -> &mut [u8] {
        let v = self.mem.get_mut(&p.addr).expect("a live shim allocation");
        // SAFETY: the Vec<u64> holds at least p.bytes bytes (rounded up to words).
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), p.bytes) }
    }
}

impl Default for ShimDevice {
    fn default() -> Self {
        Self::new()
    }
}

impl Device for ShimDevice {
    fn name(&self) -> String {
        "cpu-shim".into()
    }

    fn is_gpu(&self) -> bool {
        false
    }

    fn alloc(&mut self, bytes: usize, fill: u8, what: &str) -> Result<DevPtr> {
        if let Some(limit) = self.limit {
            if self.used + bytes > limit {
                return Err(CudaError::OutOfMemory {
                    what: what.to_string(),
                    bytes,
                    free: limit - self.used,
                    total: limit,
                });
            }
        }
        self.used += bytes;
        let word = u64::from_ne_bytes([fill; 8]);
        let mut v = vec![word; bytes.div_ceil(8).max(1)];
        let addr = v.as_mut_ptr() as u64;
        self.mem.insert(addr, v);
        Ok(DevPtr { addr, bytes })
    }

    fn free(&mut self, p: DevPtr) {
        if self.mem.remove(&p.addr).is_some() {
            self.used -= p.bytes;
        }
    }

    fn upload(&mut self, dst: DevPtr, offset: usize, src: &[u8]) -> Result<()> {
        check_range(dst, offset, src.len())?;
        self.bytes_mut(dst)[offset..offset + src.len()].copy_from_slice(src);
        Ok(())
    }

    fn download(&mut self, src: DevPtr, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(src, offset, dst.len())?;
        let n = dst.len();
        dst.copy_from_slice(&self.bytes_mut(src)[offset..offset + n]);
        Ok(())
    }

    fn fill(&mut self, p: DevPtr, offset: usize, bytes: usize, value: u8) -> Result<()> {
        check_range(p, offset, bytes)?;
        self.bytes_mut(p)[offset..offset + bytes].fill(value);
        Ok(())
    }

    fn kernel(&self, name: &str) -> Result<KernelId> {
        self.kernels.id(name)
    }

    fn launch_kernel(
        &mut self,
        k: KernelId,
        grid: (u32, u32),
        block: u32,
        params: &[u8],
    ) -> Result<()> {
        let (name, f) = self.kernels.get(k)?;
        // The shim copies sizeof(struct) bytes from `params`: a shorter block would be read
        // past its end, a longer one means the Rust and C structs disagree.
        check_param_size(name, params)?;
        let (gx, gy, schedule, threads) = (grid.0, grid.1, self.schedule, self.threads as u64);
        // SAFETY: `params` is the kernel's parameter struct (the caller's contract, as for a
        // GPU launch) and every address in it is a live allocation of this device; the OS
        // threads share it read-only and the device memory only through the kernel, whose
        // concurrent accesses are those of a GPU launch (atomics where threads meet).
        let run = |first: u64, params: usize| unsafe {
            f(gx, gy, block, params as *const u8, schedule, first, threads)
        };
        let addr = params.as_ptr() as usize;
        if threads == 1 {
            run(0, addr);
        } else {
            // Every OS thread starts its share at the barrier, so that the shares overlap in
            // time (a launch is often only microseconds of work).
            let start = std::sync::Barrier::new(threads as usize);
            std::thread::scope(|s| {
                for t in 1..threads {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        run(t, addr)
                    });
                }
                start.wait();
                run(0, addr);
            });
        }
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A kernel parameter struct as the kernels' C++ compiler lays it out: each field's name and
/// offset in declaration order, and the struct's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamLayout {
    /// (field, offset in bytes), in declaration order.
    pub fields: Vec<(&'static str, usize)>,
    /// `sizeof` the struct.
    pub size: usize,
}

/// The layout of the kernels' parameter struct `name` (`Frame`, `NgpuQuery`, ...), or `None`
/// when no exported kernel takes it.
///
/// ```
/// let l = ctx_cuda::shim::param_layout("NgpuWalk").unwrap();
/// assert_eq!(l.fields[0], ("states", 0));
/// assert!(ctx_cuda::shim::param_layout("Nothing").is_none());
/// ```
pub fn param_layout(name: &str) -> Option<ParamLayout> {
    let &(_, names, f) = PARAM_LAYOUTS.iter().find(|(n, _, _)| *n == name)?;
    let mut offsets = vec![0u64; names.len()];
    // SAFETY: the generated function writes one offset per field of the struct, and `offsets`
    // holds as many as the field list the same build generated from that struct.
    let size = unsafe { f(offsets.as_mut_ptr()) } as usize;
    Some(ParamLayout {
        fields: names
            .iter()
            .copied()
            .zip(offsets.into_iter().map(|o| o as usize))
            .collect(),
        size,
    })
}

/// Kernel `name`'s parameter struct and its size (`None`: no such exported kernel); computed
/// once per process.
pub(crate) fn kernel_param(name: &str) -> Option<(&'static str, usize)> {
    static SIZES: std::sync::OnceLock<HashMap<&'static str, (&'static str, usize)>> =
        std::sync::OnceLock::new();
    let sizes = SIZES.get_or_init(|| {
        SHIM_KERNELS
            .iter()
            .map(|&(n, _, ty)| (n, (ty, param_layout(ty).map_or(0, |l| l.size))))
            .collect()
    });
    sizes.get(name).copied()
}

/// Refuses a parameter block whose length is not kernel `name`'s struct's size.
pub(crate) fn check_param_size(name: &str, params: &[u8]) -> Result<()> {
    match kernel_param(name) {
        Some((ty, size)) if size != params.len() => Err(CudaError::ParamSize {
            kernel: name.to_string(),
            params: ty.to_string(),
            expected: size,
            given: params.len(),
        }),
        _ => Ok(()),
    }
}

/// Checks a Rust parameter struct (`fields`: name and offset of each field in order, as
/// [`crate::kernel_params`] records them; `size` its size) against the kernels' struct `name`:
/// the first field that differs in name or offset, or a different size, is the error.
pub fn check_layout(
    name: &str,
    fields: &[(&str, usize)],
    size: usize,
) -> std::result::Result<(), String> {
    let c = param_layout(name).ok_or_else(|| format!("no kernel takes a struct {name}"))?;
    for (i, pair) in c.fields.iter().zip(fields.iter()).enumerate() {
        let ((cn, co), (rn, ro)) = pair;
        if cn != rn || co != ro {
            return Err(format!(
                "struct {name}, field {i}: the kernels have {cn} at {co}, Rust has {rn} at {ro}"
            ));
        }
    }
    if c.fields.len() != fields.len() {
        return Err(format!(
            "struct {name}: the kernels have {} fields, Rust has {}",
            c.fields.len(),
            fields.len()
        ));
    }
    if c.size != size {
        return Err(format!(
            "struct {name}: {} bytes in the kernels, {size} in Rust",
            c.size
        ));
    }
    Ok(())
}

/// Declares a `#[repr(C)]` kernel parameter struct and records its fields' names and offsets
/// as `FIELDS`, so that a test can hold it to the kernels' struct with
/// [`shim::check_layout`](crate::shim::check_layout).
///
/// ```
/// ctx_cuda::kernel_params! {
///     /// `struct NgpuWalk` of kernels/ngpu_lm.cu, as a test would declare it.
///     struct Walk { states: u64, labels: u64, scores: u64, next: u64, picked: u64, vocab: u32, rows: u32 }
/// }
/// assert_eq!(Walk::FIELDS[5], ("vocab", 40));
/// ctx_cuda::shim::check_layout("NgpuWalk", Walk::FIELDS, std::mem::size_of::<Walk>()).unwrap();
/// ```
#[macro_export]
macro_rules! kernel_params {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($(#[$fm:meta])* $fvis:vis $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        $vis struct $name { $($(#[$fm])* $fvis $f: $t),* }
        impl $name {
            /// Each field's name and offset, in declaration order (held to the kernels' struct
            /// by a test).
            #[allow(dead_code)]
            pub const FIELDS: &'static [(&'static str, usize)] =
                &[$((stringify!($f), std::mem::offset_of!($name, $f))),*];
        }
    };
}

//! A real GPU through cudarc's driver API (loaded dynamically: nothing is linked, so a machine
//! without a driver gets [`CudaError::NoDriver`], never a panic). The kernels are compiled by
//! NVRTC once per process for the device's compute capability.

use crate::device::{check_range, DevPtr, Device, KernelId, KernelTable};
use crate::error::{CudaError, Result};
use cudarc::driver::{result, sys};
use std::collections::HashMap;
use std::ffi::CString;

fn dev_err(what: &str) -> impl Fn(result::DriverError) -> CudaError + '_ {
    move |e| CudaError::Device {
        what: what.to_string(),
        message: format!("{e:?}"),
    }
}

/// Whether libcuda can be loaded (checked before any driver call: cudarc panics otherwise).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library candidates.
    unsafe { sys::is_culib_present() }
}

/// Name, compute capability and memory of GPU 0, without creating a context.
pub fn probe() -> Result<(String, (i32, i32), usize)> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    result::init().map_err(dev_err("initialising the driver"))?;
    let n = result::device::get_count().map_err(dev_err("counting devices"))?;
    if n < 1 {
        return Err(CudaError::NoDevice);
    }
    let dev = result::device::get(0).map_err(dev_err("opening device 0"))?;
    let name = result::device::get_name(dev).map_err(dev_err("reading the device name"))?;
    // SAFETY: `dev` came from `device::get`.
    let (major, minor, total) = unsafe {
        use sys::CUdevice_attribute::*;
        let a = |k| result::device::get_attribute(dev, k);
        (
            a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(dev_err("reading the compute capability"))?,
            a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(dev_err("reading the compute capability"))?,
            result::device::total_mem(dev).map_err(dev_err("reading the memory size"))?,
        )
    };
    Ok((name, (major, minor), total))
}

/// Every kernel compiled for `arch`, once per process (NVRTC takes tens of milliseconds a file).
fn compiled(arch: &'static str) -> Result<Vec<(&'static str, String)>> {
    use std::sync::{Mutex, OnceLock};
    type Cache = HashMap<&'static str, Vec<(&'static str, String)>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let mut c = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(v) = c.get(arch) {
        return Ok(v.clone());
    }
    let v = crate::nvrtc::compile_all(arch)?;
    c.insert(arch, v.clone());
    Ok(v)
}

/// GPU 0 with its primary context and the project's kernels loaded.
pub struct CudaDevice {
    name: String,
    ctx: sys::CUcontext,
    /// Every kernel's function, by [`KernelId`] and by name.
    kernels: KernelTable<sys::CUfunction>,
    /// The parameter struct of the launch being made, 8-byte aligned (reused).
    words: Vec<u64>,
    /// Peak memory bandwidth in GB/s (None when the driver gives no clock or bus width).
    bandwidth: Option<f64>,
    arch: &'static str,
}

// SAFETY: the context is made current on the calling thread before every driver call, and the
// device is used by one thread at a time (`&mut self`).
unsafe impl Send for CudaDevice {}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({}, {})", self.name, self.arch)
    }
}

impl CudaDevice {
    /// Opens GPU 0, compiles every kernel for it and loads them.
    pub fn open() -> Result<Self> {
        let (name, (major, minor), _) = probe()?;
        let dev = result::device::get(0).map_err(dev_err("opening device 0"))?;
        // SAFETY: `dev` is a valid device; the primary context lives as long as the process.
        let ctx =
            unsafe { result::primary_ctx::retain(dev) }.map_err(dev_err("creating the context"))?;
        // SAFETY: `ctx` was just retained.
        unsafe { result::ctx::set_current(ctx) }.map_err(dev_err("binding the context"))?;
        let arch = crate::nvrtc::arch_name(major, minor);
        let mut functions = Vec::new();
        for (file, ptx) in compiled(arch)? {
            let image = CString::new(ptx).expect("PTX has no NUL byte");
            // SAFETY: a NUL-terminated PTX image.
            let module = unsafe { result::module::load_data(image.as_ptr().cast()) }
                .map_err(dev_err(&format!("loading the PTX of kernels/{file}")))?;
            let src = crate::kernels::SOURCES
                .iter()
                .find(|(f, _)| *f == file)
                .map(|(_, s)| *s)
                .unwrap_or_default();
            for k in crate::kernels::exported(src) {
                let c = CString::new(k).expect("a kernel name");
                // SAFETY: `module` was just loaded.
                let f = unsafe { result::module::get_function(module, c) }
                    .map_err(dev_err(&format!("finding kernel {k} in kernels/{file}")))?;
                functions.push((k.to_string(), f));
            }
        }
        // SAFETY: `dev` is a valid device.
        let bandwidth = unsafe {
            use sys::CUdevice_attribute::*;
            let a = |k| result::device::get_attribute(dev, k).unwrap_or(0);
            let (khz, bits) = (
                a(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
                a(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            );
            (khz > 0 && bits > 0).then(|| 2.0 * khz as f64 * 1e3 * bits as f64 / 8.0 / 1e9)
        };
        Ok(Self {
            name,
            ctx,
            kernels: KernelTable::new(functions),
            words: Vec::new(),
            bandwidth,
            arch,
        })
    }

    /// The architecture the kernels were compiled for.
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    fn bind(&self) -> Result<()> {
        // SAFETY: `ctx` is the retained primary context.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(dev_err("binding the context"))
    }
}

impl Device for CudaDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn alloc(&mut self, bytes: usize, fill: u8, what: &str) -> Result<DevPtr> {
        self.bind()?;
        // SAFETY: a plain allocation of `bytes` (at least 1) bytes.
        let addr = match unsafe { result::malloc_sync(bytes.max(1)) } {
            Ok(a) => a,
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let (free, total) = result::mem_get_info().unwrap_or((0, 0));
                return Err(CudaError::OutOfMemory {
                    what: what.to_string(),
                    bytes,
                    free,
                    total,
                });
            }
            Err(e) => return Err(dev_err(&format!("allocating {what}"))(e)),
        };
        // SAFETY: `addr` holds `bytes` bytes.
        unsafe { result::memset_d8_sync(addr, fill, bytes) }
            .map_err(dev_err(&format!("filling {what}")))?;
        Ok(DevPtr { addr, bytes })
    }

    fn free(&mut self, p: DevPtr) {
        if self.bind().is_ok() {
            // SAFETY: `p` came from `alloc` and is freed once.
            let _ = unsafe { result::free_sync(p.addr) };
        }
    }

    fn upload(&mut self, dst: DevPtr, offset: usize, src: &[u8]) -> Result<()> {
        check_range(dst, offset, src.len())?;
        self.bind()?;
        // SAFETY: the range lies inside the allocation (checked).
        unsafe { result::memcpy_htod_sync(dst.addr + offset as u64, src) }
            .map_err(dev_err("copying to the device"))
    }

    fn download(&mut self, src: DevPtr, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(src, offset, dst.len())?;
        self.bind()?;
        // SAFETY: the range lies inside the allocation (checked).
        unsafe { result::memcpy_dtoh_sync(dst, src.addr + offset as u64) }
            .map_err(dev_err("copying from the device"))
    }

    fn fill(&mut self, p: DevPtr, offset: usize, bytes: usize, value: u8) -> Result<()> {
        check_range(p, offset, bytes)?;
        self.bind()?;
        // SAFETY: the range lies inside the allocation (checked).
        unsafe { result::memset_d8_sync(p.addr + offset as u64, value, bytes) }
            .map_err(dev_err("filling device memory"))
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
        // The driver copies the kernel's parameter size from `params`: held to the struct's.
        crate::shim::check_param_size(name, params)?;
        self.bind()?;
        // The parameter struct, 8-byte aligned; the driver copies it at launch.
        self.words.clear();
        self.words.resize(params.len().div_ceil(8), 0);
        crate::device::as_bytes_mut(&mut self.words)[..params.len()].copy_from_slice(params);
        let mut args = [self.words.as_mut_ptr().cast::<std::ffi::c_void>()];
        // SAFETY: `f` is a loaded kernel whose one parameter is the struct `params` holds.
        unsafe {
            result::launch_kernel(
                f,
                (grid.0, grid.1, 1),
                (block, 1, 1),
                0,
                std::ptr::null_mut(),
                &mut args,
            )
        }
        .map_err(dev_err(&format!("launching {name}")))
    }

    fn synchronize(&mut self) -> Result<()> {
        self.bind()?;
        result::ctx::synchronize().map_err(dev_err("synchronising"))
    }

    fn peak_bandwidth_gbs(&self) -> Option<f64> {
        self.bandwidth
    }
}

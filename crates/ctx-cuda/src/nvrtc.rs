//! NVRTC compilation of the embedded kernels. Needs only libnvrtc (a CUDA toolkit, or the PyPI
//! wheel `nvidia-cuda-nvrtc` that `make nvrtc-venv` installs), not a GPU: `make test` compiles
//! every kernel this way on machines without one.

use crate::error::{CudaError, Result};
use crate::kernels::SOURCES;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};

/// Whether libnvrtc can be loaded (checked first: cudarc panics when it cannot). Looks on the
/// system's library path, then in [`wheel_dirs`] (a found wheel library is loaded by its full
/// path, after which the loader finds it by its soname: no `LD_LIBRARY_PATH` needed).
pub fn available() -> bool {
    use std::sync::OnceLock;
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: only tries to dlopen the library candidates.
        if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return true;
        }
        for dir in wheel_dirs() {
            if preload(&dir) {
                // SAFETY: as above.
                return unsafe { cudarc::nvrtc::sys::is_culib_present() };
            }
        }
        false
    })
}

/// Directories that may hold a PyPI NVRTC wheel's libraries: `$CTX_NVRTC_LIB_DIR`, then the
/// `.venv-nvrtc` that `make nvrtc-venv` makes in the workspace (CUDA 13 `nvidia/cu13/lib`, or
/// CUDA 12 `nvidia/cuda_nvrtc/lib`).
pub fn wheel_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("CTX_NVRTC_LIB_DIR") {
        dirs.push(d.into());
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv-nvrtc/lib");
    if let Ok(pys) = std::fs::read_dir(&root) {
        for py in pys.flatten() {
            let nv = py.path().join("site-packages/nvidia");
            dirs.push(nv.join("cu13/lib"));
            dirs.push(nv.join("cuda_nvrtc/lib"));
        }
    }
    dirs
}

/// Loads (and keeps loaded) the NVRTC libraries of `dir`, builtins first; whether libnvrtc was.
fn preload(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut libs: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                // Not the wheels' `.alt` builds (another soname, same API).
                .is_some_and(|n| {
                    n.starts_with("libnvrtc") && n.contains(".so") && !n.contains(".alt.")
                })
        })
        .collect();
    // Builtins first: libnvrtc opens them by soname when it compiles.
    libs.sort_by_key(|p| !p.to_string_lossy().contains("builtins"));
    let mut main = false;
    for lib in libs {
        // SAFETY: NVRTC's libraries have no initialisers with preconditions.
        if let Ok(l) = unsafe { libloading::Library::new(&lib) } {
            main |= !lib.to_string_lossy().contains("builtins");
            std::mem::forget(l);
        }
    }
    main
}

/// The NVRTC version (major, minor).
pub fn version() -> Result<(i32, i32)> {
    if !available() {
        return Err(CudaError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (checked); the call writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| CudaError::Device {
            what: "asking NVRTC its version".into(),
            message: format!("{e:?}"),
        })?;
    Ok((major, minor))
}

/// Compiles one kernel source for `arch` (e.g. "sm_90") with the project's options: no FMA
/// contraction (`--fmad=false`, so costs round as on the CPU). Returns the PTX.
pub fn compile(file: &str, source: &str, arch: &'static str) -> Result<String> {
    if !available() {
        return Err(CudaError::NoNvrtc);
    }
    let opts = CompileOptions {
        fmad: Some(false),
        arch: Some(arch),
        name: Some(file.to_string()),
        ..Default::default()
    };
    match compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(CudaError::Compile {
            file: file.to_string(),
            arch: arch.to_string(),
            log: log.to_string_lossy().into_owned(),
        }),
        Err(e) => Err(CudaError::Compile {
            file: file.to_string(),
            arch: arch.to_string(),
            log: format!("{e:?}"),
        }),
    }
}

/// Compiles every embedded kernel file for `arch`: (file, PTX) pairs.
pub fn compile_all(arch: &'static str) -> Result<Vec<(&'static str, String)>> {
    SOURCES
        .iter()
        .map(|&(file, src)| Ok((file, compile(file, src, arch)?)))
        .collect()
}

/// The NVRTC architecture name of a compute capability ("sm_90" for 9.0).
pub fn arch_name(major: i32, minor: i32) -> &'static str {
    // Leaked once per distinct capability of the process (NVRTC options take &'static str).
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<(i32, i32), &'static str>>> = OnceLock::new();
    let mut m = NAMES.get_or_init(Default::default).lock().unwrap();
    m.entry((major, minor))
        .or_insert_with(|| Box::leak(format!("sm_{major}{minor}").into_boxed_str()))
}

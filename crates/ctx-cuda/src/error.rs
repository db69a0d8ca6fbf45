//! Errors of the CUDA layer: each says what was missing, what failed and, for memory, what was
//! being allocated.

use thiserror::Error;

/// What can go wrong when looking for, compiling for or using a GPU.
#[derive(Debug, Error)]
pub enum CudaError {
    /// libcuda could not be loaded (no NVIDIA driver on this machine).
    #[error("no CUDA driver: libcuda.so.1 could not be loaded (no NVIDIA GPU or driver on this machine)")]
    NoDriver,
    /// The driver loaded but reports no device.
    #[error("the CUDA driver reports no GPU device")]
    NoDevice,
    /// The driver or the device failed.
    #[error("CUDA device error while {what}: {message}")]
    Device {
        /// What was being done.
        what: String,
        /// The driver's message.
        message: String,
    },
    /// NVRTC could not be loaded.
    #[error("NVRTC (libnvrtc.so.13 or .12) could not be loaded; install the CUDA toolkit or the PyPI wheel nvidia-cuda-nvrtc and put its lib/ directory on LD_LIBRARY_PATH (make nvrtc-venv)")]
    NoNvrtc,
    /// A kernel file did not compile; the log says why.
    #[error("NVRTC could not compile kernels/{file} for {arch}:\n{log}")]
    Compile {
        /// Kernel file.
        file: String,
        /// Target architecture.
        arch: String,
        /// NVRTC's log.
        log: String,
    },
    /// A device allocation failed.
    #[error("out of GPU memory allocating {what}: {bytes} bytes requested, {free} of {total} bytes free")]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Bytes requested.
        bytes: usize,
        /// Free device memory at the time.
        free: usize,
        /// Total device memory.
        total: usize,
    },
    /// A launch named a kernel that no kernel file exports.
    #[error("no kernel named {0} in kernels/")]
    UnknownKernel(String),
    /// A launch whose parameter block is not the kernel's parameter struct (a host-side bug,
    /// reported instead of reading past the block or leaving fields unset).
    #[error("kernel {kernel} takes a {expected}-byte {params} but was given {given} bytes")]
    ParamSize {
        /// The kernel.
        kernel: String,
        /// Its parameter struct.
        params: String,
        /// The struct's size as the kernels' compiler lays it out.
        expected: usize,
        /// Bytes the launch passed.
        given: usize,
    },
    /// A copy outside an allocation (a host-side bug, reported instead of corrupting memory).
    #[error("copy of {bytes} bytes at offset {offset} is outside the {size}-byte buffer {what}")]
    OutOfBounds {
        /// The buffer.
        what: String,
        /// Offset of the copy.
        offset: usize,
        /// Bytes copied.
        bytes: usize,
        /// Buffer size.
        size: usize,
    },
}

/// Result alias of the CUDA layer.
pub type Result<T> = std::result::Result<T, CudaError>;

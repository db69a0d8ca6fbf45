//! The only crate of ctxbench that touches CUDA (docs/design.md §1, §10).
//!
//! - [`backend`]: `cpu | cuda | auto` and device discovery that never panics: no driver, no
//!   device or a failing device is a typed [`CudaError`], `auto` falls back to the CPU.
//! - [`device`]: the [`Device`] a method crate's host code drives — memory, uploads, downloads
//!   and kernel launches (resolved once by name) — with two implementations:
//!   - [`cuda::CudaDevice`]: a real GPU through cudarc (driver and NVRTC loaded dynamically, so
//!     the crate builds and runs on machines without CUDA);
//!   - [`shim::ShimDevice`]: the same `kernels/*.cu`, compiled as C++ against `kernels/shim.h`
//!     at build time, run on the CPU; how CI tests kernel logic without a GPU.
//! - [`nvrtc`]: compiles the embedded kernels (also without a GPU: only NVRTC is needed).
//! - [`kernels`]: the embedded kernel sources.

pub mod backend;
pub mod cuda;
pub mod device;
pub mod error;
pub mod kernels;
pub mod nvrtc;
pub mod shim;

pub use backend::{open, Backend, Opened};
pub use device::{DevPtr, Device, KernelId, Pod};
pub use error::{CudaError, Result};

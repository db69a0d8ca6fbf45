//! Which backend decodes: `cpu`, `cuda` or `auto`, and opening the device it names.

use crate::cuda::CudaDevice;
use crate::device::Device;
use crate::error::Result;
use std::str::FromStr;

/// The backend a decode runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The CPU reference.
    #[default]
    Cpu,
    /// A GPU; an error when none answers.
    Cuda,
    /// A GPU when one answers, else the CPU (with a one-line notice on stderr).
    Auto,
    /// The CUDA kernels run on the CPU through the shim (tests and debugging; slow).
    Shim,
}

impl FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda),
            "auto" => Ok(Self::Auto),
            "shim" | "cuda-shim" => Ok(Self::Shim),
            _ => Err(format!(
                "unknown backend {s:?} (expected cpu, cuda, auto or shim)"
            )),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Auto => "auto",
            Self::Shim => "shim",
        })
    }
}

/// What [`open`] found: the CPU, or a device that runs the kernels.
pub enum Opened {
    /// Decode on the CPU backend.
    Cpu,
    /// Decode with the kernels on this device.
    Device(Box<dyn Device>),
}

/// Opens what `backend` names. `Auto` says on stderr which it picked (and why not the GPU).
pub fn open(backend: Backend) -> Result<Opened> {
    match backend {
        Backend::Cpu => Ok(Opened::Cpu),
        Backend::Shim => Ok(Opened::Device(Box::new(crate::shim::ShimDevice::new()))),
        Backend::Cuda => Ok(Opened::Device(Box::new(CudaDevice::open()?))),
        Backend::Auto => match CudaDevice::open() {
            Ok(d) => {
                eprintln!(
                    "backend auto: decoding on the GPU ({}, {})",
                    d.name(),
                    d.arch()
                );
                Ok(Opened::Device(Box::new(d)))
            }
            Err(e) => {
                eprintln!("backend auto: decoding on the CPU ({e})");
                Ok(Opened::Cpu)
            }
        },
    }
}

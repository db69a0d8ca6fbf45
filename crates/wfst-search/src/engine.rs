//! The backend a streaming front end advances: the CPU reference ([`Decoder`]) or the CUDA
//! kernels ([`GpuDecoder`], on a GPU or the CPU shim). Both take the same batch of streams and
//! chunks and give the same segments; the streams' state lives on the host either way, so a
//! front end (hclg-boost's pipeline, ctc-wfst's streaming channels) keeps one code path.

use crate::decoder::{Decoder, SegmentResult};
use crate::endpoint::EndpointConfig;
use crate::error::Result;
use crate::search::Stream;
use crate::GpuDecoder;
use ctx_core::scores::ScoreMatrix;

/// Where the frame step runs: the CPU reference or the CUDA kernels (a GPU or the CPU shim).
pub enum Engine<'g> {
    /// The CPU backend (streams in parallel on the current rayon pool).
    Cpu(Decoder<'g>),
    /// The CUDA backend (all streams as one batch on the device).
    Device(Box<GpuDecoder<'g>>),
}

impl std::fmt::Debug for Engine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Engine({}, {})", self.backend(), self.device())
    }
}

impl<'g> Engine<'g> {
    /// Opens `backend` for `dec` (the graph goes to the device once); `Auto` falls back to the
    /// CPU with a notice, `Cuda` without a GPU is an error.
    pub fn open(dec: Decoder<'g>, backend: ctx_cuda::Backend) -> Result<Self> {
        Ok(match ctx_cuda::open(backend)? {
            ctx_cuda::Opened::Cpu => Engine::Cpu(dec),
            ctx_cuda::Opened::Device(d) => Engine::Device(Box::new(GpuDecoder::new(dec, d)?)),
        })
    }

    /// `cpu`, `shim` or `cuda`.
    pub fn backend(&self) -> &'static str {
        match self {
            Engine::Cpu(_) => "cpu",
            Engine::Device(g) if g.is_gpu() => "cuda",
            Engine::Device(_) => "shim",
        }
    }

    /// The device's name ("" on the CPU backend).
    pub fn device(&self) -> String {
        match self {
            Engine::Cpu(_) => String::new(),
            Engine::Device(g) => g.device_name(),
        }
    }

    /// The host-side decoder.
    pub fn decoder(&self) -> &Decoder<'g> {
        match self {
            Engine::Cpu(d) => d,
            Engine::Device(g) => g.decoder(),
        }
    }

    /// Advances every stream by its chunk ([`Decoder::advance`] / [`GpuDecoder::advance`]);
    /// one result per stream, segments finished at endpoints.
    pub fn advance(
        &mut self,
        streams: &mut [Stream],
        chunks: &[&ScoreMatrix],
        endpoint: Option<&EndpointConfig>,
    ) -> Vec<Result<Vec<SegmentResult>>> {
        match self {
            Engine::Cpu(d) => d.advance(streams, chunks, endpoint),
            Engine::Device(g) => g.advance(streams, chunks, endpoint),
        }
    }

    /// Ends a stream's open segment (host code on either backend).
    pub fn finish(&self, stream: &mut Stream) -> Result<SegmentResult> {
        self.decoder().finish(stream)
    }
}

//! The end-to-end family's device objects: the fused LM and the context trees uploaded to the
//! point's device once, like loading the LM (not timed).

use anyhow::Result;
use ngpu_lm::NgramLm;
use std::sync::Mutex;

/// The fused LM and the context trees on the point's device (`None`s on the CPU backend).
pub(crate) type OnDevice = (
    Option<Mutex<ngpu_lm::cuda::DeviceLm>>,
    Option<Mutex<ngpu_lm::fusion::DeviceContexts>>,
);

/// Uploads the LM and the context trees to the point's device (each its own device object).
pub(crate) fn open_device(
    backend: ctx_cuda::Backend,
    lm: Option<&NgramLm>,
    contexts: &ngpu_lm::fusion::Contexts,
) -> Result<OnDevice> {
    let open = || -> Result<Option<Box<dyn ctx_cuda::Device>>> {
        Ok(match ctx_cuda::open(backend)? {
            ctx_cuda::Opened::Cpu => None,
            ctx_cuda::Opened::Device(d) => Some(d),
        })
    };
    let lm_dev = match lm {
        Some(lm) => open()?
            .map(|d| ngpu_lm::cuda::DeviceLm::new(lm, d).map(Mutex::new))
            .transpose()?,
        None => None,
    };
    let ctx_dev = match contexts {
        ngpu_lm::fusion::Contexts::None => None,
        _ => match open()? {
            Some(d) => ngpu_lm::fusion::DeviceContexts::new(contexts, d)?.map(Mutex::new),
            None => None,
        },
    };
    Ok((lm_dev, ctx_dev))
}

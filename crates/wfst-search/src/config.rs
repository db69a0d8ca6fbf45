//! Search settings shared by the CPU and CUDA backends.

use crate::error::{DecodeError, Result};

/// Beam-search settings (Kaldi's online2 chain defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderConfig {
    /// Tokens costlier than the frame's best emitting cost + `beam` are dropped.
    pub beam: f32,
    /// At most about this many tokens are expanded per frame (cut made on a cost histogram).
    pub max_active: usize,
    /// Lattice arcs on no path within `lattice_beam` of the best are pruned.
    pub lattice_beam: f32,
    /// Scale on the acoustic log-likelihoods (cost = −scale × loglik).
    pub acoustic_scale: f32,
    /// Lattice pruning runs every this many frames.
    pub prune_interval: usize,
    /// Record a lattice at all (false: 1-best only, no lattice memory).
    pub lattice: bool,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        Self {
            beam: 15.0,
            max_active: 7000,
            lattice_beam: 6.0,
            acoustic_scale: 1.0,
            prune_interval: 25,
            lattice: true,
        }
    }
}

/// Bins of the max-active cost histogram (both backends use this many).
pub const HISTOGRAM_BINS: usize = 256;

impl DecoderConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        let pos = |name: &str, v: f32| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(DecodeError::Config(format!(
                    "{name} must be a positive finite number, got {v}"
                )))
            }
        };
        pos("beam", self.beam)?;
        pos("lattice_beam", self.lattice_beam)?;
        pos("acoustic_scale", self.acoustic_scale)?;
        if self.max_active == 0 {
            return Err(DecodeError::Config("max_active must be at least 1".into()));
        }
        if self.prune_interval == 0 {
            return Err(DecodeError::Config(
                "prune_interval must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

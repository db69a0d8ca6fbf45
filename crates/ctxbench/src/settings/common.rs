//! The settings every method reads: which data and graph (the setup) and how the search runs
//! (the engine). Their order is points.csv's first columns.

use anyhow::{bail, Result};
use ctx_cuda::Backend;

crate::settings_block! {
    /// The common settings of every point.
    pub struct Common in "common" {
        /// dataset name in datasets.toml
        dataset: Option<String> = None => required,
        /// full or quick
        subset: String = "full".into(),
        /// cpu, cuda (a GPU; the run stops without one) or shim (the CUDA kernels on the CPU)
        backend: Backend = Backend::Cpu,
        /// hclg, tlg-normal or tlg-compact
        graph: String = "hclg".into(); alias "kind",
        /// BPE pieces of TLG graphs
        bpe_size: usize = ctx_data::graphs::DEFAULT_BPE_SIZE,
        /// search beam (graph-cost units)
        beam: f64 = wfst_search::DecoderConfig::default().beam as f64,
        /// max active tokens per frame
        max_active: usize = wfst_search::DecoderConfig::default().max_active,
        /// lattice beam (graph-cost units)
        lattice_beam: f64 = wfst_search::DecoderConfig::default().lattice_beam as f64,
        /// record word lattices (false: the 1-best only, no lattice links or pruning, as Kaldi's
        /// FasterDecoder and riva's best path; lattice biasing, n-best lists, lattice output
        /// and the lattice oracle need them)
        lattice: bool = true,
        /// acoustic scale (default: the acoustic model's own)
        acoustic_scale: Option<f64> = None,
        /// online chunk in seconds
        chunk_s: f64 = 0.5,
        /// split streams at Kaldi endpoints (default: on for hybrid models, off for CTC, which
        /// riva and Kaldi's FasterDecoder decode as whole utterances)
        endpointing: Option<bool> = None,
        /// decoding threads
        threads: usize = 2,
        /// acoustic noise override (calibration only)
        noise: Option<f64> = None,
        /// SNR (dB) of an audio dataset's radio channel, overriding its entry (calibration only)
        snr_db: Option<f64> = None,
        /// decode only the first N utterances
        limit: Option<usize> = None,
        /// global list whose words get precision/recall/F1 (default: rare when present)
        targets: Option<String> = None,
        /// streams decoded together per device batch on the cuda and shim backends
        gpu_batch: usize = 256,
    }
}

impl Common {
    /// Checks the values (closed choices, ranges); the message names the setting.
    pub fn check(&self) -> Result<()> {
        if self.subset != "full" && self.subset != "quick" {
            bail!("subset '{}' (full or quick)", self.subset);
        }
        // Not `auto`: a row's backend must say what ran.
        if self.backend == Backend::Auto {
            bail!("backend 'auto' (cpu, cuda or shim: a row says what ran)");
        }
        if ctx_graph::compile::GraphKind::parse(&self.graph).is_none() {
            bail!("graph '{}' (hclg, tlg-normal, tlg-compact)", self.graph);
        }
        for (k, v) in [
            (crate::key!(Common, threads), self.threads),
            (crate::key!(Common, max_active), self.max_active),
        ] {
            if v == 0 {
                bail!("'{k}' must be at least 1");
            }
        }
        let max = wfst_search::GPU_MAX_BATCH;
        if !(1..=max).contains(&self.gpu_batch) {
            bail!(
                "gpu_batch {}: between 1 and {max} streams (one grid row each)",
                self.gpu_batch
            );
        }
        for (k, v) in [
            (crate::key!(Common, beam), self.beam),
            (crate::key!(Common, lattice_beam), self.lattice_beam),
            (crate::key!(Common, chunk_s), self.chunk_s),
        ] {
            if v <= 0.0 {
                bail!("'{k}' must be positive");
            }
        }
        if let Some(n) = self.limit {
            if n < 1 {
                bail!("limit {n} (--limit): the first N utterances, N at least 1");
            }
        }
        Ok(())
    }

    /// The subset decoded.
    pub fn subset(&self) -> ctx_data::dataset::Subset {
        if self.subset == "quick" {
            ctx_data::dataset::Subset::Quick
        } else {
            ctx_data::dataset::Subset::Full
        }
    }

    /// The dataset's name (checked present when the point was made).
    pub fn dataset(&self) -> &str {
        self.dataset.as_deref().unwrap_or_default()
    }

    /// The graph kind (checked when the point was made).
    pub fn graph_kind(&self) -> Result<ctx_graph::compile::GraphKind> {
        ctx_graph::compile::GraphKind::parse(&self.graph).ok_or_else(|| {
            anyhow::anyhow!("graph '{}' (hclg, tlg-normal, tlg-compact)", self.graph)
        })
    }
}

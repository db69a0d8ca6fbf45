//! What a stream's search reads of its decoder — the graph, the settings, the silence labels and
//! the class slot — apart from the driver ([`crate::Decoder`]: streams, chunks, endpoints,
//! segments), so that the search never imports the decoder that calls it.

use crate::config::DecoderConfig;
use crate::context::SlotInfo;
use ctx_graph::csr::DecodingGraph;

/// The graph a decoder searches and how: built by [`crate::Decoder`], read by every step.
#[derive(Debug, Clone)]
pub(crate) struct SearchSpace<'g> {
    pub(crate) graph: &'g DecodingGraph,
    pub(crate) config: DecoderConfig,
    /// By input label: whether it is silence (endpointing, the slot's entries).
    pub(crate) silence: Vec<bool>,
    /// The largest input label of the graph: score rows need that many columns.
    pub(crate) max_ilabel: u32,
    /// The graph's class slot, when its streams may carry open-vocabulary contexts.
    pub(crate) slot: Option<SlotInfo>,
}

impl<'g> SearchSpace<'g> {
    /// The graph.
    #[inline]
    pub(crate) fn graph(&self) -> &'g DecodingGraph {
        self.graph
    }

    /// The settings.
    #[inline]
    pub(crate) fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The graph's class slot, when declared.
    #[inline]
    pub(crate) fn slot(&self) -> Option<&SlotInfo> {
        self.slot.as_ref()
    }

    /// Whether `ilabel` is a silence label.
    #[inline]
    pub(crate) fn is_silence(&self, ilabel: u32) -> bool {
        self.silence.get(ilabel as usize).copied().unwrap_or(false)
    }
}

//! The ctxbench decoding engine (docs/design.md §4): one frame-synchronous Viterbi beam search over a
//! [`DecodingGraph`](ctx_graph::csr::DecodingGraph), written as the reference the CUDA backend
//! follows rule for rule.
//!
//! - [`config`]: beams, max-active, lattice beam, acoustic scale.
//! - [`booster`]: per-stream cost modifiers (none, arc-index set + discount, word automaton).
//! - [`lm_delta`]: back-off grammars read deterministically and their difference, composed with
//!   the graph on the fly (online G-boosting, exact reference).
//! - [`phrase_automaton`]: the phrase-prefix automaton, G-boosting's cost change in a trie
//!   (online G-boosting, fast).
//! - [`context`]: open-vocabulary contexts: a stream's context graph entered at the graph's
//!   class slot, its states and arcs numbered after the main graph's.
//! - [`search`]: one stream's token passing, recombination, pruning and raw lattice; its
//!   lattice data (tokens, links, frames, the partial hypothesis) in `tokens`, and what it reads
//!   of its decoder (graph, settings, silence, slot) in `space`: leaves, so the search, the
//!   lattice, the decoder and the CUDA backend import them and not each other.
//! - [`lattice`]: lattice pruning and the word lattice (graph and acoustic costs apart).
//! - [`endpoint`]: Kaldi-style endpoint rules on trailing silence.
//! - [`decoder`]: many streams at once (rayon), chunked online decoding, whole utterances.
//! - [`cuda`]: the CUDA backend: the same frame step as kernels (`kernels/decoder.cu`) for a
//!   batch of streams, on a GPU or on the CPU shim, giving the CPU's frames exactly.
//! - [`engine`]: either backend behind one streaming interface.

pub mod booster;
pub mod config;
pub mod context;
pub mod cuda;
pub mod decoder;
pub mod endpoint;
pub mod engine;
pub mod error;
pub mod lattice;
pub mod lm_delta;
pub mod phrase_automaton;
pub mod search;
mod space;
mod tokens;

pub use booster::{ArcSetBooster, Booster, PoolSlot, WordArcIndex, WordBooster};
pub use config::DecoderConfig;
pub use context::{ContextWords, SlotInfo};
pub use cuda::{DeviceScores, GpuDecoder, GpuStats, MAX_BATCH as GPU_MAX_BATCH};
pub use decoder::{decode_utterance, Decoder, SegmentResult, UtteranceResult};
pub use endpoint::EndpointConfig;
pub use engine::Engine;
pub use error::{DecodeError, Result};
pub use lattice::{LatticePath, WlArc, WordLattice};
pub use lm_delta::{BackoffLm, LmDelta};
pub use phrase_automaton::PhraseAutomaton;
pub use search::Stream;
pub use tokens::Partial;

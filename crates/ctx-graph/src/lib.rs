//! Decoding graphs for ctxbench, built on rustfst (docs/design.md §1, §3, §4).
//!
//! - [`lexicon_fst`]: L with Kaldi-style disambiguation symbols (phones or BPE pieces as units).
//! - [`grammar`]: G from an ARPA LM (back-off arcs on `#0`).
//! - [`hmm`]: the monophone HMM topology H and Kaldi-style self-loop insertion.
//! - [`ctc`]: the CTC T topologies "normal" and "compact" (Galvez et al., Fig. 2 and 3).
//! - [`phone_context`]: C, triphone context across word boundaries (H ∘ C ∘ L ∘ G).
//! - [`determinize`]: functional determinization of ε-free transducers (det(H ∘ CLG)).
//! - [`compile`]: HCLG = H ∘ det(L ∘ G) and TLG = T ∘ min(det(L ∘ G)), disambiguation removal.
//! - [`gboost`]: G-boosting (003 §3.1.3): phrase n-grams discounted, missing ones added.
//! - [`biasing`]: the biasing FST of a phrase list (loop state + discounted phrase trie).
//! - [`phrase_arcs`]: the arcs arc-index boosting discounts for a phrase list (000 Algorithm 1).
//! - [`context`]: a stream's open-vocabulary context graph over CTC tokens.
//! - [`labels`]: a CTC model's label list as a TLG's units (spelling words; the blank's column).
//! - [`csr`]: the CSR decoding-graph layout every decoder reads (emitting arcs first).
//! - [`external`]: OpenFst binary graphs from other tools (vector, const) and export of ours.
//! - [`cache`]: an on-disk cache of built graphs keyed by a hash of their inputs.
//! - [`paths`]: enumeration of the output strings of small FSTs (tests and debugging).
//!
//! Label conventions: label 0 is epsilon everywhere. A decoding graph's input label `k > 0` reads
//! column `k - 1` of the acoustic score matrix (a pdf-id for hybrid models, a token id with blank at
//! column 0 for CTC); output labels are word ids of the graph's word table.

pub mod biasing;
pub mod cache;
pub mod compile;
pub mod context;
pub mod csr;
pub mod ctc;
pub mod determinize;
pub mod error;
pub mod external;
pub mod gboost;
pub mod grammar;
pub mod hmm;
pub mod labels;
pub mod lexicon_fst;
pub mod paths;
pub mod phone_context;
pub mod phrase_arcs;

pub use error::{GraphError, Result};
pub use rustfst;

/// The FST type every builder returns: OpenFst's `StdVectorFst`.
pub type StdFst = rustfst::fst_impls::VectorFst<rustfst::semirings::TropicalWeight>;

//! Greedy decoding with NGPU-LM shallow fusion for every end-to-end model type (004 §2.3).
//!
//! Columns: 0 is blank (CTC, transducer) or end of sequence (AED); column `c ≥ 1` is output
//! label `c`, scored by LM label `c − 1` (the LM is built over the model's pieces in id order).
//!
//! - **CTC**: per frame the acoustic argmax decides between three groups: blank, the repeated
//!   (previous) label — both kept, neither scored by the LM, since CTC collapses them — and
//!   "other" labels, among which the label is then chosen by `log p + α·LM` (the previous label
//!   and blank excluded).
//! - **Transducer (RNN-T, TDT)**, two-stage: the blank decision first, on the joint alone; when
//!   it is not blank, the label is the argmax of `log p + α·LM` over the labels. A TDT's duration
//!   comes from its duration head either way.
//! - **AED**: every step `log p(c) + α·LM(c) + β` over the labels and `log p(eos) + α·final` for
//!   end of sequence (the final weight precomputed along back-offs).
//!
//! The insertion bonus β enters where a label competes with something the LM does not score as a
//! label (AED's end of sequence, and beam search); in the two-stage greedy rules every
//! candidate is a label, so a bonus would add the same to all and is not applied.
//!
//! Hypotheses advance in lockstep batches (the GPU shape of 004): each step computes the model
//! output of every active row, then one batched LM query for the rows whose label the LM decides
//! ([`LmQuery::Full`]: the full-vocabulary [`NgramLm::advance`], as 004 does), or per row only the
//! labels that can still win ([`LmQuery::Pruned`]: a label whose acoustic score plus α times the
//! LM's [`NgramLm::score_upper_bound`] falls below the acoustic best's fused score cannot win;
//! the same choice, fewer lookups). Batches run in parallel (rayon). Ties go to the smaller
//! column. With α = 0 the fused choice is the acoustic one, so the output equals plain greedy.
//!
//! With [`Fusion::device`] the full query of each step runs on a device ([`DeviceLm`]), with
//! [`Fusion::device_contexts`] the context trees' too (one rooted query over a [`Forest`] of the
//! decode's trees); scores come back and the choice is made on the host, so the hypotheses are
//! the CPU's bit for bit.

mod checks;
mod contexts;
mod greedy;
mod settings;
mod stage;

pub(crate) use checks::{check_inputs, check_matrices, check_row};
pub use contexts::{Contexts, CtxState, DeviceContexts, UttContext};
pub use greedy::{greedy_aed, greedy_ctc, greedy_transducer};
pub use settings::{Fusion, LmQuery};
pub use stage::argmax;

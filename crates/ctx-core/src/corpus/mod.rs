//! Corpora: Kaldi data directories, Earnings-21/22 `.nlp` transcripts with their sidecars, and
//! Kaldi `text` tables of utterance words.

pub mod earnings;
pub mod kaldi;

pub use earnings::{EarningsDoc, NlpFile, NlpToken, NormCandidate, Normalization, UNTYPED};
pub use kaldi::{read_text_table, resolve_wav, KaldiDataDir, Utterance};

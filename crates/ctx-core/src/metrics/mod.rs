//! Recognition measures (docs/design.md §7): WER with S/D/I and the alignment itself, entity WER
//! (NE-WER), unbiased WER (U-WER), entity accuracy (NE-A), per-class WER and precision/recall/F1
//! of target words, with fstalign-style scoring of Earnings references.
//!
//! The pieces: [`normalize`] (text normalisation), [`mod@reference`] (a reference with entity spans and
//! alternative verbalisations), [`align`] (minimum-edit alignment over such a reference) and
//! [`score`] (the counts and rates).

pub mod align;
pub mod fbai;
pub mod keywords;
pub mod normalize;
pub mod reference;
pub mod score;

pub use align::{align_reference, align_words, EditOp, RefPos, Step};
pub use keywords::KeywordList;
pub use normalize::TextNorm;
pub use reference::{EntityInfo, EntityTable, RefSegment, RefToken, ScoringRef};
pub use score::{
    score_utterance, ErrorCounts, NeInsertions, PrfCounts, ScoreOptions, ScoreTotals, UttScore,
};

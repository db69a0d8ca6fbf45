//! Decoding penalties (001; `ctc-wfst`): a CTC model's blank log-probability lowered, and every
//! emitted word charged — on CTC and hybrid graphs alike (pocketsphinx's `-wip`).

use crate::pipeline::DecodeSettings;

crate::settings_block! {
    /// The CTC penalties (their owner is the family that reads them: see
    /// [`crate::methods::family::owned_by`]).
    pub struct CtcPenalties in "ctc-wfst" {
        /// subtracted from the blank's log-probability on every frame (nats; positive = fewer
        /// blanks, a cure for deletions)
        blank_penalty: f64 = 0.0,
        /// added to the cost of every emitted word, CTC or hybrid graph (graph units; negative =
        /// an insertion bonus; pocketsphinx's -wip 0.65 at -lw 6.5 is ln(1/0.65)/6.5 = 0.066)
        word_insertion_penalty: f64 = 0.0,
    }
}

impl CtcPenalties {
    /// Sets them on decoder settings.
    pub fn apply(&self, settings: &mut DecodeSettings) {
        settings.blank_penalty = self.blank_penalty as f32;
        settings.word_insertion_penalty = self.word_insertion_penalty as f32;
    }
}

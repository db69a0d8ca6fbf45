//! The step interfaces of label-synchronous end-to-end models, what greedy and beam-search
//! decoders (`ngpu-lm`) drive and what simulated or real models provide (`ctx-data`).
//!
//! Columns: 0 is the model's special symbol (blank for a transducer, end of sequence for an
//! attention encoder-decoder), column `i ≥ 1` is output label `i` (a BPE piece id). A CTC model
//! needs no interface: its output is a [`crate::scores::ScoreMatrix`] of the same columns.
//!
//! A model's decoder state (a transducer's prediction network, an AED's decoder) is a `u32` the
//! model hands out and interprets; decoders only carry it along a hypothesis.

/// A transducer (RNN-T, or TDT when [`Transducer::durations`] is not empty): a joint over
/// (encoder frame, prediction state).
pub trait Transducer {
    /// Encoder frames.
    fn frames(&self) -> usize;
    /// Output columns (blank + labels).
    fn width(&self) -> usize;
    /// TDT: the durations (in frames) the duration head predicts over; empty for an RNN-T.
    fn durations(&self) -> &[u32];
    /// The prediction state before any label.
    fn start(&self) -> u32;
    /// The joint at frame `t` and prediction state `state`: log-probabilities of every column into
    /// `labels` (length [`Self::width`]) and, for a TDT, of every duration into `durations`.
    fn joint(&self, t: usize, state: u32, labels: &mut [f32], durations: &mut [f32]);
    /// The prediction state after emitting `label` (≥ 1) at frame `t` from `state`.
    fn next(&self, t: usize, state: u32, label: u32) -> u32;
}

/// An attention encoder-decoder: per step a distribution over the next label given the
/// decoder state, column 0 ending the sequence.
pub trait Aed {
    /// Output columns (end of sequence + labels).
    fn width(&self) -> usize;
    /// The most labels a hypothesis may have (decoding stops there).
    fn max_len(&self) -> usize;
    /// The decoder state before any label.
    fn start(&self) -> u32;
    /// Log-probabilities of every column after the hypothesis that reached `state`.
    fn step(&self, state: u32, out: &mut [f32]);
    /// The decoder state after `label` (≥ 1).
    fn next(&self, state: u32, label: u32) -> u32;
}

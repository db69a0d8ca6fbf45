//! Simulated transducer (RNN-T, TDT) and attention encoder-decoder models (docs/design.md §5; 004),
//! built on the CTC simulator's pieces, near-spelling sets and word confusions, and seen by the
//! decoders only through [`ctx_core::e2e`]. Like every simulator here they see only the
//! reference words of an utterance, are seeded by utterance id, and have their knobs in
//! datasets.toml, one table per model kind (`[<dataset>.acoustic_rnnt]`, `acoustic_tdt`,
//! `acoustic_aed`), calibrated once per dataset and kind.
//!
//! **What the model hears**: the reference pieces with word confusions
//! ([`CtcSim`]'s rule: with probability `confusion`·σ_u/noise, plus the word's rarity extra, a
//! word is heard as the known word nearest in spelling), `R` piece positions in all. Where a
//! confusion changed a piece, the reference piece (paired by edit distance) competes at
//! `confusion_gap` below the heard one: `L + M − gap − 2·late + σ_u z` at a transducer position,
//! `L + M − gap + σ_u z` at an AED step. A position whose heard side is empty (the reference
//! word had more pieces) has only blank and its reference piece (transducer); the AED, one
//! piece per step, drops such positions.
//!
//! **Transducer** (80 ms frames, as FastConformer's 8× subsampling): piece `r` is aligned to frame
//! `a_r` (spread evenly, several pieces may share a frame) and is *due* on frames
//! `a_r .. a_r + span_r + LATE` (span 1 or 2, LATE = 2). The prediction state is the index `p` of
//! the next piece the model expects; the joint at (t, p) looks at the first piece `r ≥ p` still
//! due or ahead (a piece whose window has passed is dropped: a deletion). With `L = ln V`, `M`
//! the margin and z standard normal:
//! - piece `r` due at `t`: piece `L + M − 2·late + σ_u z`, blank `L + M − 5 + σ_u z`, each piece
//!   near it in spelling `L + M − 1 − M·d + σ_u z` (late = frames past its span);
//! - nothing due: blank `L + M + σ_u z`; the next piece leaks `L + M − 3 + σ_u z` on the frame
//!   before it is due;
//! - every other column 0; then log-softmax. Emitting any label from (t, p) moves to `r + 1`.
//!
//! The noise of (t, r) is drawn from a generator keyed by (utterance, t, r), so the joint is a
//! function, as a network's is: greedy and beam search see the same values.
//!
//! **TDT** adds a duration head over {0, 1, 2, 3, 4} frames: the right duration (after a due
//! piece, the frames to the next piece's frame; after blank, the frames to the next due frame,
//! at least 1) at logit 4, the others at −|d − d*|, all plus σ_u z.
//!
//! **AED**: the decoder state is the index `r` of the next reference piece; per step piece `r`
//! at `L + M + σ_u z`, its near pieces at `L + M − 1 − M·d + σ_u z`, the piece after it at
//! `L + M − 4 + σ_u z` (skipping one: a deletion), end of sequence at `L + M − 12 + σ_u z` (a
//! trained AED is sure where a sentence ends); after
//! the last piece end of sequence at `L + M + σ_u z` and the last piece again at
//! `L + M − 4 + σ_u z` (a repetition). Emitting the piece after `r` moves to `r + 2`, any other
//! label to `r + 1` (at most `R`).

use crate::acoustic::{CtcSim, SimError};
use crate::bpe::Bpe;
use crate::registry::CtcAcousticSpec;
pub use crate::registry::E2eKind;
use crate::rng::Rng;
use ctx_core::e2e::{Aed, Transducer};

/// Frames a due piece stays available after its span.
const LATE: u32 = 2;
/// The TDT durations.
const TDT_DURATIONS: [u32; 5] = [0, 1, 2, 3, 4];

/// Key of the (utterance, t, r) noise generator.
fn cell_rng(seed: u64, t: usize, r: usize) -> Rng {
    let mut k = Rng::new(seed ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let a = k.next_u64();
    Rng::new(a ^ (r as u64).wrapping_mul(0xd1b5_4a32_d192_ed03))
}

/// In-place log-softmax.
fn log_softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f32>().ln();
    for x in row.iter_mut() {
        *x -= lse;
    }
}

/// A simulated transducer: RNN-T, or TDT with [`TransducerSim::tdt`].
#[derive(Debug, Clone)]
pub struct TransducerSim {
    base: CtcSim,
    tdt: bool,
    /// Encoder frame shift in seconds (0.08).
    pub frame_s: f64,
}

impl TransducerSim {
    /// An RNN-T (`tdt` false) or TDT simulator over a BPE model's pieces.
    pub fn new(knobs: CtcAcousticSpec, bpe: Bpe, tdt: bool) -> Self {
        Self {
            base: CtcSim::new(knobs, bpe),
            tdt,
            frame_s: 0.08,
        }
    }

    /// The model's internal LM from its training sentences (see [`CtcSim::with_training_text`]).
    pub fn with_training_text<'a>(mut self, sentences: impl IntoIterator<Item = &'a str>) -> Self {
        self.base = self.base.with_training_text(sentences);
        self
    }

    /// The words the model may confuse a word with (see [`CtcSim::with_vocabulary`]).
    pub fn with_vocabulary<'a>(mut self, words: impl IntoIterator<Item = &'a str>) -> Self {
        self.base = self.base.with_vocabulary(words);
        self
    }

    /// The BPE model whose pieces the labels are.
    pub fn bpe(&self) -> &Bpe {
        self.base.bpe()
    }

    /// The model's view of one utterance.
    pub fn simulate(
        &self,
        utt: &str,
        words: &[String],
        duration_s: f64,
    ) -> Result<TransducerUtt<'_>, SimError> {
        let knobs = self.base.knobs();
        let mut rng = Rng::for_key(knobs.seed ^ 0x7472_616e_7364, utt);
        let heard = self.base.heard_tokens(&mut rng, utt, words)?;
        let tokens = heard.tokens;
        let near_penalty = self.base.near_penalties(&tokens);
        let frames = ((duration_s / self.frame_s).round() as usize).max(1);
        let slot = frames as f64 / (tokens.len() + 1) as f64;
        let mut start = Vec::with_capacity(tokens.len());
        let mut end = Vec::with_capacity(tokens.len());
        for i in 0..tokens.len() {
            let a = (((i + 1) as f64 * slot) as usize).min(frames - 1) as u32;
            let span = 1 + rng.chance(0.3) as u32;
            start.push(a);
            end.push(a + span);
        }
        Ok(TransducerUtt {
            sim: self,
            frames,
            tokens,
            reference: heard.reference,
            gap: heard.gap,
            near_penalty,
            start,
            end,
            sigma: heard.sigma,
            seed: rng.next_u64(),
        })
    }
}

/// One utterance as a simulated transducer sees it (implements [`Transducer`]).
#[derive(Debug, Clone)]
pub struct TransducerUtt<'a> {
    sim: &'a TransducerSim,
    frames: usize,
    /// Heard piece per position (0: a confusion left the reference piece out).
    tokens: Vec<u32>,
    /// Reference piece per position where a confusion changed it (0: none).
    reference: Vec<u32>,
    /// Per position, the reference piece's gap below the heard one.
    gap: Vec<f64>,
    /// Per position, the in-domain prior's penalty of each near piece (empty: none).
    near_penalty: Vec<Vec<f64>>,
    start: Vec<u32>,
    end: Vec<u32>,
    sigma: f64,
    seed: u64,
}

impl TransducerUtt<'_> {
    /// The piece ids the model heard (after word confusions).
    pub fn heard(&self) -> Vec<u32> {
        self.tokens.iter().copied().filter(|&x| x != 0).collect()
    }

    /// The first piece `r ≥ p` whose window has not passed at frame `t` (`R` when none).
    fn due(&self, t: usize, p: u32) -> usize {
        let mut r = p as usize;
        while r < self.tokens.len() && t as u32 >= self.end[r] + LATE {
            r += 1;
        }
        r
    }
}

impl Transducer for TransducerUtt<'_> {
    fn frames(&self) -> usize {
        self.frames
    }

    fn width(&self) -> usize {
        self.sim.base.num_tokens()
    }

    fn durations(&self) -> &[u32] {
        if self.sim.tdt {
            &TDT_DURATIONS
        } else {
            &[]
        }
    }

    fn start(&self) -> u32 {
        0
    }

    fn joint(&self, t: usize, state: u32, labels: &mut [f32], durations: &mut [f32]) {
        let r = self.due(t, state);
        let m = self.sim.base.knobs().margin;
        let top = (labels.len() as f64).ln() + m;
        let sigma = self.sigma;
        let mut rng = cell_rng(self.seed, t, r);
        let mut g = |base: f64| (base + sigma * rng.normal()) as f32;
        labels.fill(0.0);
        let due_now = r < self.tokens.len() && t as u32 >= self.start[r];
        // Due, and a piece was heard there (not a reference piece a confusion left out).
        let speaks = due_now && self.tokens[r] != 0;
        let late = if due_now {
            (t as u32 + 1).saturating_sub(self.end[r]) as f64
        } else {
            0.0
        };
        if speaks {
            let x = self.tokens[r] as usize;
            labels[x] = g(top - 2.0 * late);
            labels[0] = g(top - 5.0);
            let penalty = self.near_penalty.get(r).map_or(&[][..], Vec::as_slice);
            for (k, &(j, d)) in self.sim.base.near()[x - 1].iter().enumerate() {
                let prior = penalty.get(k).copied().unwrap_or(0.0);
                labels[j + 1] = g(top - 1.0 - m * d - prior);
            }
        } else {
            labels[0] = g(top);
            if r < self.tokens.len() && t as u32 + 1 == self.start[r] && self.tokens[r] != 0 {
                let x = self.tokens[r] as usize;
                labels[x] = g(top - 3.0);
            }
        }
        if due_now && self.reference[r] != 0 {
            let y = self.reference[r] as usize;
            labels[y] = labels[y].max(g(top - self.gap[r] - 2.0 * late));
        }
        log_softmax(labels);
        if self.sim.tdt && !durations.is_empty() {
            // The right jump: after a due piece, to the next piece's frame; after blank, to the
            // next due frame (at least one frame).
            let d_star = if speaks {
                match self.start.get(r + 1) {
                    Some(&a) => a.saturating_sub(t as u32).min(4),
                    None => 1,
                }
            } else {
                match self.start.get(r) {
                    Some(&a) => a.saturating_sub(t as u32).clamp(1, 4),
                    None => 4,
                }
            };
            for (k, o) in durations.iter_mut().enumerate() {
                let d = TDT_DURATIONS[k];
                let base = if d == d_star {
                    4.0
                } else {
                    -(d.abs_diff(d_star) as f64)
                };
                *o = g(base);
            }
            log_softmax(durations);
        }
    }

    fn next(&self, t: usize, state: u32, _label: u32) -> u32 {
        let r = self.due(t, state);
        (r + 1).min(self.tokens.len()) as u32
    }
}

/// A simulated attention encoder-decoder.
#[derive(Debug, Clone)]
pub struct AedSim {
    base: CtcSim,
}

impl AedSim {
    /// An AED simulator over a BPE model's pieces.
    pub fn new(knobs: CtcAcousticSpec, bpe: Bpe) -> Self {
        Self {
            base: CtcSim::new(knobs, bpe),
        }
    }

    /// The model's internal LM from its training sentences (see [`CtcSim::with_training_text`]).
    pub fn with_training_text<'a>(mut self, sentences: impl IntoIterator<Item = &'a str>) -> Self {
        self.base = self.base.with_training_text(sentences);
        self
    }

    /// The words the model may confuse a word with (see [`CtcSim::with_vocabulary`]).
    pub fn with_vocabulary<'a>(mut self, words: impl IntoIterator<Item = &'a str>) -> Self {
        self.base = self.base.with_vocabulary(words);
        self
    }

    /// The BPE model whose pieces the labels are.
    pub fn bpe(&self) -> &Bpe {
        self.base.bpe()
    }

    /// The model's view of one utterance.
    pub fn simulate(&self, utt: &str, words: &[String]) -> Result<AedUtt<'_>, SimError> {
        let knobs = self.base.knobs();
        let mut rng = Rng::for_key(knobs.seed ^ 0x0061_6564, utt);
        let heard = self.base.heard_tokens(&mut rng, utt, words)?;
        // The decoder emits one piece per step: a reference piece a confusion left out has no
        // step of its own; the others compete at their heard counterpart's step.
        let kept: Vec<(u32, u32, f64)> = heard
            .tokens
            .iter()
            .zip(&heard.reference)
            .zip(&heard.gap)
            .filter(|((&h, _), _)| h != 0)
            .map(|((&h, &r), &g)| (h, r, g))
            .collect();
        let tokens = kept.iter().map(|k| k.0).collect();
        let reference = kept.iter().map(|k| k.1).collect();
        let gap = kept.iter().map(|k| k.2).collect();
        Ok(AedUtt {
            sim: self,
            tokens,
            reference,
            gap,
            sigma: heard.sigma,
            seed: rng.next_u64(),
        })
    }
}

/// One utterance as a simulated AED sees it (implements [`Aed`]).
#[derive(Debug, Clone)]
pub struct AedUtt<'a> {
    sim: &'a AedSim,
    tokens: Vec<u32>,
    /// Reference piece per step where a confusion changed it (0: none).
    reference: Vec<u32>,
    /// Per position, the reference piece's gap below the heard one.
    gap: Vec<f64>,
    sigma: f64,
    seed: u64,
}

impl AedUtt<'_> {
    /// The piece ids the model heard (after word confusions).
    pub fn heard(&self) -> Vec<u32> {
        self.tokens.clone()
    }
}

impl Aed for AedUtt<'_> {
    fn width(&self) -> usize {
        self.sim.base.num_tokens()
    }

    fn max_len(&self) -> usize {
        2 * self.tokens.len() + 10
    }

    fn start(&self) -> u32 {
        0
    }

    fn step(&self, state: u32, out: &mut [f32]) {
        let r = state as usize;
        let m = self.sim.base.knobs().margin;
        let top = (out.len() as f64).ln() + m;
        let sigma = self.sigma;
        let mut rng = cell_rng(self.seed, 0, r);
        let mut g = |base: f64| (base + sigma * rng.normal()) as f32;
        out.fill(0.0);
        let n = self.tokens.len();
        if r < n {
            let x = self.tokens[r] as usize;
            out[x] = g(top);
            for &(j, d) in &self.sim.base.near()[x - 1] {
                out[j + 1] = g(top - 1.0 - m * d);
            }
            if let Some(&y) = self.tokens.get(r + 1) {
                let y = y as usize;
                if y != x {
                    out[y] = out[y].max(g(top - 4.0));
                }
            }
            out[0] = g(top - 12.0);
            if self.reference[r] != 0 {
                let y = self.reference[r] as usize;
                out[y] = out[y].max(g(top - self.gap[r]));
            }
        } else {
            out[0] = g(top);
            if let Some(&y) = self.tokens.last() {
                out[y as usize] = g(top - 4.0);
            }
        }
        log_softmax(out);
    }

    fn next(&self, state: u32, label: u32) -> u32 {
        let r = state as usize;
        let n = self.tokens.len();
        let skip = r + 1 < n && label == self.tokens[r + 1] && label != self.tokens[r];
        (if skip { r + 2 } else { r + 1 }).min(n) as u32
    }
}

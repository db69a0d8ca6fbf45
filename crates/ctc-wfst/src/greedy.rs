//! Greedy (best-path) CTC decoding — the argmax of every frame, repeats collapsed, blanks
//! removed — and the shape of a model's posteriors, by which a simulated CTC model is checked
//! against what real ones look like (docs/design.md §5: blank the argmax on most frames, peaky).

use ctx_core::scores::ScoreMatrix;

/// The greedy token sequence (score columns, blank removed) of log-probabilities `m`; ties go to
/// the smaller column.
pub fn greedy_tokens(m: &ScoreMatrix, blank: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut prev = u32::MAX;
    for t in 0..m.rows() {
        let row = m.row(t);
        let mut best = 0u32;
        for (c, &x) in row.iter().enumerate() {
            if x > row[best as usize] {
                best = c as u32;
            }
        }
        if best != blank && best != prev {
            out.push(best);
        }
        prev = best;
    }
    out
}

/// Posterior statistics over frames of one or many utterances.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PosteriorShape {
    /// Frames seen.
    pub frames: u64,
    /// Frames whose argmax is blank.
    pub blank_argmax: u64,
    /// Sum over frames of the largest posterior.
    pub sum_max_prob: f64,
    /// Sum over frames of the entropy (nats).
    pub sum_entropy: f64,
}

impl PosteriorShape {
    /// Adds the frames of `m`.
    pub fn add(&mut self, m: &ScoreMatrix, blank: u32) {
        for t in 0..m.rows() {
            let row = m.row(t);
            let (mut best, mut max) = (0usize, f32::NEG_INFINITY);
            let mut h = 0.0f64;
            for (c, &x) in row.iter().enumerate() {
                if x > max {
                    (best, max) = (c, x);
                }
                let p = (x as f64).exp();
                if p > 0.0 {
                    h -= p * x as f64;
                }
            }
            self.frames += 1;
            self.blank_argmax += (best == blank as usize) as u64;
            self.sum_max_prob += (max as f64).exp();
            self.sum_entropy += h;
        }
    }

    /// Share of frames whose argmax is blank (0–1).
    pub fn blank_share(&self) -> f64 {
        self.blank_argmax as f64 / self.frames.max(1) as f64
    }

    /// Mean largest posterior (1 = perfectly peaky).
    pub fn mean_max_prob(&self) -> f64 {
        self.sum_max_prob / self.frames.max(1) as f64
    }

    /// Mean entropy per frame in nats.
    pub fn mean_entropy(&self) -> f64 {
        self.sum_entropy / self.frames.max(1) as f64
    }
}

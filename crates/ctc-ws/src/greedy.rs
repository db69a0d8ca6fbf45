//! The greedy CTC alignment both the spotter and the merge read: each frame's argmax label,
//! repeats merged and blanks dropped, with the frames and scores of each label's run.

use ctx_core::scores::ScoreMatrix;

/// The greedy labels of `lp` (each frame's argmax, the first on ties; repeats merged, blanks
/// dropped), each with the last frame of its run and its log-probabilities summed over the run.
pub(crate) fn aligned_tokens(lp: &ScoreMatrix, blank: u32) -> Vec<(u32, usize, f32)> {
    let mut out: Vec<(u32, usize, f32)> = Vec::new();
    let mut prev = None;
    for t in 0..lp.rows() {
        let row = lp.row(t);
        let mut best = 0usize;
        for (c, &x) in row.iter().enumerate() {
            if x > row[best] {
                best = c;
            }
        }
        let label = best as u32;
        if label != blank {
            let mut score = row[best];
            if prev == Some(label) {
                score += out.pop().expect("a repeat follows its label").2;
            }
            out.push((label, t, score));
        }
        prev = Some(label);
    }
    out
}

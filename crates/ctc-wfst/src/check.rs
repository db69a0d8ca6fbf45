//! What a CTC model's outputs and a TLG must satisfy before decoding; each violation is an
//! error naming the utterance and frame, never a silently wrong figure.

use crate::error::{CtcError, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::csr::DecodingGraph;

/// Checks that every row is a log-probability distribution: |log Σ exp(row)| ≤ `tol`. Logits
/// or probabilities given by mistake fail here instead of decoding to nonsense.
///
/// The check runs on every row of every utterance, so it uses a vectorisable exp (relative
/// error below 1e-5, far inside any useful `tol`): with libm's exp it cost as much as the
/// search itself.
pub fn check_normalised(utt: &str, m: &ScoreMatrix, tol: f64) -> Result<()> {
    if tol <= 0.0 {
        return Ok(());
    }
    for t in 0..m.rows() {
        let row = m.row(t);
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = if max.is_finite() {
            // Eight running sums so the loop vectorises (f32 addition is not reassociated).
            let mut acc = [0.0f32; 8];
            let chunks = row.chunks_exact(8);
            let tail: f32 = chunks.remainder().iter().map(|&x| fast_exp(x - max)).sum();
            for c in chunks {
                for (a, &x) in acc.iter_mut().zip(c) {
                    *a += fast_exp(x - max);
                }
            }
            let sum = acc.iter().sum::<f32>() + tail;
            max as f64 + (sum as f64).ln()
        } else {
            f64::NAN
        };
        if lse.is_nan() || lse.abs() > tol {
            return Err(CtcError::NotNormalised {
                utt: utt.to_string(),
                frame: t,
                lse,
                tol,
            });
        }
    }
    Ok(())
}

/// exp(x) for x ≤ 0 (smaller than −87 gives 0), branch-free so a loop over a row vectorises:
/// 2^(x·log2 e) split into an integer power (exponent bits) and a fraction in (−1, 0] by a
/// degree-7 polynomial.
#[inline]
fn fast_exp(x: f32) -> f32 {
    let y = x.max(-87.0) * std::f32::consts::LOG2_E;
    let n = y as i32; // truncates toward zero: y − n in (−1, 0]
    let f = y - n as f32;
    // Taylor series of 2^f = e^(f ln 2), |f| < 1, to degree 7: relative error below
    // (ln 2)^8 / 8! ≈ 1.3e-6.
    let l = std::f32::consts::LN_2;
    let z = f * l;
    let p = 1.0
        + z * (1.0
            + z * (0.5
                + z * (1.0 / 6.0
                    + z * (1.0 / 24.0
                        + z * (1.0 / 120.0 + z * (1.0 / 720.0 + z * (1.0 / 5040.0)))))));
    p * f32::from_bits(((n + 127).max(0) as u32) << 23)
}

/// Checks that the scores have one column per token of tokens.txt (blank included).
pub fn check_width(utt: &str, m: &ScoreMatrix, num_tokens: usize) -> Result<()> {
    if m.cols() != num_tokens {
        return Err(CtcError::Width {
            utt: utt.to_string(),
            cols: m.cols(),
            tokens: num_tokens,
        });
    }
    Ok(())
}

/// Checks that the graph is a CTC graph for blank column `blank`: from the start state (or a
/// state its ε arcs reach) a self-loop reads the blank, so leading and separating blanks can be
/// consumed. Both topologies have one (normal: the "after blank" state; compact: the loop
/// state); a graph built for another blank column, or an HCLG, has none.
pub fn check_topology(g: &DecodingGraph, blank: u32) -> Result<()> {
    let label = blank + 1;
    let mut seen = vec![false; g.num_states()];
    let mut todo = vec![g.start];
    while let Some(s) = todo.pop() {
        if std::mem::replace(&mut seen[s as usize], true) {
            continue;
        }
        if g.emitting(s)
            .any(|a| g.ilabel[a] == label && g.next[a] == s)
        {
            return Ok(());
        }
        todo.extend(g.non_emitting(s).map(|a| g.next[a]));
    }
    Err(CtcError::Topology(format!(
        "no blank self-loop (input label {label}, score column {blank}) at the start state or the states its ε arcs reach: not a CTC graph for this blank, or built with another token numbering"
    )))
}

#[cfg(test)]
mod tests {
    use super::fast_exp;

    #[test]
    fn fast_exp_is_exp_within_one_part_in_a_hundred_thousand() {
        let mut x = 0.0f32;
        while x > -80.0 {
            let (a, b) = (fast_exp(x) as f64, (x as f64).exp());
            assert!((a - b).abs() <= 1e-5 * b, "exp({x}) = {b}, fast {a}");
            x -= 0.013;
        }
        assert!(fast_exp(-1000.0) < 1e-37);
        assert_eq!(fast_exp(0.0), 1.0);
    }
}

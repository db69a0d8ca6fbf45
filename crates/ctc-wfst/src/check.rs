//! What a CTC model's outputs and a TLG must satisfy before decoding; each violation is an
//! error naming the utterance and frame, never a silently wrong figure.

use crate::error::{CtcError, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::csr::DecodingGraph;

/// Checks that every row is a log-probability distribution: |log Σ exp(row)| ≤ `tol`. Logits
/// or probabilities given by mistake fail here instead of decoding to nonsense.
pub fn check_normalised(utt: &str, m: &ScoreMatrix, tol: f64) -> Result<()> {
    if tol <= 0.0 {
        return Ok(());
    }
    for t in 0..m.rows() {
        let row = m.row(t);
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let lse = max
            + row
                .iter()
                .map(|&x| (x as f64 - max).exp())
                .sum::<f64>()
                .ln();
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

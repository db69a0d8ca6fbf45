//! The most effects any result could bring within ×2 of the paper's: where a paper reports one
//! method on several of its own data sets (004: SLURP, SPGI, WSJ) each of our effects is compared
//! with each of them, and a paper's effects that differ by more than ×4 cannot all be within ×2
//! of one value of ours. The report prints this bound beside the count, so a reader sees which
//! misses no simulator could remove.

use super::effect::{Columns, Effect};
use std::collections::BTreeMap;

/// (experiment, section, row, our block, spoken, measure): one value of ours.
type RowKey<'a> = (&'a str, &'a str, &'a str, &'a str, bool, &'a str);

/// `e` with our change set to `c` (points, or percent for speed), the baseline kept.
fn with_change(e: &Effect, c: f64) -> Effect {
    let base = e.ours.0;
    let row = if e.is_speed() {
        base * (1.0 + c / 100.0)
    } else {
        base + c
    };
    Effect {
        ours: (base, row),
        ..e.clone()
    }
}

/// The largest number of `effects` within ×2 of the paper's that any one change of ours per
/// (experiment, section, row, our block, columns, measure) could reach: the paper's blocks of a
/// row compete for the one value ours takes.
///
/// ```
/// use ctxbench::fidelity::{ceiling::x2_ceiling, Columns, Effect};
/// let mk = |paper_group: &str, paper_row: f64| Effect {
///     experiment: "x".into(), section: String::new(), row: "LM".into(), group: "A".into(),
///     columns: Columns::Simulated, paper_group: paper_group.into(), measure: "wer".into(),
///     ours: (15.0, 12.0), paper: (20.0, paper_row), cause: String::new(),
/// };
/// // −2.1 and −0.5: no change of ours is within ×2 of both.
/// assert_eq!(x2_ceiling(&[mk("SLURP", 17.9), mk("SPGI", 19.5)]), 1);
/// // −2.0 and −1.0: −1.4 is within ×2 of both.
/// assert_eq!(x2_ceiling(&[mk("SLURP", 18.0), mk("SPGI", 19.0)]), 2);
/// ```
pub fn x2_ceiling<'a>(effects: impl IntoIterator<Item = &'a Effect>) -> usize {
    let mut rows: BTreeMap<RowKey<'_>, Vec<&Effect>> = BTreeMap::new();
    for e in effects {
        let key = (
            e.experiment.as_str(),
            e.section.as_str(),
            e.row.as_str(),
            e.group.as_str(),
            e.columns == Columns::Spoken,
            e.measure.as_str(),
        );
        rows.entry(key).or_default().push(e);
    }
    rows.values()
        .map(|blocks| {
            // Where the count can change: no move, and each paper change at ×½, ×1, ×2 and at
            // the geometric middle of every pair (the widest overlap of two ×2 windows).
            let papers: Vec<f64> = blocks.iter().map(|e| e.paper_change()).collect();
            let mut candidates = vec![0.0];
            for &p in &papers {
                candidates.extend([0.5 * p, p, 2.0 * p]);
                for &q in &papers {
                    if p * q > 0.0 {
                        candidates.push(p.signum() * (p * q).sqrt());
                    }
                }
            }
            candidates
                .iter()
                .map(|&c| {
                    blocks
                        .iter()
                        .filter(|e| with_change(e, c).within_x2())
                        .count()
                })
                .max()
                .unwrap_or(0)
        })
        .sum()
}

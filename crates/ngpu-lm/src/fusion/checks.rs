//! Checks of a fused decode's inputs: settings against each model's width, finite values;
//! errors name the utterance.

use super::settings::*;
use crate::error::{NgpuError, Result};
use ctx_core::scores::ScoreMatrix;

/// Checks the settings (also with no utterances), each utterance's model width, and the
/// contexts; errors name the utterance.
pub(crate) fn check_inputs(f: &Fusion, widths: impl ExactSizeIterator<Item = usize>) -> Result<()> {
    f.check_settings()?;
    let n = widths.len();
    let mut first = None;
    for (i, w) in widths.enumerate() {
        f.check(w).map_err(|e| utt_error(i, e))?;
        first.get_or_insert(w);
    }
    match first {
        Some(w) => f.contexts.check(n, w)?,
        None => return Ok(()),
    }
    if let Some(dc) = f.device_contexts {
        let dc = dc.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..n {
            for t in f.contexts.get(i).trees().into_iter().flatten() {
                dc.root_of(t).map_err(|e| utt_error(i, e))?;
            }
        }
    }
    Ok(())
}

/// Checks CTC score matrices: settings against their width, and every value finite (a NaN
/// would make every comparison false and the argmax meaningless).
pub(crate) fn check_matrices(mats: &[&ScoreMatrix], f: &Fusion) -> Result<()> {
    check_inputs(f, mats.iter().map(|m| m.cols()))?;
    for (i, m) in mats.iter().enumerate() {
        if !ctx_core::scores::all_finite(m.data()) {
            let t = (0..m.rows())
                .find(|&t| m.row(t).iter().any(|x| !x.is_finite()))
                .unwrap_or(0);
            return Err(NgpuError::Model(format!(
                "utterance {i}: frame {t} has a log-probability that is NaN or infinite"
            )));
        }
    }
    Ok(())
}

/// Checks one model output row (transducer joint, AED step).
pub(crate) fn check_row(row: &[f32], utt: usize, what: &str) -> Result<()> {
    if ctx_core::scores::all_finite(row) {
        Ok(())
    } else {
        Err(NgpuError::Model(format!(
            "utterance {utt}: the model's {what} has a log-probability that is NaN or infinite"
        )))
    }
}

pub(super) fn utt_error(i: usize, e: NgpuError) -> NgpuError {
    match e {
        NgpuError::Invalid(m) => NgpuError::Invalid(format!("utterance {i}: {m}")),
        other => other,
    }
}

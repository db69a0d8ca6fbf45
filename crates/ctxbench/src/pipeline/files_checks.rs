//! A files dataset's checks (a registry entry of Kaldi or riva files: scores, graph, words,
//! maps): its settings, the map from graph labels to score columns, which utterances have
//! scores, and scores that look like another model kind's.

use anyhow::{bail, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_data::dataset::Dataset;

/// Refuses a files entry's settings that cannot decode: a frame shift or acoustic scale out of
/// range, static G-boosting (no G or lexicon to recompile HCLG from).
pub(crate) fn check_files_settings(
    name: &str,
    f: &ctx_data::registry::FilesSpec,
    static_gboost: bool,
) -> Result<()> {
    if let Some(fs) = f.frame_shift_s.filter(|fs| !(fs.is_finite() && *fs > 0.0)) {
        bail!(
            "dataset {name}: frame shift {fs} (frame_shift_s, or decode's --frame-shift): \
         seconds per score row, a finite number above 0"
        );
    }
    // Kaldi's scales are 0.05–1; past 100 the scaled scores swamp the graph's costs and
    // f32 path costs lose them (1e30 gave WER 182 without a word).
    if let Some(a) = f
        .acoustic_scale
        .filter(|a| !(a.is_finite() && *a > 0.0 && *a <= 100.0))
    {
        bail!(
            "dataset {name}: acoustic scale {a} (acoustic_scale, or decode's \
         --acoustic-scale): a number above 0 and at most 100"
        );
    }
    if static_gboost {
        bail!("dataset {name}: static G-boosting recompiles HCLG from G and the lexicon, which a files dataset does not have; use --gboost-mode on-the-fly");
    }
    Ok(())
}

/// The map from the graph's input labels to score columns (a transition model, a pdf map or a
/// label map: at most one) and the score width it implies.
pub(crate) fn label_map_of(
    name: &str,
    f: &ctx_data::registry::FilesSpec,
    path: &dyn Fn(&str) -> std::path::PathBuf,
) -> Result<(Option<Vec<u32>>, Option<usize>)> {
    use ctx_data::registry::ModelKind;
    let maps = [&f.transition_model, &f.pdf_map, &f.label_map]
        .iter()
        .filter(|m| m.is_some())
        .count();
    if maps > 1 {
        bail!("dataset {name}: give one of transition_model, pdf_map and label_map");
    }
    let mut width = None;
    let label_map: Option<Vec<u32>> = if let Some(p) = &f.transition_model {
        let tm = ctx_core::transition::TransitionModel::read(&path(p))?;
        width = Some(tm.num_pdfs());
        Some(tm.pdf_of_transition_ids())
    } else if let Some(p) = &f.pdf_map {
        width = f.score_columns;
        Some(ctx_core::transition::read_pdf_map(&path(p))?)
    } else if let Some(p) = &f.label_map {
        Some(ctx_core::transition::read_pdf_map(&path(p))?)
    } else {
        if f.model == ModelKind::Hybrid {
            width = f.score_columns;
        }
        None
    };
    if f.transition_model.is_some() && f.score_columns.is_some() {
        bail!(
            "dataset {name}: score_columns is the transition model's pdf count; give one of them"
        );
    }
    Ok((label_map, width))
}

/// Keeps the utterances of `dataset` that `table` has scores for, and says (or, strict,
/// refuses) what does not match: scores naming no utterance, utterances without scores or
/// without a list; returns the ids left out. No utterance left is an error.
pub(crate) fn keep_scored(
    name: &str,
    f: &ctx_data::registry::FilesSpec,
    dataset: &mut Dataset,
    table: &ctx_core::score_table::ScoreTable,
) -> Result<Vec<String>> {
    let mut missing_scores = Vec::new();
    dataset.utterances.retain(|u| {
        let has = table.contains(&u.id);
        if !has {
            missing_scores.push(u.id.clone());
        }
        has
    });
    // Scores for utterances `text` does not have: decoded by nobody, so said (a stray file
    // or an archive of another set shows up here).
    let known: std::collections::HashSet<&str> =
        dataset.utterances.iter().map(|u| u.id.as_str()).collect();
    let stray: Vec<&String> = table
        .ids()
        .iter()
        .filter(|i| !known.contains(i.as_str()))
        .collect();
    if !stray.is_empty() {
        let msg = format!(
            "{} score entr(y/ies) of {} name no utterance of {}/text (first: {})",
            stray.len(),
            f.scores,
            f.data,
            stray[0]
        );
        if f.strict {
            bail!("{msg}; strict = true refuses them");
        }
        eprintln!("warning: {msg}; they are not decoded");
    }
    // Per-utterance lists that leave utterances out: those decode unbiased, which a figure
    // of a biased row should not hide.
    if let Some(b) = &f.bias_utt {
        let unlisted: Vec<&str> = dataset
            .utterances
            .iter()
            .filter(|u| !dataset.lists.contains_key(&u.id))
            .map(|u| u.id.as_str())
            .collect();
        if !unlisted.is_empty() {
            eprintln!(
                "warning: {} utterance(s) of {}/text have no list in {b} (first: {}): \
                 they decode unbiased in every biased row",
                unlisted.len(),
                f.data,
                unlisted[0]
            );
        }
    }
    if !missing_scores.is_empty() {
        let msg = format!(
            "{} utterance(s) of {}/text have no scores in {} (first: {})",
            missing_scores.len(),
            f.data,
            f.scores,
            missing_scores[0]
        );
        if f.strict {
            bail!("{msg}; strict = true refuses to leave them out");
        }
        eprintln!("warning: {msg}; they are left out of every figure");
    }
    if dataset.utterances.is_empty() {
        bail!(
            "dataset {name}: no utterance of {}/text has scores in {}",
            f.data,
            f.scores
        );
    }
    Ok(missing_scores)
}

/// Warns when a hybrid entry's scores look like a CTC model's (every row a distribution, one
/// column best on most frames, like a blank): they would decode to nonsense without a word.
pub(crate) fn warn_ctc_like(
    f: &ctx_data::registry::FilesSpec,
    table: &ctx_core::score_table::ScoreTable,
    first: &str,
) -> Result<()> {
    if let Some((col, share)) = table.get(first)?.as_ref().and_then(ctc_like) {
        eprintln!(
            "warning: {}: the scores look like a CTC model's (utterance {first}: every row \
             is a log-probability distribution and column {col} is the best in {:.0}% of \
             frames, like a blank); decode them with --model ctc (model = \"ctc\" in a \
             registry entry)",
            f.scores,
            100.0 * share
        );
    }
    Ok(())
}

/// Whether a score matrix looks like a CTC model's output: every row a log-probability
/// distribution (log-sum-exp within 0.01 of 0) and one column the best in at least half of the
/// frames (a blank). Hybrid models give pdf log-likelihoods (rows not normalised) whose silence
/// spreads over several pdfs. Returns that column and its share of the frames.
pub(crate) fn ctc_like(m: &ScoreMatrix) -> Option<(usize, f64)> {
    if m.rows() == 0 || m.cols() < 2 {
        return None;
    }
    let mut best = vec![0usize; m.cols()];
    for t in 0..m.rows() {
        let row = m.row(t);
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = max as f64
            + row
                .iter()
                .map(|&x| ((x - max) as f64).exp())
                .sum::<f64>()
                .ln();
        if lse.is_nan() || lse.abs() > 0.01 {
            return None;
        }
        let arg = row
            .iter()
            .enumerate()
            .fold(0, |b, (i, &x)| if x > row[b] { i } else { b });
        best[arg] += 1;
    }
    let (col, n) = best
        .iter()
        .enumerate()
        .max_by_key(|&(i, &n)| (n, std::cmp::Reverse(i)))?;
    let share = *n as f64 / m.rows() as f64;
    (share >= 0.5).then_some((col, share))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of log-probabilities over 4 columns, `blank` the best on the first `k` of `n` rows.
    fn ctc(n: usize, k: usize) -> ScoreMatrix {
        let mut data = Vec::new();
        for t in 0..n {
            let hot = if t < k { 0 } else { 1 + t % 3 };
            for c in 0..4 {
                data.push(if c == hot { 0.7f32.ln() } else { 0.1f32.ln() });
            }
        }
        ScoreMatrix::new(n, 4, data).unwrap()
    }

    #[test]
    fn ctc_like_tells_blank_dominated_log_probabilities_from_hybrid_scores() {
        assert_eq!(
            ctc_like(&ctc(10, 7)).map(|(c, s)| (c, (s * 10.0).round())),
            Some((0, 7.0))
        );
        // Normalised, but no column dominates.
        assert_eq!(ctc_like(&ctc(10, 4)), None);
        // Dominated, but not normalised (pdf log-likelihoods).
        let mut m = ctc(10, 7);
        m.row_mut(3)[2] += 1.0;
        assert_eq!(ctc_like(&m), None);
    }
}

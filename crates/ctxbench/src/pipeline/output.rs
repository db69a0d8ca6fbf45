//! From a decode to an output: the 1-best (or lattice-biased 1-best) with word times, scored;
//! lattice figures (density, oracle WER, active tokens).

use crate::pipeline::lists::ListKind;
use crate::pipeline::search::DecodeRun;
use crate::pipeline::setup::Setup;
use crate::pipeline::utterance_lists::list_of;
use anyhow::{anyhow, Result};
use ctx_core::metrics::score::ScoreTotals;
use ctx_data::dataset::Dataset;
use ctx_graph::biasing::build_biasing_fst;
use lattice_rescorer::{biased_best_path, prefix_biased_best_path, PhraseIds, PhraseReport};
use std::collections::BTreeSet;
use std::time::Instant;
use wfst_search::PhraseAutomaton;

/// Lattice biasing of every segment of every utterance; returns the hypotheses, the phrase
/// report and the seconds spent.
pub fn lattice_bias(
    setup: &Setup,
    run: &DecodeRun,
    kind: &ListKind,
    discount: f32,
) -> Result<(Vec<Vec<String>>, PhraseReport, f64)> {
    let (timed, report, secs) = lattice_bias_timed(setup, run, kind, discount)?;
    let hyps = timed
        .iter()
        .map(|t| run.words(setup, &t.iter().map(|w| w.word).collect::<Vec<_>>()))
        .collect();
    Ok((hyps, report, secs))
}

/// A hypothesis word with its time in the utterance (CTM).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedWord {
    /// Word id.
    pub word: u32,
    /// Start in seconds from the utterance start.
    pub start_s: f64,
    /// Duration in seconds.
    pub dur_s: f64,
}

fn timed_path(
    setup: &Setup,
    seg: &wfst_search::SegmentResult,
    path: &wfst_search::LatticePath,
) -> Vec<TimedWord> {
    timed_words(setup.frame_s, seg, path)
}

/// The words of `path` (a path through segment `seg`) with their times, `frame_s` seconds per
/// score row.
pub fn timed_words(
    frame_s: f64,
    seg: &wfst_search::SegmentResult,
    path: &wfst_search::LatticePath,
) -> Vec<TimedWord> {
    let ends = path.end_rows(seg.rows as u32);
    // Every word is kept even if a path carried no times (then it spans the segment).
    path.words
        .iter()
        .enumerate()
        .map(|(i, &word)| {
            let s = path.start_rows.get(i).copied().unwrap_or(0);
            let e = ends.get(i).copied().unwrap_or(seg.rows as u32);
            TimedWord {
                word,
                start_s: (seg.start_row + s as u64) as f64 * frame_s,
                dur_s: e.saturating_sub(s) as f64 * frame_s,
            }
        })
        .collect()
}

/// The Viterbi best paths with word times.
pub fn best_timed(setup: &Setup, run: &DecodeRun) -> Vec<Vec<TimedWord>> {
    run.results
        .iter()
        .map(|r| {
            r.segments
                .iter()
                .flat_map(|seg| timed_path(setup, seg, &seg.best))
                .collect()
        })
        .collect()
}

/// [`lattice_bias`] with the word times of each rescored path.
pub fn lattice_bias_timed(
    setup: &Setup,
    run: &DecodeRun,
    kind: &ListKind,
    discount: f32,
) -> Result<(Vec<Vec<TimedWord>>, PhraseReport, f64)> {
    crate::pipeline::lists::require_named(&setup.dataset, kind)?;
    let t = Instant::now();
    let mut report = PhraseReport::default();
    let mut hyps = Vec::with_capacity(run.results.len());
    for (u, r) in setup.dataset.utterances.iter().zip(&run.results) {
        let ids = PhraseIds::new(&list_of(setup, u, kind), &setup.graph.symbols.words);
        report.add(&ids.report);
        // A boost (discount ≤ 0) composes with the phrase-prefix automaton, the biasing FST's
        // deterministic equivalent (one build per utterance, no closures); a penalty with the
        // FST itself.
        let automaton = if discount <= 0.0 && !ids.is_empty() {
            Some(PhraseAutomaton::new(&ids.phrases, discount)?)
        } else {
            None
        };
        let mut words = Vec::new();
        for seg in &r.segments {
            let lat = seg
                .lattice
                .as_ref()
                .ok_or_else(|| anyhow!("{}: lattice biasing needs lattices", u.id))?;
            if ids.is_empty() {
                words.extend(timed_path(setup, seg, &seg.best));
                continue;
            }
            let best = match &automaton {
                Some(a) => prefix_biased_best_path(lat, a),
                None => {
                    let mut vocab: Vec<u32> = lat.arcs.iter().map(|a| a.word).collect();
                    vocab.extend(ids.phrases.iter().flatten().copied());
                    vocab.sort_unstable();
                    vocab.dedup();
                    biased_best_path(lat, &build_biasing_fst(&vocab, &ids.phrases, discount)?)
                }
            };
            match best {
                Some(p) => words.extend(timed_path(setup, seg, &p.path)),
                None => words.extend(timed_path(setup, seg, &seg.best)),
            }
        }
        hyps.push(words);
    }
    Ok((hyps, report, t.elapsed().as_secs_f64()))
}

/// The 1-best hypotheses of a run.
pub fn best_hyps(setup: &Setup, run: &DecodeRun) -> Vec<Vec<String>> {
    run.results
        .iter()
        .map(|r| run.words(setup, &r.words()))
        .collect()
}

/// One scored output of a decoding run: the 1-best, or the 1-best after lattice biasing.
pub struct Output {
    /// Hypotheses in dataset order.
    pub hyps: Vec<Vec<String>>,
    /// The same words with their times (CTM).
    pub timed: Vec<Vec<TimedWord>>,
    /// Their scores.
    pub totals: ScoreTotals,
    /// Seconds spent rescoring (0 for the 1-best).
    pub rescore_s: f64,
    /// Phrases kept/dropped by lattice biasing.
    pub report: Option<PhraseReport>,
}

/// Scores the 1-best of `run` (`lattice` = `None`) or its lattices biased with a list and
/// discount; `targets` are the words precision/recall/F1 is measured on.
pub fn output(
    setup: &Setup,
    run: &DecodeRun,
    lattice: Option<(&ListKind, f32)>,
    targets: Option<&BTreeSet<String>>,
) -> Result<Output> {
    let (timed, rescore_s, report) = match lattice {
        None => (best_timed(setup, run), 0.0, None),
        Some((k, d)) => {
            let (h, rep, s) = lattice_bias_timed(setup, run, k, d)?;
            (h, s, Some(rep))
        }
    };
    let hyps: Vec<Vec<String>> = timed
        .iter()
        .map(|t| run.words(setup, &t.iter().map(|w| w.word).collect::<Vec<_>>()))
        .collect();
    let totals = setup.score(&hyps, targets)?;
    Ok(Output {
        hyps,
        timed,
        totals,
        rescore_s,
        report,
    })
}

/// The precision/recall target words: the global list `name`, or `rare` when the dataset has
/// one and no name is given. Returns the list name with the words.
pub fn targets(
    dataset: &Dataset,
    name: Option<&str>,
) -> Result<Option<(String, BTreeSet<String>)>> {
    let name = match name {
        Some(n) => n.to_string(),
        None if dataset
            .global_lists
            .contains_key(ctx_data::dataset::RARE_LIST) =>
        {
            ctx_data::dataset::RARE_LIST.to_string()
        }
        None => return Ok(None),
    };
    let list = dataset
        .global_lists
        .get(&name)
        .ok_or_else(|| anyhow!("dataset {} has no global list '{name}'", dataset.name))?;
    Ok(Some((
        name,
        list.phrases.iter().flatten().cloned().collect(),
    )))
}

/// Active tokens per frame over a run (after the beam, ε-closure included).
pub fn active_tokens(run: &DecodeRun) -> f64 {
    let segs = run.results.iter().flat_map(|r| &r.segments);
    let rows: f64 = segs.clone().map(|s| s.rows as f64).sum();
    let toks: f64 = segs.map(|s| s.tokens as f64).sum();
    toks / rows.max(1.0)
}

/// Segments an endpoint rule ended over a run (0 when decoded whole): how often the online
/// decoder split its streams.
pub fn endpoints(run: &DecodeRun) -> usize {
    run.results
        .iter()
        .flat_map(|r| &r.segments)
        .filter(|s| s.endpoint)
        .count()
}

/// The n-best oracle WER in percent (the thesis's Table 4.2 "oracle": the best of the final
/// beam): per utterance the fewest word errors of any hypothesis of its final beam against the
/// reference words as spoken, summed over the set, over the reference words.
pub fn nbest_oracle_wer(
    utts: &[ctx_data::utterance::Utterance],
    nbest: &[ngpu_lm::beam::NBest],
    words: impl Fn(&[u32]) -> Vec<String>,
) -> f64 {
    let (mut errors, mut n) = (0usize, 0usize);
    for (u, list) in utts.iter().zip(nbest) {
        let fewest = list
            .iter()
            .map(|l| {
                ctx_core::metrics::align::align_words(&u.words, &words(l))
                    .iter()
                    .filter(|s| s.op != ctx_core::metrics::align::EditOp::Match)
                    .count()
            })
            .min()
            .unwrap_or(u.words.len());
        errors += fewest;
        n += u.words.len();
    }
    100.0 * errors as f64 / n.max(1) as f64
}

/// Lattice arcs per frame over a run (0 without lattices).
pub fn lattice_density(run: &DecodeRun) -> f64 {
    let segs = run.results.iter().flat_map(|r| &r.segments);
    let rows: f64 = segs.clone().map(|s| s.rows as f64).sum();
    let arcs: f64 = segs
        .filter_map(|s| s.lattice.as_ref())
        .map(|l| l.arcs.len() as f64)
        .sum();
    // An empty sum is −0.0: + 0.0 prints it as 0.
    arcs / rows.max(1.0) + 0.0
}

/// The lattice oracle WER in percent (002 Table 1's OWER): per utterance the fewest word errors
/// of any path of its word lattice against the reference, summed over the set, over the
/// reference words. Defined only when every utterance was decoded as one segment with a lattice
/// (`endpointing = false`); `None` otherwise. Reference words outside the graph's vocabulary
/// can never be matched.
pub fn oracle_wer(setup: &Setup, run: &DecodeRun) -> Option<f64> {
    let words = &setup.graph.symbols.words;
    let (mut errors, mut n) = (0usize, 0usize);
    for (u, r) in setup.dataset.utterances.iter().zip(&run.results) {
        let [seg] = r.segments.as_slice() else {
            return None;
        };
        let lattice = seg.lattice.as_ref()?;
        let reference: Vec<u32> = u
            .words
            .iter()
            .map(|w| words.id(w).unwrap_or(u32::MAX))
            .collect();
        errors += lattice.oracle(&reference)?.0;
        n += reference.len();
    }
    Some(100.0 * errors as f64 / n.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ngpu_lm::beam::NBest;

    fn utt(words: &str) -> ctx_data::utterance::Utterance {
        ctx_data::utterance::Utterance {
            id: "u".into(),
            doc: None,
            words: words.split(' ').map(String::from).collect(),
            duration_s: 1.0,
            entities: vec![],
            callsign: None,
        }
    }

    #[test]
    fn nbest_oracle_takes_each_utterances_closest_hypothesis() {
        // Labels are word indices into a toy vocabulary.
        let vocab = ["turn", "left", "right", "heading", "two"];
        let words = |l: &[u32]| l.iter().map(|&i| vocab[i as usize].to_string()).collect();
        let utts = [utt("turn left"), utt("heading two")];
        let nbest: Vec<NBest> = vec![
            // The best is wrong (1 error), the second right: 0 errors.
            vec![vec![0, 2], vec![0, 1]],
            // Both wrong: the closer one (1 deletion) counts.
            vec![vec![0, 2, 4], vec![3]],
        ];
        assert_eq!(nbest_oracle_wer(&utts, &nbest, words), 25.0);
        // An empty beam counts every reference word as deleted.
        let empty: Vec<NBest> = vec![vec![vec![0, 1]], vec![]];
        assert_eq!(nbest_oracle_wer(&utts, &empty, words), 50.0);
    }
}

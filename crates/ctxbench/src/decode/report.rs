//! What `ctxbench decode` prints besides the figures: 000 Table 1's row names and the CTC
//! realism check of a simulated model.

use crate::pipeline::setup::{Acoustic, Setup};
use anyhow::Result;
use ctx_core::metrics::score::ScoreTotals;

/// The paper's row label of an output in 000 Table 1 ("Online decoding on CPU").
pub fn table1_row(output: &str) -> &'static str {
    match output {
        "none" => "No biasing",
        "unigrams" => "Biased unigrams (partial hypotheses)",
        "sequences" => "Biased sequences (partial hypotheses)",
        "gt" => "Biased GT (partial hypotheses)",
        _ => "other",
    }
}

/// How a simulated CTC model's outputs look next to a real one's (docs/design.md §5): the posterior
/// shape over every frame and the greedy (argmax) hypotheses' scores; `None` for models that
/// are not simulated CTC.
pub struct CtcRealism {
    /// Blank-argmax share, peakiness, entropy.
    pub shape: ctc_wfst::PosteriorShape,
    /// Greedy decoding's WER figures.
    pub greedy: ScoreTotals,
}

/// [`CtcRealism`] of the setup's utterances (scores simulated again: cheap next to decoding).
pub fn ctc_realism(setup: &Setup) -> Result<Option<CtcRealism>> {
    let Acoustic::Ctc(sim) = &setup.acoustic else {
        return Ok(None);
    };
    let mut shape = ctc_wfst::PosteriorShape::default();
    let mut hyps = Vec::with_capacity(setup.dataset.utterances.len());
    for u in &setup.dataset.utterances {
        let m = setup.scores(u)?;
        shape.add(&m, 0);
        let tokens = ctc_wfst::greedy_tokens(&m, 0);
        hyps.push(
            sim.bpe()
                .decode(&tokens)
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        );
    }
    let greedy = setup.score(&hyps, None)?;
    Ok(Some(CtcRealism { shape, greedy }))
}

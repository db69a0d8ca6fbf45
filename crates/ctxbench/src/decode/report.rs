//! What `ctxbench decode` prints besides the figures: 000 Table 1's row names and the CTC
//! realism check of a simulated model.

use crate::experiment::Point;
use crate::pipeline::setup::{Acoustic, Setup};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
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

/// Prints what was decoded and one table row per output.
pub(super) fn print_figures(
    points: &[Point],
    records: &[PointRecord],
    outputs: &[String],
    st: Option<&Setup>,
    realism: Option<&CtcRealism>,
) {
    let m = |i: usize, k: &str| records[i].measures.get(k).copied();
    if let Some(st) = st {
        eprintln!(
            "decoded {} utterances of {} ({} graph: {} states, {} arcs) with {} thread(s)",
            st.dataset.utterances.len(),
            st.dataset.name,
            st.graph.kind.name(),
            st.csr.num_states(),
            st.csr.num_arcs(),
            Common::read(&points[0].settings).map_or(0, |c| c.threads)
        );
    }
    if !records[0].device.is_empty() {
        eprintln!(
            "backend {} on {}",
            Common::read(&points[0].settings).map_or(String::new(), |c| c.backend.to_string()),
            records[0].device
        );
    }
    let g = |v: Option<f64>, d: usize| v.map_or("-".into(), |x| format!("{x:.d$}"));
    println!(
        "audio {} s, decode {} s (RTFx {}), lattice density {} arcs/frame",
        g(m(0, "audio_s"), 1),
        g(m(0, "decode_s"), 1),
        g(m(0, "rtfx"), 1),
        g(m(0, "lattice_density"), 2)
    );
    if let (Some(am), Some(all)) = (m(0, "am_s"), m(0, "rtfx_am")) {
        println!(
            "acoustic model (front end + scores) {am:.2} s; front end + scores + search RTFx {all:.1}"
        );
    }
    if let Some(r) = realism {
        let pct = |c: &ctx_core::metrics::score::ErrorCounts| {
            c.rate().map_or("-".into(), |r| format!("{r:.1}"))
        };
        println!(
            "CTC outputs: blank is the argmax on {:.1}% of frames, mean max posterior {:.3}, entropy {:.3} nats/frame; greedy WER {}, NE-WER {}",
            100.0 * r.shape.blank_share(),
            r.shape.mean_max_prob(),
            r.shape.mean_entropy(),
            pct(&r.greedy.all),
            pct(&r.greedy.ne),
        );
    }
    println!(
        "\n| output | row | method | WER | NE-WER | U-WER | NE-A | P | R | F1 | RTFx | phrases kept/dropped |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (i, name) in outputs.iter().enumerate() {
        // (Per-utterance means for some families: whole numbers print as such, others with
        // one decimal.)
        let count = |x: f64| {
            if x.fract() == 0.0 {
                format!("{x}")
            } else {
                format!("{x:.1}")
            }
        };
        let kept = match (m(i, "phrases_kept"), m(i, "phrases_dropped")) {
            (Some(k), Some(d)) => format!("{}/{}", count(k), count(d)),
            _ => "-".into(),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {kept} |",
            points[i].row,
            points[i].method,
            g(m(i, "wer"), 1),
            g(m(i, "ne_wer"), 1),
            g(m(i, "u_wer"), 1),
            g(m(i, "ne_acc"), 1),
            g(m(i, "precision"), 1),
            g(m(i, "recall"), 1),
            g(m(i, "f1"), 1),
            g(m(i, "rtfx"), 1),
        );
    }
}

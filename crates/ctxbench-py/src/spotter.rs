//! `WordSpotter`: NVIDIA NeMo's CTC-based word spotter (the `ctc-ws` crate) on numpy arrays —
//! built once from the model's labels and the phrases with their spellings, then `spot` and
//! `decode`/`decode_batch` per utterance, as NeMo's `run_word_spotter` and
//! `merge_alignment_with_ws_hyps` do.

use crate::arrays::lend;
use ctc_ws::{ContextGraph, Labels, SpotterConfig};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A CTC word spotter over a model's labels.
#[pyclass(frozen, subclass, module = "ctxbench._ctxbench")]
pub(crate) struct WordSpotter {
    graph: ContextGraph,
    labels: Labels,
    cfg: SpotterConfig,
}

/// A spelling: label ids, or pieces separated by spaces (each one of `labels`).
fn spelling(x: &Bound<'_, PyAny>, labels: &[String], what: &str) -> PyResult<Vec<u32>> {
    if let Ok(s) = x.extract::<String>() {
        return s
            .split_whitespace()
            .map(|p| {
                labels
                    .iter()
                    .position(|l| l == p)
                    .map(|i| i as u32)
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "{what}: piece '{p}' is not one of the labels"
                        ))
                    })
            })
            .collect();
    }
    x.extract::<Vec<u32>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected a string of pieces or a list of label ids, got {}",
            x.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })
}

#[pymethods]
impl WordSpotter {
    /// `labels`: the model's columns (a piece starting with `▁` starts a word); `phrases`: a dict
    /// phrase → list of spellings (each label ids or pieces separated by spaces: NeMo's
    /// `word_spelling1_spelling2`); the settings are NeMo's script's by default.
    #[new]
    #[pyo3(signature = (labels, phrases, blank=0, beam=5.0, context_score=3.0, ali_token_weight=0.6, keyword_threshold=-5.0, blank_threshold=0.8, non_blank_threshold=0.001, spot_overlap=10.0, merge_overlap=30.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        labels: Vec<String>,
        phrases: &Bound<'_, pyo3::types::PyDict>,
        blank: u32,
        beam: f32,
        context_score: f32,
        ali_token_weight: f32,
        keyword_threshold: f32,
        blank_threshold: f32,
        non_blank_threshold: f32,
        spot_overlap: f32,
        merge_overlap: f32,
    ) -> PyResult<Self> {
        if blank as usize >= labels.len() {
            return Err(PyValueError::new_err(format!(
                "blank: {blank} is not a column of the {} labels",
                labels.len()
            )));
        }
        let cfg = SpotterConfig {
            beam,
            context_score,
            ali_token_weight,
            keyword_threshold,
            blank_threshold,
            non_blank_threshold,
            spot_overlap,
            merge_overlap,
        };
        cfg.check()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let mut items = Vec::new();
        for (k, v) in phrases.iter() {
            let text: String = k.extract().map_err(|_| {
                PyTypeError::new_err("phrases: keys must be strings (the phrase as it is written)")
            })?;
            let what = format!("phrases['{text}']");
            let list: Vec<Bound<'_, PyAny>> = v.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}: expected a list of spellings"))
            })?;
            if list.is_empty() {
                return Err(PyValueError::new_err(format!("{what}: no spelling")));
            }
            let sp = list
                .iter()
                .enumerate()
                .map(|(i, s)| spelling(s, &labels, &format!("{what}[{i}]")))
                .collect::<PyResult<Vec<_>>>()?;
            items.push((text, sp));
        }
        let graph = ContextGraph::new(&items, blank, labels.len())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Self {
            graph,
            labels: Labels {
                pieces: labels,
                blank,
            },
            cfg,
        })
    }

    /// The spots of one utterance's `[T, V]` float32 log-probabilities: `(phrase, score,
    /// first frame, last frame)`, after NeMo's overlap rule and its comparison with the
    /// greedy words.
    fn spot(&self, log_probs: &Bound<'_, PyAny>) -> PyResult<Vec<(String, f32, usize, usize)>> {
        let m = lend(log_probs, "log_probs")?.matrix()?;
        let spots = ctc_ws::spot(&m, &self.graph, &self.labels, &self.cfg)
            .map_err(|e| PyValueError::new_err(format!("log_probs: {e}")))?;
        Ok(spots
            .iter()
            .map(|s| {
                (
                    self.graph.phrase(s.phrase).to_string(),
                    s.score,
                    s.start,
                    s.end,
                )
            })
            .collect())
    }

    /// The greedy hypothesis of one utterance with its spots merged in (NeMo's
    /// `merge_alignment_with_ws_hyps`), as text.
    fn decode(&self, log_probs: &Bound<'_, PyAny>) -> PyResult<String> {
        let m = lend(log_probs, "log_probs")?.matrix()?;
        let spots = ctc_ws::spot(&m, &self.graph, &self.labels, &self.cfg)
            .map_err(|e| PyValueError::new_err(format!("log_probs: {e}")))?;
        let words = ctc_ws::greedy_words(&m, &self.labels);
        let out = if spots.is_empty() {
            words.into_iter().map(|w| w.text).collect()
        } else {
            ctc_ws::merge(&words, &spots, &self.graph, self.cfg.merge_overlap)
        };
        Ok(out.join(" "))
    }

    /// [`Self::decode`] of each array of a list, in order.
    fn decode_batch(&self, log_probs: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
        log_probs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                self.decode(a).map_err(|e| {
                    Python::attach(|py| {
                        PyValueError::new_err(format!("log_probs[{i}]: {}", e.value(py)))
                    })
                })
            })
            .collect()
    }
}

//! `NgramLM`: an ARPA LM as NGPU-LM's flat arrays (004 §2.2, crate `ngpu-lm`), queried in
//! batches from Python — every label's score from each of B states at once (`advance`, what a
//! beam search or a fusion step asks), chosen labels only (`score`), and `</s>` (`final`) —
//! into numpy arrays made from the results without a copy.

use crate::value_err;
use ctx_core::arpa::ArpaLm;
use ngpu_lm::NgramLm as Arrays;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// Scores and next states of a batched query, `[B, V]` or `[B, K]`.
type Scored<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<u32>>);

/// An n-gram LM over a model's labels (or the ARPA's own words), queried in batches.
#[pyclass(frozen, subclass, module = "ctxbench._ctxbench")]
pub(crate) struct NgramLM {
    lm: Arrays,
    labels: Vec<String>,
    pool: rayon::ThreadPool,
    report: ngpu_lm::ArraysReport,
}

/// `x` as u32 values, or a `TypeError`/`ValueError` naming `what`.
fn u32s(x: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u32>> {
    if let Ok(a) = x.extract::<PyReadonlyArray1<'_, u32>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = x.extract::<PyReadonlyArray1<'_, i64>>() {
        return a
            .as_array()
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                u32::try_from(v).map_err(|_| {
                    PyValueError::new_err(format!("{what}[{i}]: {v} is not a state or label id"))
                })
            })
            .collect();
    }
    x.extract::<Vec<u32>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected a 1-D array or list of non-negative ints (uint32 or int64), got {}",
            x.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })
}

#[pymethods]
impl NgramLM {
    /// Reads `arpa`; `labels` are the model's vocabulary (label i = `labels[i]`; every ARPA word
    /// but `<s>`, `</s>`, `<unk>` must be one, labels the ARPA lacks score as `<unk>`), default
    /// the ARPA's own words in file order. `threads` run a batch's rows in parallel.
    #[new]
    #[pyo3(signature = (arpa, labels=None, threads=1))]
    fn new(
        py: Python<'_>,
        arpa: PathBuf,
        labels: Option<Vec<String>>,
        threads: usize,
    ) -> PyResult<Self> {
        let built = py.detach(|| -> anyhow::Result<_> {
            let lm = ArpaLm::read(&arpa).map_err(|e| anyhow::anyhow!("arpa: {e}"))?;
            let labels = labels.unwrap_or_else(|| Arrays::labels_of(&lm));
            let (arrays, report) = Arrays::from_arpa(&lm, &labels)
                .map_err(|e| anyhow::anyhow!("arpa: {}: {e}", arpa.display()))?;
            Ok((arrays, report, labels))
        });
        let (lm, report, labels) = built.map_err(value_err)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| PyValueError::new_err(format!("threads: {e}")))?;
        Ok(Self {
            lm,
            labels,
            pool,
            report,
        })
    }

    /// The labels (label i = `labels[i]`).
    #[getter]
    fn labels(&self) -> Vec<String> {
        self.labels.clone()
    }

    /// The vocabulary size V.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.lm.vocab_size()
    }

    /// The LM's order.
    #[getter]
    fn order(&self) -> usize {
        self.lm.order()
    }

    /// The number of states (histories).
    #[getter]
    fn num_states(&self) -> usize {
        self.lm.num_states()
    }

    /// The state after `<s>`: where a sentence starts.
    #[getter]
    fn bos(&self) -> u32 {
        self.lm.bos_state()
    }

    /// What building the arrays found: n-grams, states, arcs, added prefixes, labels the ARPA
    /// lacks, bytes.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.report;
        let d = PyDict::new(py);
        d.set_item("ngrams", r.ngrams)?;
        d.set_item("states", r.states)?;
        d.set_item("arcs", r.arcs)?;
        d.set_item("added_prefixes", r.added_prefixes)?;
        d.set_item("missing_labels", r.missing_labels)?;
        d.set_item("bytes", r.bytes)?;
        Ok(d)
    }

    /// Every label's score from each state: `(scores, next)`, float32 `[B, V]` natural-log
    /// probabilities ln p(label | state) and uint32 `[B, V]` next states (the GIL released).
    fn advance<'py>(&self, py: Python<'py>, states: &Bound<'py, PyAny>) -> PyResult<Scored<'py>> {
        let states = u32s(states, "states")?;
        let (b, v) = (states.len(), self.lm.vocab_size());
        let (scores, next) = py
            .detach(|| -> anyhow::Result<_> {
                let mut scores = vec![0f32; b * v];
                let mut next = vec![0u32; b * v];
                self.pool
                    .install(|| self.lm.advance(&states, &mut scores, &mut next))?;
                Ok((scores, next))
            })
            .map_err(|e| PyValueError::new_err(format!("states: {e:#}")))?;
        Ok((
            scores.into_pyarray(py).reshape([b, v])?,
            next.into_pyarray(py).reshape([b, v])?,
        ))
    }

    /// Chosen labels' scores: `labels` is `[B, K]` (K labels per state); `(scores, next)` as
    /// `[B, K]` arrays.
    fn score<'py>(
        &self,
        py: Python<'py>,
        states: &Bound<'py, PyAny>,
        labels: PyReadonlyArray2<'py, i64>,
    ) -> PyResult<Scored<'py>> {
        let states = u32s(states, "states")?;
        let shape = labels.shape().to_vec();
        if shape[0] != states.len() {
            return Err(PyValueError::new_err(format!(
                "labels: {} rows for {} states",
                shape[0],
                states.len()
            )));
        }
        let ls: Vec<u32> = labels
            .as_array()
            .iter()
            .map(|&l| u32::try_from(l).unwrap_or(u32::MAX))
            .collect();
        let (scores, next) = py
            .detach(|| -> anyhow::Result<_> {
                let mut scores = vec![0f32; ls.len()];
                let mut next = vec![0u32; ls.len()];
                self.pool
                    .install(|| self.lm.advance_sparse(&states, &ls, &mut scores, &mut next))?;
                Ok((scores, next))
            })
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        Ok((
            scores.into_pyarray(py).reshape([shape[0], shape[1]])?,
            next.into_pyarray(py).reshape([shape[0], shape[1]])?,
        ))
    }

    /// ln p(`</s>` | state) for each state, float32 `[B]`.
    #[pyo3(name = "final")]
    fn final_<'py>(
        &self,
        py: Python<'py>,
        states: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let states = u32s(states, "states")?;
        let mut out = vec![0f32; states.len()];
        self.lm
            .final_weights(&states, &mut out)
            .map_err(|e| PyValueError::new_err(format!("states: {e}")))?;
        Ok(out.into_pyarray(py))
    }

    /// ln p(`words` | `<s>`) summed along the sentence (with `</s>` when `eos`), label by
    /// label from `bos`: a sentence's score, as a check against another toolkit.
    #[pyo3(signature = (words, eos=true))]
    fn sentence(&self, words: Vec<String>, eos: bool) -> PyResult<f64> {
        let mut s = self.lm.bos_state();
        let mut total = 0f64;
        for (i, w) in words.iter().enumerate() {
            let l = self.labels.iter().position(|x| x == w).ok_or_else(|| {
                PyValueError::new_err(format!("words[{i}]: '{w}' is not a label"))
            })?;
            let (sc, next) = self.lm.score(s, l as u32);
            total += sc as f64;
            s = next;
        }
        if eos {
            total += self.lm.final_weight(s) as f64;
        }
        Ok(total)
    }
}

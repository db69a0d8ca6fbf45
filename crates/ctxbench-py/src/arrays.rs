//! Arrays handed over by Python: numpy buffers lent to score matrices (read in place) and the
//! search's inputs made of them.

use ctx_core::scores::{ScoreMatrix, SharedValues};
use ctx_graph::context::ContextGraph;
use ctxbench::pipeline::{ScoreRules, SearchInputs};
use numpy::{PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use wfst_search::Booster;

/// Arrays handed over by Python, taken once each by the search, with each utterance's
/// open-vocabulary context and the booster of its negative-weight phrases.
pub(crate) struct Arrays<'a> {
    pub ids: Vec<String>,
    /// Rows × frame shift, known before the matrices are taken.
    pub durations: Vec<f64>,
    pub mats: Vec<Mutex<Option<ScoreMatrix>>>,
    pub rules: ScoreRules<'a>,
    pub contexts: Vec<Option<Arc<ContextGraph>>>,
    pub boosters: Vec<Booster>,
}

impl SearchInputs for Arrays<'_> {
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn id(&self, i: usize) -> &str {
        &self.ids[i]
    }
    fn duration_s(&self, i: usize) -> f64 {
        self.durations[i]
    }
    fn scores(&self, i: usize) -> anyhow::Result<ScoreMatrix> {
        let m = self.mats[i]
            .lock()
            .map_err(|_| anyhow::anyhow!("log_probs[{i}]: poisoned"))?
            .take()
            .ok_or_else(|| anyhow::anyhow!("log_probs[{i}]: taken twice"))?;
        self.rules.admit(m, "decode_batch", &self.ids[i])
    }
    fn booster(&self, i: usize) -> Booster {
        self.boosters.get(i).cloned().unwrap_or(Booster::None)
    }
    fn context(&self, i: usize) -> Option<Arc<ContextGraph>> {
        self.contexts.get(i).cloned().flatten()
    }
}

/// A numpy array's values lent to a score matrix: read in place while the array is borrowed
/// (read-only) by the call that lent it.
struct Lent {
    ptr: *const f32,
    len: usize,
    /// Keeps the array (and so its buffer) alive for as long as a matrix holds the values.
    _owner: Py<PyAny>,
}

// SAFETY: `ptr` points into the buffer of the array `_owner` keeps alive; the array is borrowed
// read-only (numpy's borrow flag, `Borrowed::array`) for the whole call whose matrices hold a
// `Lent`, and those matrices are dropped before the call returns (the search consumes them), so
// the values are neither freed nor written by Rust while read, from any thread.
unsafe impl Send for Lent {}
unsafe impl Sync for Lent {}

impl SharedValues for Lent {
    fn values(&self) -> &[f32] {
        // SAFETY: see the `Send`/`Sync` impls: `len` f32s of a live, C-contiguous buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A `[T, V]` float32 array borrowed (read-only) for one call.
pub(crate) struct Borrowed<'py> {
    array: PyReadonlyArray2<'py, f32>,
    what: String,
}

impl Borrowed<'_> {
    /// The array as a score matrix: its values lent in place when it is C-contiguous, copied
    /// otherwise.
    pub(crate) fn matrix(&self) -> PyResult<ScoreMatrix> {
        let (rows, cols) = (self.array.shape()[0], self.array.shape()[1]);
        let bad = |e: ctx_core::CoreError| PyValueError::new_err(format!("{}: {e}", self.what));
        // (`as_slice` also accepts Fortran order, whose values would be read transposed.)
        match self.array.as_slice() {
            Ok(s) if self.array.is_c_contiguous() => {
                let lent = Lent {
                    ptr: s.as_ptr(),
                    len: s.len(),
                    _owner: self.array.as_any().clone().unbind(),
                };
                ScoreMatrix::shared(rows, cols, Arc::new(lent)).map_err(bad)
            }
            _ => {
                let data = self.array.as_array().iter().copied().collect();
                ScoreMatrix::new(rows, cols, data).map_err(bad)
            }
        }
    }
}

/// A `[T, V]` float32 numpy array, borrowed read-only, or a `TypeError` naming `what`.
pub(crate) fn lend<'py>(a: &Bound<'py, PyAny>, what: &str) -> PyResult<Borrowed<'py>> {
    let un = a.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected a numpy array (or a torch tensor), got {}",
            a.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    })?;
    if un.ndim() != 2 {
        return Err(PyValueError::new_err(format!(
            "{what}: expected 2 dimensions [frames, tokens], got shape {:?}",
            un.shape()
        )));
    }
    let array: PyReadonlyArray2<'py, f32> = a.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected float32 log-probabilities, got dtype {}",
            un.dtype().str().map_or("?".into(), |s| s.to_string())
        ))
    })?;
    Ok(Borrowed {
        array,
        what: what.to_string(),
    })
}

//! `ctxbench._ctxbench`, the compiled half of the `ctxbench` Python package: the CTC WFST
//! decoder on numpy arrays and the scorer. It calls the library code the CLI runs (graph
//! loading and checks, the typed settings, the search of `ctxbench::pipeline`), so a Python
//! decode and `ctxbench decode` give the same words. The Python half (`python/ctxbench/`)
//! converts torch tensors and documents the API.
//!
//! - `decoder.rs`: `Decoder` (a TLG loaded or built from labels and an LM, or an HCLG),
//!   `Hypothesis`, `Word`.
//! - `arrays.rs`: numpy buffers lent to score matrices, the search's inputs.
//! - `contexts.rs`: `contexts=` phrases compiled into open-vocabulary context graphs.
//! - `settings.rs`: keyword settings typed by the CLI's setting specs.
//! - `ngram.rs`: `NgramLM`, NGPU-LM's batched n-gram queries into numpy arrays.
//! - `score.rs`: `ctxbench score` on files.
//! - `spotter.rs`: `WordSpotter`, NeMo's CTC-based word spotter on numpy arrays.

mod arrays;
mod contexts;
mod decoder;
mod ngram;
mod score;
mod settings;
mod spotter;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `anyhow` errors as Python `ValueError`s, the whole chain in the message.
pub(crate) fn value_err(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(format!("{e:#}"))
}

/// The module.
#[pymodule]
fn _ctxbench(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(score::score_files, m)?)?;
    m.add_class::<decoder::Decoder>()?;
    m.add_class::<decoder::Hypothesis>()?;
    m.add_class::<decoder::Word>()?;
    m.add_class::<ngram::NgramLM>()?;
    m.add_class::<spotter::WordSpotter>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

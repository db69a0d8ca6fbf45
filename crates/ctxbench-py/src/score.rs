//! `ctxbench score` from Python: the CLI's scorer on files.

use crate::value_err;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A choice argument of `score`, or a `ValueError` naming it and its choices.
fn choice<T: Copy>(what: &str, v: Option<&str>, choices: &[(&str, T)]) -> PyResult<Option<T>> {
    v.map(|v| {
        choices
            .iter()
            .find(|(name, _)| *name == v)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                PyValueError::new_err(format!("{what}: '{v}' is not one of {}", names.join(", ")))
            })
    })
    .transpose()
}

/// `ctxbench score` on files, the CLI's own code: writes its JSON (`--json`) to `json_out` and
/// returns its warnings. The Python `score` wraps it (dicts written as Kaldi text files).
#[pyfunction]
#[pyo3(signature = (reference, hyp, json_out, fmt=None, entities=None, ne_classes=None,
                    normalize=None, ne_insertions=None, strict=false, lenient=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn score_files(
    py: Python<'_>,
    reference: PathBuf,
    hyp: PathBuf,
    json_out: PathBuf,
    fmt: Option<&str>,
    entities: Option<PathBuf>,
    ne_classes: Option<Vec<String>>,
    normalize: Option<&str>,
    ne_insertions: Option<&str>,
    strict: bool,
    lenient: bool,
) -> PyResult<Vec<String>> {
    use ctxbench::score::{Format, NeInsArg, NormArg, ScoreArgs};
    let mut args = ScoreArgs::new(&reference, &hyp);
    args.format = choice(
        "fmt",
        fmt,
        &[
            ("kaldi", Format::Kaldi),
            ("nlp", Format::Nlp),
            ("fbai", Format::Fbai),
        ],
    )?;
    args.normalize = choice(
        "normalize",
        normalize,
        &[("exact", NormArg::Exact), ("fstalign", NormArg::Fstalign)],
    )?;
    args.ne_insertions = choice(
        "ne_insertions",
        ne_insertions,
        &[("inside", NeInsArg::Inside), ("never", NeInsArg::Never)],
    )?;
    args.entities = entities;
    args.ne_classes = ne_classes;
    args.strict = strict;
    args.lenient = lenient;
    py.detach(|| -> anyhow::Result<Vec<String>> {
        if args.format == Some(Format::Fbai) {
            args.json = Some(json_out);
            ctxbench::score::run_score_fbai(&args)?;
            Ok(Vec::new())
        } else {
            let report = ctxbench::score::run_score(&args)?;
            report.write_json(&json_out)?;
            Ok(report.warnings)
        }
    })
    .map_err(value_err)
}

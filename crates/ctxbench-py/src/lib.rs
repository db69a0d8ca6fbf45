//! `ctxbench._ctxbench`, the compiled half of the `ctxbench` Python package: the CTC WFST
//! decoder on numpy arrays. It calls the library code the CLI runs (graph loading and checks,
//! the typed settings, the search of `ctxbench::pipeline`), so a Python decode and `ctxbench
//! decode` give the same words. The Python half (`python/ctxbench/`) converts torch tensors and
//! documents the API.

use ctx_core::scores::ScoreMatrix;
use ctx_graph::compile::{Graph, GraphKind};
use ctx_graph::csr::DecodingGraph;
use ctxbench::methods::components::penalties::CtcPenalties;
use ctxbench::pipeline::{self, DecodeSettings, ScoreRules, SearchGraph, SearchInputs, TimedWord};
use ctxbench::settings::{Block, Common, SettingSpec, Settings, Type, Value};
use numpy::{PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use wfst_search::Booster;

/// Settings of the common block a decoder of arrays has no use for (they choose a dataset).
const DATASET_KEYS: [&str; 7] = [
    "dataset", "subset", "graph", "bpe_size", "noise", "limit", "targets",
];

/// The settings a `CtcDecoder` takes as keyword arguments: the common block's decoder
/// settings and the CTC penalties, typed by the same specs as the CLI's flags.
fn decoder_specs() -> Vec<&'static SettingSpec> {
    Common::SPECS
        .iter()
        .chain(CtcPenalties::SPECS)
        .filter(|s| !DATASET_KEYS.contains(&s.name))
        .collect()
}

/// A Python value as a setting of type `spec.ty`, or a `TypeError`/`ValueError` naming it.
fn to_value(spec: &SettingSpec, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let name = spec.name;
    let is_bool = v.is_instance_of::<pyo3::types::PyBool>();
    let wrong = |what: &str| {
        PyTypeError::new_err(format!(
            "{name}: expected {what}, got {}",
            v.get_type().name().map_or("?".into(), |n| n.to_string())
        ))
    };
    match spec.ty {
        Type::Float if !is_bool => {
            let x: f64 = v.extract().map_err(|_| wrong("a number"))?;
            if !x.is_finite() {
                return Err(PyValueError::new_err(format!(
                    "{name}: {x} is not a finite number"
                )));
            }
            Ok(Value::Float(x))
        }
        Type::Int if !is_bool => {
            let i: i64 = v.extract().map_err(|_| wrong("an int"))?;
            if i < 0 {
                return Err(PyValueError::new_err(format!("{name}: {i} is below 0")));
            }
            Ok(Value::Int(i))
        }
        Type::Bool if is_bool => Ok(Value::Bool(v.extract()?)),
        Type::Str => Ok(Value::Str(v.extract().map_err(|_| wrong("a str"))?)),
        Type::Float => Err(wrong("a number")),
        Type::Int => Err(wrong("an int")),
        Type::Bool => Err(wrong("a bool")),
    }
}

/// `anyhow` errors as Python `ValueError`s, the whole chain in the message.
fn value_err(e: anyhow::Error) -> PyErr {
    PyValueError::new_err(format!("{e:#}"))
}

/// A decoded word: its text and time in the utterance (seconds).
#[pyclass(frozen, module = "ctxbench._ctxbench", get_all)]
#[derive(Clone)]
struct Word {
    /// The word.
    word: String,
    /// Start time in seconds.
    start: f64,
    /// End time in seconds.
    end: f64,
}

#[pymethods]
impl Word {
    fn __repr__(&self) -> String {
        format!("Word({:?}, {:.2}, {:.2})", self.word, self.start, self.end)
    }
}

/// One utterance's best path: its text, its words with times, and its cost (graph plus
/// acoustic, the search's units).
#[pyclass(frozen, module = "ctxbench._ctxbench", get_all)]
struct Hypothesis {
    /// The words joined by spaces.
    text: String,
    /// The words with their times.
    words: Vec<Word>,
    /// Graph cost plus acoustic cost of the best path (over all segments).
    cost: f64,
}

#[pymethods]
impl Hypothesis {
    fn __repr__(&self) -> String {
        format!("Hypothesis({:?}, cost={:.3})", self.text, self.cost)
    }
}

/// Arrays handed over by Python, taken once each by the search.
struct Arrays<'a> {
    ids: Vec<String>,
    /// Rows × frame shift, known before the matrices are taken.
    durations: Vec<f64>,
    mats: Vec<Mutex<Option<ScoreMatrix>>>,
    rules: ScoreRules<'a>,
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
    fn booster(&self, _i: usize) -> Booster {
        Booster::None
    }
    fn context(&self, _i: usize) -> Option<Arc<ctx_graph::context::ContextGraph>> {
        None
    }
}

/// A CTC decoder over a TLG graph (the WFST decoder of `ctxbench decode --model ctc`), built
/// once, then `decode` / `decode_batch` on `[T, V]` float32 log-probability arrays.
#[pyclass(frozen, subclass, module = "ctxbench._ctxbench")]
struct CtcDecoder {
    graph: Graph,
    csr: DecodingGraph,
    blank: u32,
    silence: Vec<u32>,
    frame_s: f64,
    settings: DecodeSettings,
    /// The resolved settings (every key of [`decoder_specs`]), for `settings`.
    resolved: Settings,
    /// The last call's seconds: audio, search, input checks (the CLI's RTFx split).
    last: Mutex<[f64; 3]>,
}

#[pymethods]
impl CtcDecoder {
    /// Loads `graph` (an OpenFst TLG, input labels = token ids + 1) and `words` (its words
    /// table); the blank is `blank`, else the `<blk>` of `tokens`, else column 0. Keyword
    /// settings are the CLI's (`beam`, `max_active`, `lattice_beam`, `acoustic_scale`,
    /// `chunk_s`, `endpointing`, `threads`, `backend`, `gpu_batch`, `blank_penalty`,
    /// `word_insertion_penalty`) with the same defaults.
    #[new]
    #[pyo3(signature = (graph, words, tokens=None, blank=None, frame_shift=0.04, **settings))]
    fn new(
        graph: PathBuf,
        words: PathBuf,
        tokens: Option<PathBuf>,
        blank: Option<u32>,
        frame_shift: f64,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if !(frame_shift.is_finite() && frame_shift > 0.0) {
            return Err(PyValueError::new_err(format!(
                "frame_shift: {frame_shift} (seconds per row) must be a number above 0"
            )));
        }
        let specs = decoder_specs();
        let mut s = Settings::new();
        Common::defaults(&mut s);
        CtcPenalties::defaults(&mut s);
        if let Some(kw) = settings {
            for (k, v) in kw.iter() {
                let k: String = k.extract()?;
                let spec = specs.iter().find(|s| s.name == k).ok_or_else(|| {
                    let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                    PyTypeError::new_err(format!(
                        "CtcDecoder() got an unexpected keyword argument '{k}' (settings: {})",
                        names.join(", ")
                    ))
                })?;
                if v.is_none() {
                    s.remove(&k);
                } else {
                    s.insert(k, to_value(spec, &v)?);
                }
            }
        }
        let common = Common::read(&s).map_err(value_err)?;
        let penalties = CtcPenalties::read(&s).map_err(value_err)?;
        let mut decode = DecodeSettings::from_common(&common, 1.0);
        penalties.apply(&mut decode);
        let g = ctx_graph::external::load_graph(
            &graph,
            &words,
            None,
            GraphKind::Tlg(ctx_graph::ctc::CtcTopology::Normal),
        )
        .map_err(|e| PyValueError::new_err(format!("graph: {e}")))?;
        let csr = pipeline::checked_csr(&g, &graph).map_err(value_err)?;
        let blank = pipeline::ctc_blank_column(blank, tokens.as_deref(), None)
            .map_err(value_err)?
            .ok_or_else(|| PyValueError::new_err("blank: no score column"))?;
        let resolved = s
            .into_iter()
            .filter(|(k, _)| specs.iter().any(|s| s.name == k))
            .collect();
        Ok(Self {
            graph: g,
            csr,
            blank,
            silence: vec![blank + 1],
            frame_s: frame_shift,
            settings: decode,
            resolved,
            last: Mutex::new([0.0; 3]),
        })
    }

    /// The resolved settings, by name.
    #[getter]
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.resolved {
            match v {
                Value::Str(x) => d.set_item(k, x)?,
                Value::Float(x) => d.set_item(k, x)?,
                Value::Int(x) => d.set_item(k, x)?,
                Value::Bool(x) => d.set_item(k, x)?,
            }
        }
        Ok(d)
    }

    /// The last `decode`/`decode_batch` call's seconds as the CLI counts them: `audio_s`
    /// (rows × frame shift), `decode_s` (the search; RTFx = audio_s / decode_s) and
    /// `check_s` (the CTC input checks and blank penalty, outside RTFx as in the CLI).
    #[getter]
    fn timing<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = *self
            .last
            .lock()
            .map_err(|_| PyValueError::new_err("timing: poisoned"))?;
        let d = PyDict::new(py);
        d.set_item("audio_s", t[0])?;
        d.set_item("decode_s", t[1])?;
        d.set_item("check_s", t[2])?;
        Ok(d)
    }

    /// The blank's score column.
    #[getter]
    fn blank(&self) -> u32 {
        self.blank
    }

    /// Decodes one `[T, V]` float32 array of log-probabilities.
    fn decode(&self, py: Python<'_>, log_probs: &Bound<'_, PyAny>) -> PyResult<Hypothesis> {
        let mut out = self.run(py, vec![array(log_probs, "log_probs")?], None)?;
        Ok(out.remove(0))
    }

    /// Decodes a list of `[T, V]` float32 arrays (threads as the `threads` setting; the GIL
    /// is released while decoding). `ids` name the utterances in messages (default
    /// `log_probs[i]`).
    #[pyo3(signature = (log_probs, ids=None))]
    fn decode_batch(
        &self,
        py: Python<'_>,
        log_probs: Vec<Bound<'_, PyAny>>,
        ids: Option<Vec<String>>,
    ) -> PyResult<Vec<Hypothesis>> {
        let mats = log_probs
            .iter()
            .enumerate()
            .map(|(i, a)| array(a, &format!("log_probs[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        if let Some(ids) = &ids {
            if ids.len() != mats.len() {
                return Err(PyValueError::new_err(format!(
                    "ids: {} ids for {} arrays",
                    ids.len(),
                    mats.len()
                )));
            }
        }
        self.run(py, mats, ids)
    }
}

impl CtcDecoder {
    /// Searches the matrices (GIL released) and spells the best paths.
    fn run(
        &self,
        py: Python<'_>,
        mats: Vec<ScoreMatrix>,
        ids: Option<Vec<String>>,
    ) -> PyResult<Vec<Hypothesis>> {
        let n = mats.len();
        let durations = mats
            .iter()
            .map(|m| m.rows() as f64 * self.frame_s)
            .collect();
        let inputs = Arrays {
            ids: ids.unwrap_or_else(|| (0..n).map(|i| format!("log_probs[{i}]")).collect()),
            durations,
            mats: mats.into_iter().map(|m| Mutex::new(Some(m))).collect(),
            rules: ScoreRules {
                need: self.graph.num_columns as usize,
                width: None,
                ctc: true,
                silence: &self.silence,
                acoustic_scale: self.settings.config.acoustic_scale,
            },
        };
        let sg = SearchGraph {
            csr: &self.csr,
            words_len: self.graph.symbols.words.len() as u32,
            context_slot: self.graph.symbols.context_slot(),
            ctc_blank: Some(self.blank),
            silence: &self.silence,
            frame_s: self.frame_s,
            name: "python",
            kind: self.graph.kind.name(),
        };
        let run = py
            .detach(|| pipeline::search::search(&sg, &self.settings, &inputs, false))
            .map_err(value_err)?;
        if let Ok(mut t) = self.last.lock() {
            *t = [run.audio_s, run.decode_s, run.check_s];
        }
        let spell = |w: u32| pipeline::spell_word(&self.graph.symbols.words, &run.open_words, w);
        Ok(run
            .results
            .iter()
            .map(|r| {
                let timed: Vec<TimedWord> = r
                    .segments
                    .iter()
                    .flat_map(|seg| pipeline::timed_words(self.frame_s, seg, &seg.best))
                    .collect();
                let words: Vec<Word> = timed
                    .iter()
                    .map(|t| Word {
                        word: spell(t.word),
                        start: t.start_s,
                        end: t.start_s + t.dur_s,
                    })
                    .collect();
                Hypothesis {
                    text: words
                        .iter()
                        .map(|w| w.word.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    words,
                    cost: r.segments.iter().map(|s| s.best.cost() as f64).sum(),
                }
            })
            .collect())
    }
}

/// A `[T, V]` float32 numpy array as a score matrix (copied), or a `TypeError` naming `what`.
fn array(a: &Bound<'_, PyAny>, what: &str) -> PyResult<ScoreMatrix> {
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
    let arr: PyReadonlyArray2<f32> = a.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected float32 log-probabilities, got dtype {}",
            un.dtype().str().map_or("?".into(), |s| s.to_string())
        ))
    })?;
    let (rows, cols) = (un.shape()[0], un.shape()[1]);
    let data: Vec<f32> = match arr.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => arr.as_array().iter().copied().collect(),
    };
    ScoreMatrix::new(rows, cols, data).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

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
fn score_files(
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

/// The module.
#[pymodule]
fn _ctxbench(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(score_files, m)?)?;
    m.add_class::<CtcDecoder>()?;
    m.add_class::<Hypothesis>()?;
    m.add_class::<Word>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

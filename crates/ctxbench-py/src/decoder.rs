//! `CtcDecoder`: the CTC WFST decoder of `ctxbench decode --model ctc` over a TLG — an
//! exported graph, or one built from a model's labels and an ARPA LM — made once (graph
//! checks, thread pool, backend), then `decode` / `decode_batch` on arrays, with open-vocabulary
//! contexts per call or per utterance.

use crate::arrays::{lend, Arrays, Borrowed};
use crate::contexts::{self, Compiler};
use crate::settings::{resolve, to_dict};
use crate::value_err;
use ctx_core::scores::ScoreMatrix;
use ctx_graph::compile::{Graph, GraphKind};
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::labels::CtcLabels;
use ctxbench::methods::components::open_vocab::OpenVocab;
use ctxbench::methods::components::penalties::CtcPenalties;
use ctxbench::pipeline::label_graph::{label_graph, LabelGraphOptions};
use ctxbench::pipeline::{self, DecodeSettings, ScoreRules, SearchGraph, Searcher, TimedWord};
use ctxbench::settings::{Block, Common, Settings};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A decoded word: its text and time in the utterance (seconds).
#[pyclass(frozen, module = "ctxbench._ctxbench", get_all)]
#[derive(Clone)]
pub(crate) struct Word {
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
pub(crate) struct Hypothesis {
    /// The words joined by spaces.
    text: String,
    /// The words with their times.
    words: Vec<Word>,
    /// Graph cost plus acoustic cost of the best path (over all segments).
    cost: f64,
    /// Up to `nbest` distinct word sequences and their costs, cheapest first (when asked).
    nbest: Vec<(String, f64)>,
    /// The word lattice as a Kaldi text `CompactLattice` with the words spelled (what
    /// `lattice-copy ark:- ark,t:- | int2sym.pl -f 3 words.txt` prints; when asked).
    lattice: Option<String>,
}

#[pymethods]
impl Hypothesis {
    fn __repr__(&self) -> String {
        format!("Hypothesis({:?}, cost={:.3})", self.text, self.cost)
    }
}

/// What a decoder owns: the graph, its CSR form (input labels on the model's columns) and, with
/// a word insertion penalty, the copy searched; the labels that spell contexts.
struct Loaded {
    graph: Graph,
    csr: DecodingGraph,
    /// `csr` with the word insertion penalty (`None`: it is 0, `csr` is searched).
    penalised: Option<DecodingGraph>,
    /// The CTC blank's column; `None` for a hybrid model (HCLG over pdf scores).
    blank: Option<u32>,
    /// A hybrid model's score width (its pdf count), when known.
    width: Option<usize>,
    silence: Vec<u32>,
    frame_s: f64,
    topology: CtcTopology,
    /// The model's labels (spelling contexts); `None` for a graph without a token table.
    labels: Option<CtcLabels>,
    /// Words spelled by a lexicon (unit ids), before the labels' own spelling.
    spellings: std::collections::HashMap<String, Vec<u32>>,
}

impl Loaded {
    /// A CTC model's TLG: the blank its silence label (endpointing); the frame shift is set
    /// by the constructor.
    fn ctc(
        graph: Graph,
        csr: DecodingGraph,
        blank: u32,
        topology: CtcTopology,
        labels: Option<CtcLabels>,
        spellings: std::collections::HashMap<String, Vec<u32>>,
    ) -> Self {
        Self {
            graph,
            csr,
            penalised: None,
            blank: Some(blank),
            width: None,
            silence: vec![blank + 1],
            frame_s: 0.04,
            topology,
            labels,
            spellings,
        }
    }

    /// The search's view of the graph.
    fn search_graph(&self) -> SearchGraph<'_> {
        SearchGraph {
            csr: &self.csr,
            words_len: self.graph.symbols.words.len() as u32,
            context_slot: self.graph.symbols.context_slot(),
            ctc_blank: self.blank,
            silence: &self.silence,
            frame_s: self.frame_s,
            name: "python",
            kind: self.graph.kind.name(),
            bestpath_graph_scale: None,
        }
    }
}

/// The search over a loaded graph, made once and locked by each call (a decoder decodes one
/// call at a time).
type Running<'a> = Mutex<Searcher<'a>>;

self_cell::self_cell!(
    /// A loaded graph and the search made over it.
    struct Engine {
        owner: Loaded,
        #[not_covariant]
        dependent: Running,
    }
);

/// A WFST decoder built once — a CTC model's TLG (`CtcDecoder`) or a hybrid model's HCLG
/// (`WfstDecoder`) — then `decode` / `decode_batch` on `[T, V]` float32 score arrays.
#[pyclass(frozen, subclass, module = "ctxbench._ctxbench")]
pub(crate) struct Decoder {
    engine: Engine,
    settings: DecodeSettings,
    open: OpenVocab,
    /// The resolved settings (every key a decoder takes), for `settings`.
    resolved: Settings,
    /// How the graph was made (from labels and an LM: words, unspellable, cache).
    info: Settings,
    /// The last call's seconds: audio, search, CTC input checks, arrays handed over and
    /// admitted (the CLI's RTFx split).
    last: Mutex<[f64; 4]>,
    /// Context lists compiled by earlier calls.
    contexts: Mutex<contexts::Cache>,
}

/// A CTC decoder's TLG loaded with its words table: the blank column from `blank` or the
/// token table, whose labels spell contexts.
fn load_ctc(
    graph: &Path,
    words: &Path,
    blank: Option<u32>,
    tokens: Option<&Path>,
    topo: CtcTopology,
    lexicon: bool,
) -> PyResult<Loaded> {
    if lexicon {
        return Err(PyTypeError::new_err(
            "lexicon: a loaded graph has its lexicon built in (lexicon= is for from_lm)",
        ));
    }
    let g = ctx_graph::external::load_graph(graph, words, None, GraphKind::Tlg(topo))
        .map_err(|e| PyValueError::new_err(format!("graph: {e}")))?;
    let csr = pipeline::checked_csr(&g, graph).map_err(value_err)?;
    let blank = pipeline::ctc_blank_column(blank, tokens, None)
        .map_err(value_err)?
        .ok_or_else(|| PyValueError::new_err("blank: no score column"))?;
    let labels = tokens.map(|t| table_labels(t, blank)).transpose()?;
    Ok(Loaded::ctc(g, csr, blank, topo, labels, Default::default()))
}

/// A CTC decoder's TLG built from the model's labels and a word LM (`CtcDecoder.from_lm`),
/// cached; what the build did goes to `info`.
fn from_labels(
    labels: &[String],
    blank: Option<u32>,
    delimiter: Option<usize>,
    lm: &Path,
    opts: &LabelGraphOptions,
    info: &mut Settings,
) -> PyResult<Loaded> {
    let labels = CtcLabels::new(labels, blank.map(|b| b as usize), delimiter)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let built = label_graph(&labels, lm, opts).map_err(value_err)?;
    let map = labels.label_map();
    let csr = pipeline::checked_csr_mapped(&built.graph, lm, Some(&map)).map_err(value_err)?;
    use ctxbench::settings::Value;
    let vocab = built.graph.symbols.words.len() as i64;
    info.insert("words".into(), Value::Int(vocab));
    info.insert(
        "unspellable".into(),
        Value::Str(built.unspellable.join(" ")),
    );
    info.insert("cached".into(), Value::Bool(built.cached));
    info.insert("build_s".into(), Value::Float(built.seconds));
    if let Some(e) = &built.entry {
        info.insert("cache_entry".into(), Value::Str(e.display().to_string()));
    }
    let blank = labels.blank() as u32;
    Ok(Loaded::ctc(
        built.graph,
        csr,
        blank,
        opts.topology,
        Some(labels),
        built.spellings,
    ))
}

/// A hybrid model's HCLG: input labels pdf-ids + 1, or transition-ids mapped through the
/// transition model (final.mdl), whose pdf count is the score width.
fn load_hybrid(
    graph: &Path,
    words: &Path,
    transition_model: Option<&Path>,
    score_columns: Option<usize>,
) -> PyResult<Loaded> {
    let (map, width) = match transition_model {
        Some(p) => {
            if score_columns.is_some() {
                return Err(PyTypeError::new_err(
                    "score_columns: the transition model's pdf count is the width; give one of them",
                ));
            }
            let tm = ctx_core::transition::TransitionModel::read(p)
                .map_err(|e| PyValueError::new_err(format!("transition_model: {e}")))?;
            (Some(tm.pdf_of_transition_ids()), Some(tm.num_pdfs()))
        }
        None => (None, score_columns),
    };
    let g = ctx_graph::external::load_graph(graph, words, map.as_deref(), GraphKind::Hclg)
        .map_err(|e| PyValueError::new_err(format!("graph: {e}")))?;
    let csr = pipeline::checked_csr(&g, graph).map_err(value_err)?;
    Ok(Loaded {
        graph: g,
        csr,
        penalised: None,
        blank: None,
        width,
        silence: Vec::new(),
        frame_s: 0.01,
        topology: CtcTopology::Normal,
        labels: None,
        spellings: Default::default(),
    })
}

/// A `topology` argument.
fn topology(t: &str) -> PyResult<CtcTopology> {
    CtcTopology::parse(t).ok_or_else(|| {
        PyValueError::new_err(format!("topology: '{t}' is not one of normal, compact"))
    })
}

/// The labels of a token table (`<eps>` 0, then token `k` reads column `k − 1`), or `None`
/// when it cannot be read as one.
fn table_labels(tokens: &Path, blank: u32) -> PyResult<CtcLabels> {
    let table = ctx_core::symbols::SymbolTable::read(tokens)
        .map_err(|e| PyValueError::new_err(format!("tokens: {e}")))?;
    let n = table.iter().map(|(id, _)| id).max().unwrap_or(0) as usize;
    let labels: Vec<String> = (1..=n as u32)
        .map(|id| {
            table
                .symbol(id)
                .map_or_else(|| format!("<col{}>", id - 1), str::to_string)
        })
        .collect();
    CtcLabels::new(&labels, Some(blank as usize), None)
        .map_err(|e| PyValueError::new_err(format!("tokens: {}: {e}", tokens.display())))
}

#[pymethods]
impl Decoder {
    /// `model="ctc"`: either loads `graph` (an OpenFst TLG, input labels = token ids + 1) and
    /// `words` (its words table) — the blank is `blank`, else the `<blk>` of `tokens`, else
    /// column 0 — or, with `labels` and `lm`, builds the TLG of an ARPA LM over a model's
    /// labels (`CtcDecoder.from_lm`). `model="hybrid"`: loads an HCLG whose input labels are
    /// pdf-ids + 1, or Kaldi transition-ids with `transition_model` (final.mdl), over
    /// log-likelihood scores (`WfstDecoder`). Keyword settings are the CLI's, with the same
    /// defaults (a hybrid model's acoustic scale 0.1, frame shift 10 ms; a CTC model's 1, 40 ms).
    #[new]
    #[pyo3(signature = (graph=None, words=None, tokens=None, blank=None, frame_shift=None,
                        topology="normal", labels=None, lm=None, delimiter=None, cache_dir=None,
                        lexicon=None, model="ctc", transition_model=None, silence_columns=None,
                        score_columns=None, **settings))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        graph: Option<PathBuf>,
        words: Option<PathBuf>,
        tokens: Option<PathBuf>,
        blank: Option<u32>,
        frame_shift: Option<f64>,
        topology: &str,
        labels: Option<Vec<String>>,
        lm: Option<PathBuf>,
        delimiter: Option<usize>,
        cache_dir: Option<PathBuf>,
        lexicon: Option<PathBuf>,
        model: &str,
        transition_model: Option<PathBuf>,
        silence_columns: Option<Vec<u32>>,
        score_columns: Option<usize>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let hybrid = match model {
            "ctc" => false,
            "hybrid" => true,
            m => {
                return Err(PyValueError::new_err(format!(
                    "model: '{m}' is not one of ctc, hybrid"
                )))
            }
        };
        let frame_shift = frame_shift.unwrap_or(if hybrid { 0.01 } else { 0.04 });
        if !(frame_shift.is_finite() && frame_shift > 0.0) {
            return Err(PyValueError::new_err(format!(
                "frame_shift: {frame_shift} (seconds per row) must be a number above 0"
            )));
        }
        let topo = self::topology(topology)?;
        let (all, resolved) = resolve("CtcDecoder", settings)?;
        let common = Common::read(&all).map_err(value_err)?;
        let penalties = CtcPenalties::read(&all).map_err(value_err)?;
        let open = OpenVocab::read(&all).map_err(value_err)?;
        open.check().map_err(value_err)?;
        let mut decode = DecodeSettings::from_common(&common, if hybrid { 0.1 } else { 1.0 });
        penalties.apply(&mut decode);
        // The scale searched: the model kind's default unless set.
        let mut resolved = resolved;
        resolved.insert(
            "acoustic_scale".into(),
            ctxbench::settings::Value::Float(decode.config.acoustic_scale as f64),
        );
        let mut info = Settings::new();
        if !hybrid && (transition_model.is_some() || score_columns.is_some()) {
            return Err(PyTypeError::new_err(
                "transition_model, score_columns: settings of a hybrid model (WfstDecoder)",
            ));
        }
        let loaded = match (graph, words, labels, lm) {
            (Some(graph), Some(words), None, None) if hybrid => {
                if tokens.is_some() || blank.is_some() || lexicon.is_some() {
                    return Err(PyTypeError::new_err(
                        "tokens, blank, lexicon: settings of a CTC model (CtcDecoder)",
                    ));
                }
                load_hybrid(&graph, &words, transition_model.as_deref(), score_columns)?
            }
            (Some(graph), Some(words), None, None) => load_ctc(
                &graph,
                &words,
                blank,
                tokens.as_deref(),
                topo,
                lexicon.is_some(),
            )?,
            (None, None, Some(labels), Some(lm)) if !hybrid => {
                if tokens.is_some() {
                    // (A token table is the labels of a loaded graph.)
                    return Err(PyTypeError::new_err(
                        "tokens: a decoder built from labels takes no token table",
                    ));
                }
                let opts = LabelGraphOptions {
                    topology: topo,
                    slot_entry: Some(open.open_vocab_entry as f32),
                    cache: cache_dir,
                    lexicon,
                };
                from_labels(&labels, blank, delimiter, &lm, &opts, &mut info)?
            }
            _ => {
                return Err(PyTypeError::new_err(if hybrid {
                    "WfstDecoder(): give graph and words (an HCLG and its words table)"
                } else {
                    "CtcDecoder(): give graph and words (a TLG and its words table), or labels \
                     and lm (CtcDecoder.from_lm)"
                }))
            }
        };
        let mut loaded = loaded;
        if let Some(cols) = silence_columns {
            loaded.silence.extend(cols.iter().map(|c| c + 1));
        }
        loaded.frame_s = frame_shift;
        if let std::borrow::Cow::Owned(p) =
            pipeline::searched_graph(&loaded.search_graph(), &decode)
        {
            loaded.penalised = Some(p);
        }
        let engine = Engine::try_new(loaded, |o| {
            let searched = o.penalised.as_ref().unwrap_or(&o.csr);
            Searcher::new(&o.search_graph(), searched, &decode).map(Mutex::new)
        })
        .map_err(value_err)?;
        Ok(Self {
            engine,
            settings: decode,
            open,
            resolved,
            info,
            last: Mutex::new([0.0; 4]),
            contexts: Mutex::new(Default::default()),
        })
    }

    /// The resolved settings, by name.
    #[getter]
    fn settings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.resolved)
    }

    /// How a graph built from labels and an LM was made: `words` (the graph's word table),
    /// `unspellable` (LM words the labels cannot spell, space-separated), `cached`, `build_s`,
    /// `cache_entry`. Empty for a loaded graph.
    #[getter]
    fn graph_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.info)
    }

    /// The last `decode`/`decode_batch` call's seconds as the CLI counts them: `audio_s`
    /// (rows × frame shift), `decode_s` (the search; RTFx = audio_s / decode_s), `check_s`
    /// (the CTC input checks and blank penalty) and `inputs_s` (arrays handed to the search
    /// and admitted: width, frames, the f32-range check — the CLI's file reading), the last two
    /// outside RTFx as in the CLI.
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
        d.set_item("inputs_s", t[3])?;
        Ok(d)
    }

    /// The blank's score column (`None` for a hybrid model).
    #[getter]
    fn blank(&self) -> Option<u32> {
        self.engine.borrow_owner().blank
    }

    /// Whether the graph has the class slot (open-vocabulary `contexts=` work).
    #[getter]
    fn has_slot(&self) -> bool {
        self.engine
            .borrow_owner()
            .graph
            .symbols
            .context_slot()
            .is_some()
    }

    /// Decodes one `[T, V]` float32 array of log-probabilities; `contexts` are its phrases
    /// (strings at the `open_vocab_weight` setting, or `(phrase, weight)` pairs).
    #[pyo3(signature = (log_probs, contexts=None, nbest=0, lattice=false))]
    fn decode(
        &self,
        py: Python<'_>,
        log_probs: &Bound<'_, PyAny>,
        contexts: Option<&Bound<'_, PyAny>>,
        nbest: usize,
        lattice: bool,
    ) -> PyResult<Hypothesis> {
        let lent = lend(log_probs, "log_probs")?;
        let mats = vec![lent.matrix()?];
        let mut out = self.run(py, mats, None, contexts, Extras { nbest, lattice })?;
        drop(lent);
        Ok(out.remove(0))
    }

    /// Decodes a list of `[T, V]` float32 arrays (threads as the `threads` setting; the GIL
    /// is released while decoding). `ids` name the utterances in messages (default
    /// `log_probs[i]`); `contexts` is one list of phrases for all, or one list (or `None`)
    /// per utterance; `nbest` > 0 fills each hypothesis's n-best list and `lattices` its
    /// lattice.
    #[pyo3(signature = (log_probs, ids=None, contexts=None, nbest=0, lattices=false))]
    #[allow(clippy::too_many_arguments)]
    fn decode_batch(
        &self,
        py: Python<'_>,
        log_probs: Vec<Bound<'_, PyAny>>,
        ids: Option<Vec<String>>,
        contexts: Option<&Bound<'_, PyAny>>,
        nbest: usize,
        lattices: bool,
    ) -> PyResult<Vec<Hypothesis>> {
        // The arrays stay borrowed (read-only) until the call returns: the search reads them
        // in place.
        let lent = log_probs
            .iter()
            .enumerate()
            .map(|(i, a)| lend(a, &format!("log_probs[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        let mats = lent
            .iter()
            .map(Borrowed::matrix)
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
        let out = self.run(
            py,
            mats,
            ids,
            contexts,
            Extras {
                nbest,
                lattice: lattices,
            },
        );
        drop(lent);
        out
    }
}

/// What a call asks beyond the best path.
#[derive(Clone, Copy)]
struct Extras {
    /// Distinct word sequences per utterance (0: none).
    nbest: usize,
    /// The word lattice in Kaldi's text form.
    lattice: bool,
}

/// Compiles each utterance's phrases into a context graph (the cache shared across calls,
/// the GIL released); phrases with a word the labels cannot spell are left out with a
/// `UserWarning`.
fn compile_contexts(
    dec: &Decoder,
    py: Python<'_>,
    o: &Loaded,
    lists: Vec<Option<contexts::Phrases>>,
) -> PyResult<contexts::Compiled> {
    if o.graph.symbols.context_slot().is_none() {
        return Err(PyValueError::new_err(
            "contexts: the graph has no class slot (#CONTEXT): build it with \
                 CtcDecoder.from_lm, or export a TLG built with the slot",
        ));
    }
    let labels = o.labels.as_ref().ok_or_else(|| {
        PyValueError::new_err(
            "contexts: the decoder has no labels to spell phrases with (give tokens=)",
        )
    })?;
    let pause = dec.open.open_vocab_max_pause;
    let compiler = Compiler {
        labels,
        spellings: &o.spellings,
        topology: o.topology,
        words: &o.graph.symbols.words,
        max_blanks: (pause > 0.0).then(|| ((pause / o.frame_s).round() as u32).max(1)),
        word_insertion_penalty: dec.settings.word_insertion_penalty,
    };
    // Compiled with the GIL released (the cache locked there, as the search is).
    let c = py
        .detach(|| {
            let mut cache = dec
                .contexts
                .lock()
                .map_err(|_| anyhow::anyhow!("contexts: a previous call panicked"))?;
            compiler.compile(lists, &mut cache)
        })
        .map_err(value_err)?;
    if !c.unspellable.is_empty() {
        let msg = format!(
            "contexts: {} phrase(s) left out, a word the labels cannot spell: {}",
            c.unspellable.len(),
            c.unspellable.join(", ")
        );
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyUserWarning>(),
            &std::ffi::CString::new(msg).unwrap_or_default(),
            1,
        )?;
    }
    Ok(c)
}

impl Decoder {
    /// Compiles the contexts, searches the matrices (GIL released) and spells the best paths
    /// (and the n-best lists and lattices asked for).
    fn run(
        &self,
        py: Python<'_>,
        mats: Vec<ScoreMatrix>,
        ids: Option<Vec<String>>,
        contexts: Option<&Bound<'_, PyAny>>,
        extras: Extras,
    ) -> PyResult<Vec<Hypothesis>> {
        let n = mats.len();
        let o = self.engine.borrow_owner();
        let lists = contexts::parse(contexts, n, self.open.open_vocab_weight as f32)?;
        let with_contexts = lists.iter().any(Option::is_some);
        let compiled = if with_contexts {
            Some(compile_contexts(self, py, o, lists)?)
        } else {
            None
        };
        let durations = mats.iter().map(|m| m.rows() as f64 * o.frame_s).collect();
        let (contexts, boosters) =
            compiled.map_or((Vec::new(), Vec::new()), |c| (c.contexts, c.boosters));
        let inputs = Arrays {
            ids: ids.unwrap_or_else(|| (0..n).map(|i| format!("log_probs[{i}]")).collect()),
            durations,
            mats: mats.into_iter().map(|m| Mutex::new(Some(m))).collect(),
            rules: ScoreRules {
                need: o.graph.num_columns as usize,
                width: o.width,
                ctc: o.blank.is_some(),
                silence: &o.silence,
                acoustic_scale: self.settings.config.acoustic_scale,
            },
            contexts,
            boosters,
        };
        // The lock is taken with the GIL released: a second Python thread decoding with the
        // same decoder waits here, not holding the GIL the first needs to return.
        let run = py
            .detach(|| {
                self.engine.with_dependent(|_, searcher| {
                    searcher
                        .lock()
                        .map_err(|_| anyhow::anyhow!("decoder: a previous call panicked"))?
                        .run(&inputs, with_contexts)
                })
            })
            .map_err(value_err)?;
        if let Ok(mut t) = self.last.lock() {
            *t = [run.audio_s, run.decode_s, run.check_s, run.sim_s];
        }
        let scale = self.settings.config.acoustic_scale;
        run.results
            .iter()
            .map(|r| hypothesis(r, o, &run, &extras, scale))
            .collect()
    }
}

/// Utterance `r`'s hypothesis: its words with times, cost, and the n-best list and lattice
/// `extras` asks for.
fn hypothesis(
    r: &wfst_search::UtteranceResult,
    o: &Loaded,
    run: &pipeline::DecodeRun,
    extras: &Extras,
    scale: f32,
) -> PyResult<Hypothesis> {
    let spell = |w: u32| pipeline::spell_word(&o.graph.symbols.words, &run.open_words, w);
    let spell_all = |ws: &[u32]| ws.iter().map(|&w| spell(w)).collect::<Vec<_>>().join(" ");
    let nbest = match (extras.nbest, r.segments.as_slice()) {
        (0, _) => Vec::new(),
        (n, [seg]) => {
            let lat = seg.lattice.as_ref().ok_or_else(|| {
                PyValueError::new_err(format!(
                    "nbest: {}: no lattice recorded (the decoder was built with lattice=False)",
                    r.id
                ))
            })?;
            lat.n_best(n)
                .iter()
                .map(|p| (spell_all(&p.words), p.cost() as f64))
                .collect()
        }
        (_, segs) => {
            return Err(PyValueError::new_err(format!(
                "nbest: {} was split into {} segments at endpoints; decode with \
                 endpointing=False for its n-best list",
                r.id,
                segs.len()
            )))
        }
    };
    let lattice = if extras.lattice {
        let mut text = String::new();
        ctxbench::kaldi_lattice::write_utterance(&mut text, r, scale)
            .map_err(|e| PyValueError::new_err(format!("lattices: {e:#}")))?;
        Some(spell_lattice(&text, &spell))
    } else {
        None
    };
    let timed: Vec<TimedWord> = r
        .segments
        .iter()
        .flat_map(|seg| pipeline::timed_words(o.frame_s, seg, &seg.best))
        .collect();
    let words: Vec<Word> = timed
        .iter()
        .map(|t| Word {
            word: spell(t.word),
            start: t.start_s,
            end: t.start_s + t.dur_s,
        })
        .collect();
    Ok(Hypothesis {
        text: words
            .iter()
            .map(|w| w.word.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        words,
        cost: r.segments.iter().map(|s| s.best.cost() as f64).sum(),
        nbest,
        lattice,
    })
}

/// A Kaldi text lattice with the word ids of its arc lines (`src dst word weight`) spelled
/// (`<eps>` for the ε arcs that join endpointed segments).
fn spell_lattice(text: &str, spell: &dyn Fn(u32) -> String) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            [a, b, w, rest] => {
                let word = match w.parse::<u32>() {
                    Ok(0) => "<eps>".to_string(),
                    Ok(id) => spell(id),
                    Err(_) => w.to_string(),
                };
                out.push_str(&format!("{a}\t{b}\t{word}\t{rest}"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

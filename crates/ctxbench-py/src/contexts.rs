//! Open-vocabulary contexts from Python (`contexts=` of `decode` / `decode_batch`): phrases
//! with weights, one list for a whole call or one per utterance, compiled over the model's
//! labels into context graphs entered through the graph's class slot — the CLI's
//! `--open-vocab`, words the graph lacks included. A phrase with a negative weight is
//! a penalty on the graph's own paths that write it, as in the CLI.

use ctx_core::context_list::{ContextList, ContextPhrase};
use ctx_core::symbols::SymbolTable;
use ctx_graph::context::ContextGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::labels::CtcLabels;
use ctxbench::methods::components::open_vocab::context_of;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::collections::BTreeMap;
use std::sync::Arc;
use wfst_search::Booster;

/// One utterance's phrases as Python gave them (a string may hold NeMo's spellings,
/// `word_spelling1_spelling2`).
pub(crate) type Phrases = Vec<ContextPhrase>;

/// `contexts` as each of `n` utterances' phrases: `None`; one list of phrases for all (each a
/// string, at `weight`, or a `(string, weight)` pair); or a list of `n` such lists (or `None`),
/// one per utterance. Errors name the argument's element.
pub(crate) fn parse(
    contexts: Option<&Bound<'_, PyAny>>,
    n: usize,
    weight: f32,
) -> PyResult<Vec<Option<Phrases>>> {
    let Some(c) = contexts.filter(|c| !c.is_none()) else {
        return Ok(vec![None; n]);
    };
    let list = c.cast::<PyList>().map_err(|_| {
        PyTypeError::new_err(format!(
            "contexts: expected a list of phrases (or one list per utterance), got {}",
            type_name(c)
        ))
    })?;
    let per_utterance = list
        .iter()
        .next()
        .is_some_and(|e| e.is_none() || e.is_instance_of::<PyList>());
    if !per_utterance {
        let one = phrases(list, "contexts", weight)?;
        return Ok(vec![(!one.is_empty()).then_some(one); n]);
    }
    if list.len() != n {
        return Err(PyValueError::new_err(format!(
            "contexts: {} lists for {n} utterances",
            list.len()
        )));
    }
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            if e.is_none() {
                return Ok(None);
            }
            let what = format!("contexts[{i}]");
            let l = e.cast::<PyList>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what}: expected a list of phrases or None, got {}",
                    type_name(&e)
                ))
            })?;
            let p = phrases(l, &what, weight)?;
            Ok((!p.is_empty()).then_some(p))
        })
        .collect()
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map_or("?".into(), |n| n.to_string())
}

/// A list of phrases: strings (at `weight`) or `(string, weight)` pairs.
fn phrases(list: &Bound<'_, PyList>, what: &str, weight: f32) -> PyResult<Phrases> {
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            let what = format!("{what}[{i}]");
            let (text, w): (String, f32) = if e.is_instance_of::<PyString>() {
                (e.extract()?, weight)
            } else if let Ok(t) = e.cast::<PyTuple>() {
                let bad = || {
                    PyTypeError::new_err(format!(
                        "{what}: expected (phrase, weight), got a tuple of {} items",
                        t.len()
                    ))
                };
                if t.len() != 2 {
                    return Err(bad());
                }
                let text: String = t.get_item(0)?.extract().map_err(|_| bad())?;
                let w: f64 = t.get_item(1)?.extract().map_err(|_| {
                    PyTypeError::new_err(format!("{what}: the weight is not a number"))
                })?;
                if !(w.is_finite() && w.abs() <= 1000.0) {
                    return Err(PyValueError::new_err(format!(
                        "{what}: weight {w}: a cost in graph units, finite and at most 1000 in magnitude"
                    )));
                }
                (text, w as f32)
            } else {
                return Err(PyTypeError::new_err(format!(
                    "{what}: expected a phrase (str) or (phrase, weight), got {}",
                    type_name(&e)
                )));
            };
            match ContextPhrase::parse(&text, w, false, None) {
                Ok(Some(p)) => Ok(p),
                Ok(None) => Err(PyValueError::new_err(format!("{what}: an empty phrase"))),
                Err(msg) => Err(PyValueError::new_err(format!("{what}: {msg}"))),
            }
        })
        .collect()
}

/// How a decoder compiles contexts: its labels (spelling), its graph's topology and words, the
/// bound on blanks inside a phrase, the word insertion penalty and the label map of its columns.
pub(crate) struct Compiler<'a> {
    pub labels: &'a CtcLabels,
    /// Words a lexicon spells (unit ids), spelled so before the labels' own spelling.
    pub spellings: &'a std::collections::HashMap<String, Vec<u32>>,
    pub topology: CtcTopology,
    pub words: &'a SymbolTable,
    pub max_blanks: Option<u32>,
    pub word_insertion_penalty: f32,
}

/// Each utterance's context graph and booster, and the phrases no label spelling could make.
pub(crate) struct Compiled {
    pub contexts: Vec<Option<Arc<ContextGraph>>>,
    pub boosters: Vec<Booster>,
    pub unspellable: Vec<String>,
}

/// Compiled lists by their phrases (words and weight bits): a decoder's cache across calls.
pub(crate) type Cache = BTreeMap<Vec<CacheKey>, (Option<Arc<ContextGraph>>, Booster)>;

/// A phrase as the cache knows it: words, spellings, weight's bits.
pub(crate) type CacheKey = (Vec<String>, Vec<Vec<String>>, u32);

/// Lists a decoder keeps compiled; past this the cache starts over.
const CACHE_LISTS: usize = 1024;

impl Compiler<'_> {
    /// Compiles each distinct list once (kept in `cache` across calls): phrases of positive
    /// weight into a context graph over the labels (mapped onto the model's columns), negative
    /// ones into a penalty automaton on the graph's own words.
    pub(crate) fn compile(
        &self,
        lists: Vec<Option<Phrases>>,
        cache: &mut Cache,
    ) -> anyhow::Result<Compiled> {
        let map = self.labels.label_map();
        let mut out = Compiled {
            contexts: Vec::with_capacity(lists.len()),
            boosters: Vec::with_capacity(lists.len()),
            unspellable: Vec::new(),
        };
        for p in lists {
            let Some(p) = p else {
                out.contexts.push(None);
                out.boosters.push(Booster::None);
                continue;
            };
            let key: Vec<CacheKey> = p
                .iter()
                .map(|c| (c.words.clone(), c.spellings.clone(), c.weight.to_bits()))
                .collect();
            if !cache.contains_key(&key) {
                if cache.len() >= CACHE_LISTS {
                    cache.clear();
                }
                let built = self.compile_one(p, &map)?;
                cache.insert(key.clone(), built);
            }
            let (context, booster) = &cache[&key];
            if let Some(g) = context {
                out.unspellable.extend(g.unspellable.iter().cloned());
            }
            out.contexts.push(context.clone());
            out.boosters.push(booster.clone());
        }
        out.unspellable.sort();
        out.unspellable.dedup();
        Ok(out)
    }

    /// One list's context graph and penalty booster (the CLI's rule, `context_of`), the graph
    /// spelled in the labels and mapped onto the model's columns.
    fn compile_one(
        &self,
        p: Phrases,
        map: &[u32],
    ) -> anyhow::Result<(Option<Arc<ContextGraph>>, Booster)> {
        let list = ContextList { phrases: p };
        let (context, pen) =
            context_of(&list, self.words, self.word_insertion_penalty, |offered| {
                let mut g = ContextGraph::compile(
                    offered,
                    |w| {
                        self.spellings
                            .get(w)
                            .cloned()
                            .or_else(|| self.labels.spell(w))
                    },
                    self.topology,
                    self.max_blanks,
                )?;
                g.graph.map_input_labels(map)?;
                Ok(g)
            })?;
        Ok((context, pen.map_or(Booster::None, |(b, _)| b)))
    }
}

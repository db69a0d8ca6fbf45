//! The context registry: biasing contexts loaded by name into sorted, de-duplicated arrays of
//! HCLG arc indices (000 Algorithm 1), all in one buffer — the pool — with an offset per
//! context, so a device holds every context once and a stream's switch changes an offset.
//!
//! A context is added from a phrase list (a file, a global list, a per-utterance or
//! per-document list: the caller reads it, see [`ctx_core::bias::BiasList`]) and removed by
//! name while streams run; neither touches the graph. Removal leaves a hole that later
//! compaction closes (the pool's layout generation then changes, and every context's slot with
//! it). Each context reports its phrases, out-of-vocabulary phrases, arcs and bytes.
//!
//! A context may also carry an open-vocabulary graph ([`ContextRegistry::set_open`]):
//! its phrases compiled over the graph's input units, entered through the graph's class slot,
//! so that phrases with words the graph lacks are decoded too (out-of-vocabulary phrases are
//! what arc boosting drops).

use crate::error::{HclgBoostError, Result};
use ctx_core::bias::BiasList;
use ctx_core::symbols::SymbolTable;
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::phrase_arcs::PhraseArcFinder;
use lattice_rescorer::PhraseIds;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use wfst_search::{ArcSetBooster, Booster, PhraseAutomaton, PoolSlot};

/// What loading a context found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContextReport {
    /// The context's name.
    pub name: String,
    /// Phrases in the list (empty ones ignored).
    pub phrases: usize,
    /// Phrases whose every word is in the graph's vocabulary (duplicates counted once).
    pub kept: usize,
    /// Phrases dropped for an out-of-vocabulary word.
    pub oov_phrases: usize,
    /// Out-of-vocabulary words (with repetition).
    pub oov_words: usize,
    /// Kept phrases the graph can output whole (the others boost only their found prefix).
    pub spelled: usize,
    /// Boosted arcs (the length of its sorted array).
    pub arcs: usize,
    /// Bytes of its array in the pool (what a device holds per context).
    pub pool_bytes: usize,
    /// Bytes of the CPU backend's lookup tables for it (sorted array, bitmap, state marks).
    pub host_bytes: usize,
    /// Phrases of its open-vocabulary graph (0 without one).
    pub open_phrases: usize,
}

impl ContextReport {
    /// Why a stream with this context decodes unbiased, if it does (an empty list, every
    /// phrase out of vocabulary, or no arc of the graph spells any of them).
    pub fn warning(&self) -> Option<String> {
        if self.arcs > 0 || self.open_phrases > 0 {
            return None;
        }
        let why = if self.phrases == 0 {
            "the list is empty".to_string()
        } else if self.kept == 0 {
            format!(
                "all {} phrases have an out-of-vocabulary word",
                self.phrases
            )
        } else {
            format!(
                "no arc of the graph outputs any of its {} phrases",
                self.kept
            )
        };
        Some(format!(
            "context '{}': {why}; streams using it decode unbiased",
            self.name
        ))
    }
}

/// One loaded context.
#[derive(Debug, Clone)]
struct Context {
    report: ContextReport,
    offset: u32,
    booster: ArcSetBooster,
    automaton: Option<PhraseAutomaton>,
    open: Option<Arc<ContextGraph>>,
}

/// Pool identities (unique per process, so a device never mistakes one registry's pool for
/// another's).
static NEXT_POOL: AtomicU64 = AtomicU64::new(1);

/// The registry of one decoding graph (see the module docs).
#[derive(Debug)]
pub struct ContextRegistry<'g> {
    graph: &'g DecodingGraph,
    words: &'g SymbolTable,
    finder: PhraseArcFinder<'g>,
    discount: f32,
    lattice_discount: f32,
    id: u64,
    generation: u64,
    pool: Vec<u32>,
    holes: usize,
    contexts: BTreeMap<String, Context>,
}

impl<'g> ContextRegistry<'g> {
    /// An empty registry for `graph` (whose output labels are ids of `words`): boosted arcs
    /// earn `discount` during the search (000: −2.0), and lattice biasing at endpoints uses
    /// `lattice_discount` per word (≤ 0).
    pub fn new(
        graph: &'g DecodingGraph,
        words: &'g SymbolTable,
        discount: f32,
        lattice_discount: f32,
    ) -> Result<Self> {
        if !discount.is_finite() {
            return Err(HclgBoostError::Config(format!(
                "arc discount {discount} is not finite"
            )));
        }
        if !(lattice_discount.is_finite() && lattice_discount <= 0.0) {
            return Err(HclgBoostError::Config(format!(
                "lattice discount {lattice_discount} must be finite and ≤ 0 (a boost)"
            )));
        }
        Ok(Self {
            graph,
            words,
            finder: PhraseArcFinder::new(graph),
            discount,
            lattice_discount,
            id: NEXT_POOL.fetch_add(1, Ordering::Relaxed),
            generation: 0,
            pool: Vec::new(),
            holes: 0,
            contexts: BTreeMap::new(),
        })
    }

    /// The graph the arc indices belong to.
    pub fn graph(&self) -> &'g DecodingGraph {
        self.graph
    }

    /// Loads one context (see [`Self::add_many`]).
    pub fn add(&mut self, name: &str, list: &BiasList) -> Result<ContextReport> {
        let mut r = self.add_many(&[(name.to_string(), list.clone())])?;
        Ok(r.pop().expect("one report per context"))
    }

    /// Loads contexts: each list's phrases mapped to word ids (phrases with an
    /// out-of-vocabulary word dropped and counted), Algorithm 1 over all lists at once (a
    /// prefix shared by several lists is searched once), each array appended to the pool. A
    /// name already loaded (or given twice) is an error and nothing is loaded. An empty or
    /// all-OOV list loads as a context without arcs ([`ContextReport::warning`] says so).
    pub fn add_many(&mut self, lists: &[(String, BiasList)]) -> Result<Vec<ContextReport>> {
        let mut names = std::collections::BTreeSet::new();
        for (n, _) in lists {
            if self.contexts.contains_key(n) || !names.insert(n.as_str()) {
                return Err(HclgBoostError::DuplicateContext(n.clone()));
            }
        }
        let ids: Vec<PhraseIds> = lists
            .iter()
            .map(|(_, l)| PhraseIds::new(l, self.words))
            .collect();
        let phrases: Vec<&[Vec<u32>]> = ids.iter().map(|i| i.phrases.as_slice()).collect();
        let found = self.finder.find_lists(&phrases);
        let mut out = Vec::with_capacity(lists.len());
        for (k, ((name, _), ids)) in lists.iter().zip(&ids).enumerate() {
            let arcs = found.list(k);
            let booster = ArcSetBooster::new(self.graph, arcs.arcs.clone(), self.discount)?;
            let automaton = if ids.is_empty() {
                None
            } else {
                Some(PhraseAutomaton::new(&ids.phrases, self.lattice_discount)?)
            };
            let offset = self.pool.len() as u32;
            self.pool.extend_from_slice(booster.arcs());
            let report = ContextReport {
                name: name.clone(),
                phrases: ids.report.phrases,
                kept: ids.report.kept,
                oov_phrases: ids.report.dropped,
                oov_words: ids.report.oov_words,
                spelled: arcs.spelled,
                arcs: booster.arcs().len(),
                pool_bytes: 4 * booster.arcs().len(),
                host_bytes: booster.heap_bytes(),
                open_phrases: 0,
            };
            let booster = booster.with_slot(self.slot(offset));
            self.contexts.insert(
                name.clone(),
                Context {
                    report: report.clone(),
                    offset,
                    booster,
                    automaton,
                    open: None,
                },
            );
            out.push(report);
        }
        Ok(out)
    }

    /// Removes a context (its array becomes a hole in the pool; the pool is compacted when
    /// holes make up more than half of it). Streams that still hold its booster keep decoding
    /// with their own shared copy; the online pipeline refuses to remove a context in use.
    pub fn remove(&mut self, name: &str) -> Result<ContextReport> {
        let c = self
            .contexts
            .remove(name)
            .ok_or_else(|| HclgBoostError::UnknownContext(name.to_string()))?;
        self.holes += c.report.arcs;
        if 2 * self.holes > self.pool.len() {
            self.compact();
        }
        Ok(c.report)
    }

    /// Closes the pool's holes: arrays move, the layout generation changes.
    pub fn compact(&mut self) {
        if self.holes == 0 {
            return;
        }
        self.generation += 1;
        let mut pool = Vec::with_capacity(self.pool.len() - self.holes);
        let slot = |offset| PoolSlot {
            pool: self.id,
            generation: self.generation,
            offset,
        };
        for c in self.contexts.values_mut() {
            let start = c.offset as usize;
            let offset = pool.len() as u32;
            pool.extend_from_slice(&self.pool[start..start + c.report.arcs]);
            c.offset = offset;
            c.booster = c.booster.clone().with_slot(slot(offset));
        }
        self.pool = pool;
        self.holes = 0;
    }

    fn slot(&self, offset: u32) -> PoolSlot {
        PoolSlot {
            pool: self.id,
            generation: self.generation,
            offset,
        }
    }

    fn get(&self, name: &str) -> Result<&Context> {
        self.contexts
            .get(name)
            .ok_or_else(|| HclgBoostError::UnknownContext(name.to_string()))
    }

    /// Attaches an open-vocabulary graph to a loaded context (or, with `None`, removes it):
    /// streams with this context follow it through the decoding graph's class slot from their
    /// next segment on. The graph is shared, not copied.
    pub fn set_open(&mut self, name: &str, graph: Option<Arc<ContextGraph>>) -> Result<()> {
        let c = self
            .contexts
            .get_mut(name)
            .ok_or_else(|| HclgBoostError::UnknownContext(name.to_string()))?;
        c.report.open_phrases = graph.as_ref().map_or(0, |g| g.phrases);
        c.open = graph;
        Ok(())
    }

    /// A context's open-vocabulary graph, if it has one.
    pub fn open_graph(&self, name: &str) -> Result<Option<&Arc<ContextGraph>>> {
        Ok(self.get(name)?.open.as_ref())
    }

    /// Whether a context of this name is loaded.
    pub fn contains(&self, name: &str) -> bool {
        self.contexts.contains_key(name)
    }

    /// The booster a stream with this context decodes with (no copy: shared arrays); a context
    /// without arcs gives no booster.
    pub fn booster(&self, name: &str) -> Result<Booster> {
        let c = self.get(name)?;
        Ok(if c.report.arcs == 0 {
            Booster::None
        } else {
            Booster::ArcSet(c.booster.clone())
        })
    }

    /// The phrase-prefix automaton lattice biasing at endpoints composes with (`None`: no
    /// phrase in the vocabulary).
    pub fn automaton(&self, name: &str) -> Result<Option<&PhraseAutomaton>> {
        Ok(self.get(name)?.automaton.as_ref())
    }

    /// A context's report.
    pub fn report(&self, name: &str) -> Result<&ContextReport> {
        Ok(&self.get(name)?.report)
    }

    /// Every context's report, by name.
    pub fn reports(&self) -> impl Iterator<Item = &ContextReport> {
        self.contexts.values().map(|c| &c.report)
    }

    /// Contexts loaded.
    pub fn len(&self) -> usize {
        self.contexts.len()
    }

    /// Whether none is loaded.
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }

    /// A context's array as it lies in the pool (sorted, unique).
    pub fn pool_arcs(&self, name: &str) -> Result<&[u32]> {
        let c = self.get(name)?;
        let o = c.offset as usize;
        Ok(&self.pool[o..o + c.report.arcs])
    }

    /// The pool: every context's array, each at its offset (holes included until compaction).
    pub fn pool(&self) -> &[u32] {
        &self.pool
    }

    /// (pool identity, layout generation): what a device copy of the pool is keyed by.
    pub fn pool_key(&self) -> (u64, u64) {
        (self.id, self.generation)
    }

    /// Pool elements left by removed contexts (until compaction).
    pub fn holes(&self) -> usize {
        self.holes
    }

    /// The arc discount during the search.
    pub fn discount(&self) -> f32 {
        self.discount
    }
}

//! The lexicon transducer L (units → words) with Kaldi-style disambiguation symbols.
//!
//! Units are phones for hybrid graphs and BPE pieces for CTC graphs. L has one loop state (start
//! and final); each pronunciation is a chain from it back to it whose first arc outputs the word.
//! A pronunciation that is shared by several words, or is a proper prefix of another, ends with a
//! disambiguation unit `#1`, `#2`, ... (Kaldi's `add_lex_disambig.pl`), so that L ∘ G can be
//! determinized; `#0` passes G's back-off arcs (a `#0:#0` self-loop). An optional silence unit is a
//! self-loop of the loop state (input-epsilon free, so determinization needs no epsilon removal).

use crate::error::{GraphError, Result};
use crate::StdFst;
use ctx_core::arpa::{BOS, EOS};
use ctx_core::lexicon::Lexicon;
use ctx_core::symbols::SymbolTable;
use rustfst::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The word of the class slot through which the search enters a stream's context graph
/// (Kaldi's GrammarFst nonterminals): in L it is spelled by one disambiguation unit
/// of its own, so after disambiguation removal the graph holds it as ε-input arcs.
pub const CONTEXT_SLOT: &str = "#CONTEXT";

/// Optional silence between words: a self-loop of L's loop state.
#[derive(Debug, Clone, PartialEq)]
pub struct SilenceOptions {
    /// The silence unit (must be in the unit inventory), e.g. `SIL`.
    pub unit: String,
    /// Probability of a silence; the loop costs −ln(prob).
    pub prob: f32,
}

/// The symbol tables of a graph and where the disambiguation symbols sit in them.
#[derive(Debug, Clone, PartialEq)]
pub struct LangSymbols {
    /// `<eps>` = 0, the lexicon's words sorted, then `#0`, `<s>`, `</s>` (Kaldi's `words.txt`).
    pub words: SymbolTable,
    /// `<eps>` = 0, the units 1..=`num_units` in the given order, then `#0`..`#K`.
    pub units: SymbolTable,
    /// Number of real units (phones or pieces).
    pub num_units: u32,
    /// Number of unit disambiguation symbols (`#0` included).
    pub num_disambig: u32,
    /// The id of `#0` in the word table (G's back-off label).
    pub word_disambig: u32,
}

impl LangSymbols {
    /// The unit-table id of disambiguation symbol `#k`.
    pub fn unit_disambig(&self, k: u32) -> u32 {
        self.num_units + 1 + k
    }

    /// Whether a unit-table id is a disambiguation symbol.
    pub fn is_unit_disambig(&self, id: u32) -> bool {
        id > self.num_units
    }

    /// The word id of the context slot ([`CONTEXT_SLOT`]), when the graph was built with one.
    pub fn context_slot(&self) -> Option<u32> {
        self.words.id(CONTEXT_SLOT)
    }

    /// Word labels a decoder may output (every word except `#0`, `<s>`, `</s>`), ascending.
    pub fn word_labels(&self) -> Vec<u32> {
        (1..self.word_disambig).collect()
    }

    /// Rebuilds the bookkeeping from stored tables (`#0` in both, units before it).
    pub fn from_tables(words: SymbolTable, units: SymbolTable) -> Result<Self> {
        let word_disambig = words
            .id("#0")
            .ok_or_else(|| GraphError::Invalid("word table has no #0".into()))?;
        let first = units
            .id("#0")
            .ok_or_else(|| GraphError::Invalid("unit table has no #0".into()))?;
        let max = units.max_id().unwrap_or(0);
        Ok(Self {
            words,
            units,
            num_units: first - 1,
            num_disambig: max - first + 1,
            word_disambig,
        })
    }
}

/// Adds an optional `unit` between words (a filler such as a noise phone): a self-loop of L's
/// loop state writing nothing, costing `cost`.
pub fn add_unit_loop(l: &mut LexiconFst, unit: &str, cost: f32) -> Result<()> {
    let id = l
        .symbols
        .units
        .id(unit)
        .filter(|&id| id >= 1 && id <= l.symbols.num_units)
        .ok_or_else(|| GraphError::Invalid(format!("unit '{unit}' is not in L's inventory")))?;
    if !(cost.is_finite() && cost >= 0.0) {
        return Err(GraphError::Invalid(format!(
            "cost {cost} of optional unit '{unit}' must be finite and non-negative"
        )));
    }
    let s = l
        .fst
        .start()
        .ok_or_else(|| GraphError::Invalid("L has no loop state".into()))?;
    l.fst
        .add_tr(s, Tr::new(id, 0, cost, s))
        .map_err(|e| GraphError::fst("L", e))
}

/// L with its symbol tables.
#[derive(Debug, Clone)]
pub struct LexiconFst {
    /// The transducer, units (with disambiguation) in, words out.
    pub fst: StdFst,
    /// Its symbol tables.
    pub symbols: LangSymbols,
}

/// Builds L from a lexicon over the given unit inventory (ids 1.. in this order).
///
/// Errors name the word whose pronunciation uses a unit outside the inventory, and refuse the
/// reserved words `<eps>`, `<s>`, `</s>` and words starting with `#`.
pub fn build_lexicon_fst(
    lexicon: &Lexicon,
    units: &[String],
    silence: Option<&SilenceOptions>,
) -> Result<LexiconFst> {
    build_lexicon_fst_with(lexicon, units, silence, false)
}

/// [`build_lexicon_fst`], with the context slot when `slot` is set: the word [`CONTEXT_SLOT`]
/// after `</s>` in the word table, spelled by the last disambiguation unit (one more than the
/// lexicon needs), a self-loop of the loop state.
pub fn build_lexicon_fst_with(
    lexicon: &Lexicon,
    units: &[String],
    silence: Option<&SilenceOptions>,
    slot: bool,
) -> Result<LexiconFst> {
    build_lexicon_fst_impl(lexicon, units, silence, slot, None)
}

/// [`build_lexicon_fst`] where units of one class sound the same to the acoustic model
/// (`class_of_unit[u − 1]`; e.g. a base phone's word-position variants, which can share a
/// triphone): homophones and prefixes are found among the pronunciations' class sequences,
/// so L ∘ G stays determinizable once the units are replaced by what the model hears. With
/// `slot`, the context slot as in [`build_lexicon_fst_with`].
pub fn build_lexicon_fst_by_class(
    lexicon: &Lexicon,
    units: &[String],
    silence: Option<&SilenceOptions>,
    class_of_unit: &[u32],
    slot: bool,
) -> Result<LexiconFst> {
    if class_of_unit.len() != units.len() {
        return Err(GraphError::Invalid(format!(
            "{} unit classes for {} units",
            class_of_unit.len(),
            units.len()
        )));
    }
    build_lexicon_fst_impl(lexicon, units, silence, slot, Some(class_of_unit))
}

fn build_lexicon_fst_impl(
    lexicon: &Lexicon,
    units: &[String],
    silence: Option<&SilenceOptions>,
    slot: bool,
    class_of_unit: Option<&[u32]>,
) -> Result<LexiconFst> {
    let mut unit_ids: HashMap<&str, u32> = HashMap::new();
    for (i, u) in units.iter().enumerate() {
        if u == "<eps>" || u.starts_with('#') {
            return Err(GraphError::Invalid(format!(
                "unit inventory: '{u}' is reserved (epsilon or disambiguation symbol)"
            )));
        }
        if unit_ids.insert(u.as_str(), i as u32 + 1).is_some() {
            return Err(GraphError::Invalid(format!(
                "unit inventory: '{u}' is listed twice"
            )));
        }
    }
    if lexicon.is_empty() {
        return Err(GraphError::Invalid("the lexicon is empty".into()));
    }

    // Pronunciations as unit ids, checked.
    let mut prons: Vec<(String, Vec<u32>, f32)> = Vec::with_capacity(lexicon.len());
    for e in lexicon.entries() {
        if e.word == "<eps>" || e.word == BOS || e.word == EOS || e.word.starts_with('#') {
            return Err(GraphError::Invalid(format!(
                "lexicon word '{}' is reserved for the graph",
                e.word
            )));
        }
        if e.phones.is_empty() {
            return Err(GraphError::Invalid(format!(
                "lexicon word '{}' has an empty pronunciation",
                e.word
            )));
        }
        let mut ids = Vec::with_capacity(e.phones.len());
        for p in &e.phones {
            match unit_ids.get(p.as_str()) {
                Some(&id) => ids.push(id),
                None => {
                    return Err(GraphError::Invalid(format!(
                        "lexicon word '{}': unit '{p}' is not in the unit inventory ({} units)",
                        e.word,
                        units.len()
                    )))
                }
            }
        }
        if !(e.prob > 0.0 && e.prob.is_finite()) {
            return Err(GraphError::Invalid(format!(
                "lexicon word '{}': pronunciation probability {} is not positive",
                e.word, e.prob
            )));
        }
        prons.push((e.word.clone(), ids, e.prob));
    }

    // Disambiguation (add_lex_disambig.pl): homophones and prefixes get #1, #2, ... — among
    // the class sequences when units have classes.
    let heard: Vec<Vec<u32>> = prons
        .iter()
        .map(|(_, p, _)| match class_of_unit {
            Some(c) => p.iter().map(|&u| c[u as usize - 1]).collect(),
            None => p.clone(),
        })
        .collect();
    let mut count: HashMap<&[u32], u32> = HashMap::new();
    let mut prefixes: HashSet<&[u32]> = HashSet::new();
    for p in &heard {
        *count.entry(p.as_slice()).or_default() += 1;
        for k in 1..p.len() {
            prefixes.insert(&p[..k]);
        }
    }
    let mut last_used: HashMap<&[u32], u32> = HashMap::new();
    let mut disambig_of: Vec<Option<u32>> = Vec::with_capacity(prons.len());
    let mut max_disambig = 0;
    for p in &heard {
        if count[p.as_slice()] > 1 || prefixes.contains(p.as_slice()) {
            let k = last_used.entry(p.as_slice()).or_default();
            *k += 1;
            max_disambig = max_disambig.max(*k);
            disambig_of.push(Some(*k));
        } else {
            disambig_of.push(None);
        }
    }

    // Symbol tables.
    let mut words = SymbolTable::with_epsilon();
    let word_set: BTreeSet<&str> = lexicon.words();
    for w in &word_set {
        words.add(w);
    }
    let word_disambig = words.add("#0");
    words.add(BOS);
    words.add(EOS);
    let slot_word = slot.then(|| words.add(CONTEXT_SLOT));
    let last_disambig = max_disambig + u32::from(slot);
    let mut unit_table = SymbolTable::with_epsilon();
    for u in units {
        unit_table.add(u);
    }
    for k in 0..=last_disambig {
        unit_table.add(&format!("#{k}"));
    }
    let symbols = LangSymbols {
        words,
        units: unit_table,
        num_units: units.len() as u32,
        num_disambig: last_disambig + 1,
        word_disambig,
    };

    // The transducer.
    let mut fst = StdFst::new();
    let loop_state = fst.add_state();
    fst.set_start(loop_state)
        .map_err(|e| GraphError::fst("L", e))?;
    fst.set_final(loop_state, TropicalWeight::one())
        .map_err(|e| GraphError::fst("L", e))?;
    for ((word, p, prob), dis) in prons.iter().zip(&disambig_of) {
        let wid = symbols.words.id(word).expect("word was added");
        let mut labels: Vec<u32> = p.clone();
        if let Some(k) = dis {
            labels.push(symbols.unit_disambig(*k));
        }
        let mut src = loop_state;
        for (i, &lab) in labels.iter().enumerate() {
            let last = i + 1 == labels.len();
            let dst = if last { loop_state } else { fst.add_state() };
            let (olabel, cost) = if i == 0 { (wid, -prob.ln()) } else { (0, 0.0) };
            fst.add_tr(src, Tr::new(lab, olabel, cost, dst))
                .map_err(|e| GraphError::fst("L", e))?;
            src = dst;
        }
    }
    if let Some(sil) = silence {
        let sid = *unit_ids.get(sil.unit.as_str()).ok_or_else(|| {
            GraphError::Invalid(format!(
                "silence unit '{}' is not in the unit inventory",
                sil.unit
            ))
        })?;
        if !(sil.prob > 0.0 && sil.prob < 1.0) {
            return Err(GraphError::Invalid(format!(
                "silence probability {} must be in (0, 1)",
                sil.prob
            )));
        }
        fst.add_tr(loop_state, Tr::new(sid, 0, -sil.prob.ln(), loop_state))
            .map_err(|e| GraphError::fst("L", e))?;
    }
    fst.add_tr(
        loop_state,
        Tr::new(symbols.unit_disambig(0), word_disambig, 0.0, loop_state),
    )
    .map_err(|e| GraphError::fst("L", e))?;
    if let Some(w) = slot_word {
        fst.add_tr(
            loop_state,
            Tr::new(symbols.unit_disambig(last_disambig), w, 0.0, loop_state),
        )
        .map_err(|e| GraphError::fst("L", e))?;
    }
    Ok(LexiconFst { fst, symbols })
}

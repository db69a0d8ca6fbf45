//! C, the phone-context transducer: context-dependent units (triphones) in, the lexicon's
//! units out, so that in H ∘ C ∘ L ∘ G every phone — the first and last of a word included —
//! is modelled in the context of its actual neighbours, across word boundaries (Kaldi's
//! `ContextFst` for a left and right context of one phone; Mohri, Pereira & Riley 2008 §4.1).
//!
//! C reads a unit one step late: its state remembers the class of the phone before the pending
//! one and the pending unit itself, and emits the pending unit's context-dependent label when
//! the unit after it arrives. The first unit is read under the extra disambiguation label
//! [`ContextFst::start_label`] (Kaldi's `#-1`, ε once disambiguation symbols are removed); the
//! last is flushed by an end marker that [`add_end_marker`] puts on LG's final states, in the
//! utterance-edge context. Units marked context-independent (silence, fillers) break context:
//! their own label ignores the neighbours, and they are the neighbours' context as their class.
//! Unit disambiguation symbols pass through as self-loops, except the one that spells the
//! context slot (class word, [`ContextSpec::flush_disambig`]): C reads it as a word
//! edge — the pending unit is emitted in the utterance-edge context, then the symbol, and the
//! next unit starts afresh — so the search enters a context graph only where the previous
//! word's phones are all heard.

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::prelude::*;
use std::collections::HashMap;

/// The context-dependency of a lexicon's units.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSpec {
    /// Per unit (index `u − 1` for unit id `u`): its context class, what its neighbours see
    /// (e.g. the base phone of a position-dependent phone).
    pub class_of_unit: Vec<u32>,
    /// Per unit: whether its own label ignores its neighbours (silence, fillers).
    pub independent: Vec<bool>,
    /// The class seen beyond the utterance's edges (silence's).
    pub edge_class: u32,
    /// Unit disambiguation symbols of L (`#0` included), passed through.
    pub num_disambig: u32,
    /// The disambiguation symbol `#k` read as a word edge instead (L's spelling of the context
    /// slot): `None` passes every one through.
    pub flush_disambig: Option<u32>,
}

/// C with the key of each of its context-dependent labels.
#[derive(Debug, Clone)]
pub struct ContextFst {
    /// Context-dependent labels (1..=`keys.len()`, then disambiguation) in, L's units out.
    pub fst: StdFst,
    /// The key the lookup gave for each context-dependent label (label `i + 1` is `keys[i]`).
    pub keys: Vec<u32>,
    /// L's units (L's own labels for `#k` are `num_units + 1 + k`).
    pub num_units: u32,
    /// L's disambiguation symbols passed through.
    pub num_disambig: u32,
}

impl ContextFst {
    /// Number of context-dependent labels.
    pub fn num_cd(&self) -> u32 {
        self.keys.len() as u32
    }

    /// The input label of L's disambiguation symbol `#k`.
    pub fn disambig_label(&self, k: u32) -> u32 {
        self.num_cd() + 1 + k
    }

    /// The input label under which the first unit is read (one disambiguation symbol more
    /// than L's; removed with them).
    pub fn start_label(&self) -> u32 {
        self.disambig_label(self.num_disambig)
    }

    /// Disambiguation symbols H must pass: L's and the start label.
    pub fn num_disambig_in(&self) -> u32 {
        self.num_disambig + 1
    }

    /// The label LG's end marker carries (after L's disambiguation symbols).
    pub fn end_label(&self) -> u32 {
        self.num_units + 1 + self.num_disambig
    }
}

/// Builds C for `spec`; `lookup(left_class, unit, right_class)` names the context-dependent
/// model of `unit` between those neighbours as a key (e.g. a triphone's id), and equal keys
/// share a label. It is asked only for context-dependent units; an independent unit's key is
/// `lookup(edge, unit, edge)`.
///
/// ```
/// use ctx_graph::phone_context::{build_context_fst, ContextSpec};
/// // Units 1 = SIL (class 0, independent), 2 = A (class 1), 3 = B (class 2).
/// let spec = ContextSpec {
///     class_of_unit: vec![0, 1, 2],
///     independent: vec![true, false, false],
///     edge_class: 0,
///     num_disambig: 1,
///     flush_disambig: None,
/// };
/// // Key: unit * 100 + left * 10 + right.
/// let c = build_context_fst(&spec, |l, u, r| Ok(u * 100 + l * 10 + r)).unwrap();
/// // "A B" between silences: A sees (SIL, B), B sees (A, SIL).
/// assert!(c.keys.contains(&(2 * 100 + 0 * 10 + 2)));
/// assert!(c.keys.contains(&(3 * 100 + 1 * 10 + 0)));
/// ```
pub fn build_context_fst(
    spec: &ContextSpec,
    mut lookup: impl FnMut(u32, u32, u32) -> Result<u32>,
) -> Result<ContextFst> {
    let n = spec.class_of_unit.len();
    if spec.independent.len() != n {
        return Err(GraphError::Invalid(format!(
            "context of {n} units but {} independence flags",
            spec.independent.len()
        )));
    }
    let err = |e| GraphError::fst("C", e);
    let num_units = n as u32;
    // Labels: context-dependent labels are numbered as keys first appear; disambiguation
    // labels depend on their count, so arcs are collected first and labelled at the end.
    let mut label_of: HashMap<u32, u32> = HashMap::new();
    let mut keys: Vec<u32> = Vec::new();
    let mut label = |key: u32| -> u32 {
        *label_of.entry(key).or_insert_with(|| {
            keys.push(key);
            keys.len() as u32
        })
    };
    enum In {
        Cd(u32),
        Start,
        Disambig(u32),
    }
    let mut arcs: Vec<(StateId, In, u32, StateId)> = Vec::new();
    let mut fst = StdFst::new();
    let start = fst.add_state();
    let end = fst.add_state();
    fst.set_start(start).map_err(err)?;
    fst.set_final(end, TropicalWeight::one()).map_err(err)?;
    // State (left class, pending unit); an independent pending unit's left class is the edge's
    // (it does not matter, so its states are shared).
    let mut state_of: HashMap<(u32, u32), StateId> = HashMap::new();
    let mut queue: Vec<(u32, u32, StateId)> = Vec::new();
    let mut state = |fst: &mut StdFst, queue: &mut Vec<(u32, u32, StateId)>, l: u32, u: u32| {
        let l = if spec.independent[u as usize - 1] {
            spec.edge_class
        } else {
            l
        };
        *state_of.entry((l, u)).or_insert_with(|| {
            let s = fst.add_state();
            queue.push((l, u, s));
            s
        })
    };
    if let Some(k) = spec.flush_disambig {
        if k >= spec.num_disambig {
            return Err(GraphError::Invalid(format!(
                "C flushes at #{k} but L has {} disambiguation symbols",
                spec.num_disambig
            )));
        }
    }
    for u in 1..=num_units {
        let s = state(&mut fst, &mut queue, spec.edge_class, u);
        arcs.push((start, In::Start, u, s));
    }
    // The flush: a pending unit emitted in the edge context (writing nothing), then the flush
    // symbol back to the start, where the next unit is read afresh.
    let flushed = spec.flush_disambig.map(|k| {
        let x = fst.add_state();
        arcs.push((x, In::Disambig(k), num_units + 1 + k, start));
        x
    });
    while let Some((l, u, s)) = queue.pop() {
        let class = spec.class_of_unit[u as usize - 1];
        let key = |r: u32, lookup: &mut dyn FnMut(u32, u32, u32) -> Result<u32>| {
            if spec.independent[u as usize - 1] {
                lookup(spec.edge_class, u, spec.edge_class)
            } else {
                lookup(l, u, r)
            }
        };
        for v in 1..=num_units {
            let k = key(spec.class_of_unit[v as usize - 1], &mut lookup)?;
            let t = state(&mut fst, &mut queue, class, v);
            arcs.push((s, In::Cd(label(k)), v, t));
        }
        let k = key(spec.edge_class, &mut lookup)?;
        arcs.push((s, In::Cd(label(k)), num_units + 1 + spec.num_disambig, end));
        for d in 0..spec.num_disambig {
            match flushed {
                Some(x) if spec.flush_disambig == Some(d) => {
                    let k = key(spec.edge_class, &mut lookup)?;
                    arcs.push((s, In::Cd(label(k)), 0, x));
                }
                _ => arcs.push((s, In::Disambig(d), num_units + 1 + d, s)),
            }
        }
    }
    for d in 0..spec.num_disambig {
        arcs.push((start, In::Disambig(d), num_units + 1 + d, start));
    }
    let num_cd = keys.len() as u32;
    for (s, i, o, t) in arcs {
        let ilabel = match i {
            In::Cd(x) => x,
            In::Disambig(d) => num_cd + 1 + d,
            In::Start => num_cd + 1 + spec.num_disambig,
        };
        fst.add_tr(s, Tr::new(ilabel, o, TropicalWeight::one(), t))
            .map_err(err)?;
    }
    Ok(ContextFst {
        fst,
        keys,
        num_units,
        num_disambig: spec.num_disambig,
    })
}

/// LG made subsequential for C: every final state's weight moves onto an arc reading
/// `end_label` into one new final state (Kaldi's `AddSubsequentialLoop` for one phone of
/// right context), so C can flush the last unit in the utterance-edge context.
pub fn add_end_marker(lg: &StdFst, end_label: u32) -> Result<StdFst> {
    let err = |e| GraphError::fst("LG end marker", e);
    let mut out = lg.clone();
    let end = out.add_state();
    for s in 0..lg.num_states() as StateId {
        if let Some(w) = lg.final_weight(s).map_err(err)? {
            out.add_tr(s, Tr::new(end_label, 0, w, end)).map_err(err)?;
            out.delete_final_weight(s).map_err(err)?;
        }
    }
    out.set_final(end, TropicalWeight::one()).map_err(err)?;
    Ok(out)
}

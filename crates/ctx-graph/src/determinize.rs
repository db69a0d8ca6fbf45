//! Determinization of a functional weighted transducer without input ε (tropical weights,
//! one output label per arc): the subset construction over (state, residual output string,
//! residual weight) triples of Mohri's algorithm, as Kaldi's `DeterminizeStar` does it for
//! HCLG.
//!
//! Why our own: rustfst 1.3's `determinize` merges the pairs of a subset that reach one state
//! through a `HashMap` and keeps them in its iteration order, so one subset reached twice can
//! be two states. Where such merges are frequent (H ∘ C ∘ L ∘ G, whose C delays every phone),
//! the result is tens of times larger than it should be (a 2,093-state H ∘ CLG gave 109,057
//! states that minimize to the 1,704 this function gives directly: sphinx-am's
//! `det_compare` example). Here a subset is kept sorted by state, weights compared on
//! a grid of 2⁻¹⁰ (det's usual quantum), and states are numbered in the order they are found,
//! so the result is the same on every run.

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// The quantum residual weights are compared on.
const DELTA: f32 = 1.0 / 1024.0;

/// One element of a subset: an input state, its residual output string (interned) and its
/// residual weight.
#[derive(Clone, Copy)]
struct Element {
    state: StateId,
    string: u32,
    weight: f32,
}

/// Residual strings, interned: id 0 is the empty string.
struct Strings {
    list: Vec<Vec<Label>>,
    ids: HashMap<Vec<Label>, u32>,
}

impl Strings {
    fn new() -> Self {
        let mut ids = HashMap::new();
        ids.insert(Vec::new(), 0);
        Self {
            list: vec![Vec::new()],
            ids,
        }
    }

    fn id(&mut self, s: &[Label]) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_vec());
        self.ids.insert(s.to_vec(), i);
        i
    }
}

fn key(subset: &[Element]) -> Vec<(StateId, u32, i64)> {
    subset
        .iter()
        .map(|e| (e.state, e.string, (e.weight / DELTA).round() as i64))
        .collect()
}

/// Determinizes `fst`, which must have no input ε and be functional (one output string per
/// input string, as H ∘ C ∘ L ∘ G with disambiguation symbols is). Each output arc carries
/// the first output label all of its subset's paths agree on; strings still pending at a
/// final state are emitted on ε-input arcs into a final state of their own.
///
/// ```
/// use ctx_graph::determinize::determinize_functional_eps_free;
/// use ctx_graph::StdFst;
/// use ctx_graph::rustfst::prelude::*;
/// // Two paths reading 1 then 2 or 3, writing 10 or 20 on their first arcs.
/// let mut f = StdFst::new();
/// let (s, a, b, t) = (f.add_state(), f.add_state(), f.add_state(), f.add_state());
/// f.set_start(s).unwrap();
/// f.set_final(t, 0.0).unwrap();
/// f.add_tr(s, Tr::new(1, 10, 1.0, a)).unwrap();
/// f.add_tr(s, Tr::new(1, 20, 2.0, b)).unwrap();
/// f.add_tr(a, Tr::new(2, 0, 0.0, t)).unwrap();
/// f.add_tr(b, Tr::new(3, 0, 0.0, t)).unwrap();
/// let d = determinize_functional_eps_free(&f).unwrap();
/// // One arc on 1 (output delayed: the paths disagree), then 2:10 and 3:20 into one state.
/// assert_eq!(d.num_trs(d.start().unwrap()).unwrap(), 1);
/// assert_eq!(d.num_states(), 3); // start, {a, b}, {t}
/// ```
pub fn determinize_functional_eps_free(fst: &StdFst) -> Result<StdFst> {
    let err = |e| GraphError::fst("determinize", e);
    let mut out = StdFst::new();
    let Some(start) = fst.start() else {
        return Ok(out);
    };
    let mut strings = Strings::new();
    let mut subsets: Vec<Vec<Element>> = Vec::new();
    let mut ids: HashMap<Vec<(StateId, u32, i64)>, StateId> = HashMap::new();
    let first = vec![Element {
        state: start,
        string: 0,
        weight: 0.0,
    }];
    ids.insert(key(&first), out.add_state());
    subsets.push(first);
    out.set_start(0).map_err(err)?;
    let mut next = 0usize;
    // Candidates per input label: (destination, residual string, weight).
    let mut by_label: BTreeMap<Label, Vec<(StateId, Vec<Label>, f32)>> = BTreeMap::new();
    while next < subsets.len() {
        let from = next as StateId;
        let subset = std::mem::take(&mut subsets[next]);
        next += 1;
        by_label.clear();
        let mut final_w: Option<(f32, u32)> = None;
        for e in &subset {
            if let Some(fw) = fst.final_weight(e.state).map_err(err)? {
                let w = e.weight + fw.value();
                match final_w {
                    Some((_, s)) if s != e.string => {
                        return Err(GraphError::Invalid(format!(
                            "determinize: the transducer is not functional (two output strings end at state {})",
                            e.state
                        )))
                    }
                    Some((best, _)) if best <= w => {}
                    _ => final_w = Some((w, e.string)),
                }
            }
            for tr in fst.get_trs(e.state).map_err(err)?.trs() {
                if tr.ilabel == 0 {
                    return Err(GraphError::Invalid(format!(
                        "determinize: state {} has an input-ε arc",
                        e.state
                    )));
                }
                let mut s = strings.list[e.string as usize].clone();
                if tr.olabel != 0 {
                    s.push(tr.olabel);
                }
                by_label.entry(tr.ilabel).or_default().push((
                    tr.nextstate,
                    s,
                    e.weight + tr.weight.value(),
                ));
            }
        }
        if let Some((w, s)) = final_w {
            let pending = strings.list[s as usize].clone();
            if pending.is_empty() {
                out.set_final(from, w).map_err(err)?;
            } else {
                // Emit what is still pending on an ε-input chain into a final state.
                let mut src = from;
                for (i, &o) in pending.iter().enumerate() {
                    let dst = out.add_state();
                    let cost = if i == 0 { w } else { 0.0 };
                    out.add_tr(src, Tr::new(0, o, cost, dst)).map_err(err)?;
                    src = dst;
                    subsets.push(Vec::new());
                }
                out.set_final(src, 0.0).map_err(err)?;
            }
        }
        for (&label, cands) in &by_label {
            let w_min = cands.iter().map(|c| c.2).fold(f32::INFINITY, f32::min);
            let agreed = cands[0]
                .1
                .first()
                .copied()
                .filter(|&o| cands.iter().all(|c| c.1.first() == Some(&o)));
            let cut = usize::from(agreed.is_some());
            // Merge per destination state; a functional input gives one string per state.
            let mut dest: BTreeMap<StateId, (Vec<Label>, f32)> = BTreeMap::new();
            for (q, s, w) in cands {
                let rest = &s[cut..];
                let w = w - w_min;
                match dest.get_mut(q) {
                    Some((s0, w0)) => {
                        if s0.as_slice() != rest {
                            return Err(GraphError::Invalid(format!(
                                "determinize: the transducer is not functional (two output strings reach state {q} on input {label})"
                            )));
                        }
                        *w0 = w0.min(w);
                    }
                    None => {
                        dest.insert(*q, (rest.to_vec(), w));
                    }
                }
            }
            let subset: Vec<Element> = dest
                .into_iter()
                .map(|(state, (s, weight))| Element {
                    state,
                    string: strings.id(&s),
                    weight,
                })
                .collect();
            let k = key(&subset);
            let to = match ids.get(&k) {
                Some(&id) => id,
                None => {
                    let id = out.add_state();
                    debug_assert_eq!(id as usize, subsets.len());
                    ids.insert(k, id);
                    subsets.push(subset);
                    id
                }
            };
            out.add_tr(from, Tr::new(label, agreed.unwrap_or(0), w_min, to))
                .map_err(err)?;
        }
    }
    Ok(out)
}

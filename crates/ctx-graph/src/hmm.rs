//! The monophone HMM topology H and Kaldi-style self-loop insertion.
//!
//! Each unit (phone) is a left-to-right chain of `states_per_phone` HMM states; HMM state `k` of
//! unit `u` (1-based) has pdf-id `(u − 1) · states_per_phone + k`, and the graph reads it with
//! input label pdf-id + 1. H is built without self-loops ("Ha" in Kaldi): one loop state, per
//! unit a chain whose first arc outputs the unit. Self-loops are added after determinization and
//! minimization ([`add_self_loops`]), after splitting states so that every state is entered by a
//! single input label (Kaldi's `MakePrecedingInputSymbolsSame`).

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::prelude::*;

/// HMM topology and transition costs of a hybrid graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HmmTopology {
    /// HMM states per phone (1 for chain-style models with 30 ms frames, 3 for classic ones).
    pub states_per_phone: u32,
    /// Self-loop probability of every HMM state.
    pub self_loop_prob: f32,
    /// Scale on the transition costs (Kaldi's `--transition-scale`; 0 disables them).
    pub transition_scale: f32,
}

impl Default for HmmTopology {
    fn default() -> Self {
        Self {
            states_per_phone: 1,
            self_loop_prob: 0.5,
            transition_scale: 1.0,
        }
    }
}

impl HmmTopology {
    /// Number of pdfs for `num_units` phones.
    pub fn num_pdfs(&self, num_units: u32) -> u32 {
        num_units * self.states_per_phone
    }

    /// The pdf-id of HMM state `k` of unit `unit` (1-based unit id).
    pub fn pdf(&self, unit: u32, k: u32) -> u32 {
        (unit - 1) * self.states_per_phone + k
    }

    /// Cost of a self-loop.
    pub fn loop_cost(&self) -> f32 {
        -self.self_loop_prob.ln() * self.transition_scale
    }

    /// Cost of entering an HMM state from another.
    pub fn forward_cost(&self) -> f32 {
        -(1.0 - self.self_loop_prob).ln() * self.transition_scale
    }

    fn check(&self) -> Result<()> {
        if self.states_per_phone == 0 {
            return Err(GraphError::Invalid(
                "states_per_phone must be at least 1".into(),
            ));
        }
        if !(self.self_loop_prob > 0.0 && self.self_loop_prob < 1.0) {
            return Err(GraphError::Invalid(format!(
                "self_loop_prob {} must be in (0, 1)",
                self.self_loop_prob
            )));
        }
        if !(self.transition_scale >= 0.0 && self.transition_scale.is_finite()) {
            return Err(GraphError::Invalid(format!(
                "transition_scale {} must be finite and non-negative",
                self.transition_scale
            )));
        }
        Ok(())
    }
}

/// Builds Ha (no self-loops) for units 1..=`num_units`, passing unit disambiguation symbols
/// `num_units + 1 + k` (k < `num_disambig`) as input labels `num_pdfs + 1 + k`.
pub fn build_h(topo: &HmmTopology, num_units: u32, num_disambig: u32) -> Result<StdFst> {
    topo.check()?;
    let err = |e| GraphError::fst("H", e);
    let mut fst = StdFst::new();
    let s0 = fst.add_state();
    fst.set_start(s0).map_err(err)?;
    fst.set_final(s0, TropicalWeight::one()).map_err(err)?;
    let n = topo.states_per_phone;
    for u in 1..=num_units {
        let mut src = s0;
        for k in 0..n {
            let dst = if k + 1 == n { s0 } else { fst.add_state() };
            let olabel = if k == 0 { u } else { 0 };
            fst.add_tr(src, Tr::new(topo.pdf(u, k) + 1, olabel, 0.0, dst))
                .map_err(err)?;
            src = dst;
        }
    }
    let num_pdfs = topo.num_pdfs(num_units);
    for k in 0..num_disambig {
        fst.add_tr(s0, Tr::new(num_pdfs + 1 + k, num_units + 1 + k, 0.0, s0))
            .map_err(err)?;
    }
    Ok(fst)
}

/// Adds HMM self-loops: every state entered by emitting label `x` (1..=`num_pdfs`) gets a
/// self-loop `x:ε` costing [`HmmTopology::loop_cost`], and every emitting arc gets
/// [`HmmTopology::forward_cost`]. States entered by several input labels (or by an arc and as the
/// start state) are split first, copying their final weight and outgoing arcs.
pub fn add_self_loops(fst: &StdFst, topo: &HmmTopology, num_pdfs: u32) -> Result<StdFst> {
    topo.check()?;
    let err = |e| GraphError::fst("add self-loops", e);
    let n = fst.num_states();
    let Some(start) = fst.start() else {
        return Ok(StdFst::new());
    };
    const START: u32 = u32::MAX;
    // Entry classes per state, sorted and unique; the start state is entered "at start".
    let mut classes: Vec<Vec<u32>> = vec![Vec::new(); n];
    classes[start as usize].push(START);
    for s in 0..n as StateId {
        for tr in fst.get_trs(s).map_err(err)?.trs() {
            let c = &mut classes[tr.nextstate as usize];
            if !c.contains(&tr.ilabel) {
                c.push(tr.ilabel);
            }
        }
    }
    // New state ids: the original keeps its smallest class (START sorts last, so the start state
    // stays itself only when nothing else enters it); copies follow.
    let mut next_id = n as u32;
    let mut state_of: Vec<Vec<(u32, StateId)>> = Vec::with_capacity(n);
    for (s, c) in classes.iter_mut().enumerate() {
        c.sort_unstable();
        let mut v = Vec::with_capacity(c.len().max(1));
        if c.contains(&START) {
            // The start state keeps its id and the START class.
            v.push((START, s as StateId));
            for &x in c.iter().filter(|&&x| x != START) {
                v.push((x, next_id));
                next_id += 1;
            }
        } else {
            for (i, &x) in c.iter().enumerate() {
                if i == 0 {
                    v.push((x, s as StateId));
                } else {
                    v.push((x, next_id));
                    next_id += 1;
                }
            }
            if v.is_empty() {
                v.push((0, s as StateId)); // unreachable state: keep as is
            }
        }
        state_of.push(v);
    }
    let dest = |t: StateId, x: u32| -> StateId {
        state_of[t as usize]
            .iter()
            .find(|(c, _)| *c == x)
            .map(|&(_, id)| id)
            .expect("every entry class has a state")
    };
    let is_emitting = |x: u32| x >= 1 && x <= num_pdfs;
    let (loop_cost, fwd_cost) = (topo.loop_cost(), topo.forward_cost());
    let mut out = StdFst::new();
    out.add_states(next_id as usize);
    out.set_start(start).map_err(err)?;
    for s in 0..n as StateId {
        let fin = fst.final_weight(s).map_err(err)?;
        let trs: Vec<Tr<TropicalWeight>> = fst
            .get_trs(s)
            .map_err(err)?
            .trs()
            .iter()
            .map(|tr| {
                let w = if is_emitting(tr.ilabel) {
                    tr.weight.value() + fwd_cost
                } else {
                    *tr.weight.value()
                };
                Tr::new(tr.ilabel, tr.olabel, w, dest(tr.nextstate, tr.ilabel))
            })
            .collect();
        for &(class, id) in &state_of[s as usize] {
            if is_emitting(class) {
                out.add_tr(id, Tr::new(class, 0, loop_cost, id))
                    .map_err(err)?;
            }
            for tr in &trs {
                out.add_tr(id, tr.clone()).map_err(err)?;
            }
            if let Some(w) = &fin {
                out.set_final(id, *w).map_err(err)?;
            }
        }
    }
    Ok(out)
}

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

    pub(crate) fn check(&self) -> Result<()> {
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

/// Per-unit HMMs for models whose units do not share one topology: a real acoustic model's
/// triphones map to their own senone sequences (tied across triphones) and each senone has its
/// own self-loop probability. Unit `u` (1-based) is `pdfs[u − 1]`, a left-to-right chain;
/// pdf `p` loops with cost `loop_cost[p]` and is entered with cost `enter_cost[p]` (the state's
/// exit probability, charged on entry: along any path through a left-to-right HMM each state is
/// entered and left once, so the total equals charging it on exit).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitHmms {
    /// Per unit, the pdf-ids of its states in order.
    pub pdfs: Vec<Vec<u32>>,
    /// Per pdf, −ln P(self-loop).
    pub loop_cost: Vec<f32>,
    /// Per pdf, −ln P(leave the state).
    pub enter_cost: Vec<f32>,
}

impl UnitHmms {
    /// The table a uniform topology describes for `num_units` units.
    pub fn uniform(topo: &HmmTopology, num_units: u32) -> Self {
        let n = topo.num_pdfs(num_units) as usize;
        Self {
            pdfs: (1..=num_units)
                .map(|u| (0..topo.states_per_phone).map(|k| topo.pdf(u, k)).collect())
                .collect(),
            loop_cost: vec![topo.loop_cost(); n],
            enter_cost: vec![topo.forward_cost(); n],
        }
    }

    /// Multiplies every transition cost by `scale`: a model whose transition log-probabilities
    /// belong to the acoustic score (pocketsphinx's) puts them in graph units at the acoustic
    /// scale, as the acoustic log-likelihoods are.
    ///
    /// ```
    /// use ctx_graph::hmm::{HmmTopology, UnitHmms};
    /// let mut h = UnitHmms::uniform(&HmmTopology::default(), 2);
    /// let before = h.loop_cost[0];
    /// h.scale_costs(0.5);
    /// assert_eq!(h.loop_cost[0], before * 0.5);
    /// ```
    pub fn scale_costs(&mut self, scale: f32) {
        for c in self.loop_cost.iter_mut().chain(self.enter_cost.iter_mut()) {
            *c *= scale;
        }
    }

    /// Number of pdfs (score columns).
    pub fn num_pdfs(&self) -> u32 {
        self.loop_cost.len() as u32
    }

    /// The same HMMs with a label of their own for every (unit, state) — Kaldi's
    /// transition-ids — and the pdf each label reads (label `x` reads `pdf_of[x − 1]`).
    pub fn with_distinct_labels(&self) -> (UnitHmms, Vec<u32>) {
        let mut pdf_of = Vec::new();
        let pdfs = self
            .pdfs
            .iter()
            .map(|p| {
                p.iter()
                    .map(|&x| {
                        pdf_of.push(x);
                        pdf_of.len() as u32 - 1
                    })
                    .collect()
            })
            .collect();
        let loop_cost = pdf_of.iter().map(|&x| self.loop_cost[x as usize]).collect();
        let enter_cost = pdf_of
            .iter()
            .map(|&x| self.enter_cost[x as usize])
            .collect();
        (
            UnitHmms {
                pdfs,
                loop_cost,
                enter_cost,
            },
            pdf_of,
        )
    }

    fn check(&self) -> Result<()> {
        if self.loop_cost.len() != self.enter_cost.len() {
            return Err(GraphError::Invalid(format!(
                "{} self-loop costs for {} entry costs",
                self.loop_cost.len(),
                self.enter_cost.len()
            )));
        }
        for (u, p) in self.pdfs.iter().enumerate() {
            if p.is_empty() {
                return Err(GraphError::Invalid(format!(
                    "unit {} has no HMM state",
                    u + 1
                )));
            }
            if let Some(&x) = p.iter().find(|&&x| x >= self.num_pdfs()) {
                return Err(GraphError::Invalid(format!(
                    "unit {} uses pdf {x} of {}",
                    u + 1,
                    self.num_pdfs()
                )));
            }
        }
        if let Some(c) = self
            .loop_cost
            .iter()
            .chain(&self.enter_cost)
            .find(|c| !(c.is_finite() && **c >= 0.0))
        {
            return Err(GraphError::Invalid(format!(
                "transition cost {c} must be finite and non-negative"
            )));
        }
        Ok(())
    }
}

/// Builds Ha (no self-loops) for units 1..=`num_units`, passing unit disambiguation symbols
/// `num_units + 1 + k` (k < `num_disambig`) as input labels `num_pdfs + 1 + k`.
pub fn build_h(topo: &HmmTopology, num_units: u32, num_disambig: u32) -> Result<StdFst> {
    topo.check()?;
    build_h_units(&UnitHmms::uniform(topo, num_units), num_disambig)
}

/// Builds Ha for per-unit HMMs ([`UnitHmms`]): per unit a chain through its pdfs whose first
/// arc outputs the unit; disambiguation symbol `k` passes as input `num_pdfs + 1 + k`.
pub fn build_h_units(units: &UnitHmms, num_disambig: u32) -> Result<StdFst> {
    units.check()?;
    let err = |e| GraphError::fst("H", e);
    let mut fst = StdFst::new();
    let s0 = fst.add_state();
    fst.set_start(s0).map_err(err)?;
    fst.set_final(s0, TropicalWeight::one()).map_err(err)?;
    let num_units = units.pdfs.len() as u32;
    for (u, pdfs) in (1..=num_units).zip(&units.pdfs) {
        let mut src = s0;
        for (k, &pdf) in pdfs.iter().enumerate() {
            let dst = if k + 1 == pdfs.len() {
                s0
            } else {
                fst.add_state()
            };
            let olabel = if k == 0 { u } else { 0 };
            fst.add_tr(src, Tr::new(pdf + 1, olabel, 0.0, dst))
                .map_err(err)?;
            src = dst;
        }
    }
    let num_pdfs = units.num_pdfs();
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
    let (l, f) = (topo.loop_cost(), topo.forward_cost());
    add_self_loops_with(
        fst,
        num_pdfs,
        &vec![l; num_pdfs as usize],
        &vec![f; num_pdfs as usize],
    )
}

/// [`add_self_loops`] with per-pdf costs: the state entered by label `x` loops with cost
/// `loop_cost[x − 1]`, and emitting arcs labelled `x` carry `enter_cost[x − 1]`.
pub fn add_self_loops_with(
    fst: &StdFst,
    num_pdfs: u32,
    loop_cost: &[f32],
    enter_cost: &[f32],
) -> Result<StdFst> {
    if loop_cost.len() != num_pdfs as usize || enter_cost.len() != num_pdfs as usize {
        return Err(GraphError::Invalid(format!(
            "{} self-loop and {} entry costs for {num_pdfs} pdfs",
            loop_cost.len(),
            enter_cost.len()
        )));
    }
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
                    tr.weight.value() + enter_cost[tr.ilabel as usize - 1]
                } else {
                    *tr.weight.value()
                };
                Tr::new(tr.ilabel, tr.olabel, w, dest(tr.nextstate, tr.ilabel))
            })
            .collect();
        for &(class, id) in &state_of[s as usize] {
            if is_emitting(class) {
                out.add_tr(id, Tr::new(class, 0, loop_cost[class as usize - 1], id))
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

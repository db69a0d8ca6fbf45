//! The CSR decoding-graph layout every decoder reads (docs/design.md §4, Kaldi's `CudaFst`).
//!
//! Arcs are stored in two blocks: first the emitting arcs (input label > 0) of all states, state
//! by state, then the non-emitting (ε-input) arcs of all states. State `s` owns emitting arcs
//! `e_offsets[s]..e_offsets[s + 1]` and non-emitting arcs `ne_offsets[s]..ne_offsets[s + 1]`
//! (`ne_offsets[0]` = number of emitting arcs). Within a state the source FST's arc order is kept,
//! so an arc's index is stable for a given FST: it is the arc's identity for arc-index boosting.
//! Input label k > 0 reads score column k − 1.

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::prelude::*;
use std::io::{Read, Write};
use std::path::Path;

/// A decoding graph in CSR form.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DecodingGraph {
    /// The start state.
    pub start: u32,
    /// Final cost per state (+∞ when not final).
    pub final_cost: Vec<f32>,
    /// Emitting-arc ranges, `num_states + 1` entries.
    pub e_offsets: Vec<u32>,
    /// Non-emitting-arc ranges, `num_states + 1` entries, starting at the emitting total.
    pub ne_offsets: Vec<u32>,
    /// Input label per arc (0 on non-emitting arcs).
    pub ilabel: Vec<u32>,
    /// Output label (word id, 0 = none) per arc.
    pub olabel: Vec<u32>,
    /// Graph cost per arc.
    pub weight: Vec<f32>,
    /// Destination state per arc.
    pub next: Vec<u32>,
}

const MAGIC: &[u8; 8] = b"CTXCSR01";

impl DecodingGraph {
    /// Lays out an FST; `ilabel_map` (when given) maps input labels first, e.g. Kaldi
    /// transition-ids to pdf-id + 1 (index = transition-id, 0 must map to 0).
    pub fn from_fst(fst: &StdFst, ilabel_map: Option<&[u32]>) -> Result<Self> {
        let err = |e| GraphError::fst("CSR layout", e);
        let n = fst.num_states();
        let start = fst
            .start()
            .ok_or_else(|| GraphError::Invalid("the graph has no start state".into()))?;
        let map = |l: u32| -> Result<u32> {
            match ilabel_map {
                None => Ok(l),
                Some(m) => m.get(l as usize).copied().ok_or_else(|| {
                    GraphError::Invalid(format!("input label {l} is outside the label map"))
                }),
            }
        };
        let mut g = DecodingGraph {
            start,
            final_cost: Vec::with_capacity(n),
            e_offsets: Vec::with_capacity(n + 1),
            ne_offsets: Vec::with_capacity(n + 1),
            ..Default::default()
        };
        let mut ne: Vec<(u32, f32, u32)> = Vec::new();
        let mut ne_counts = Vec::with_capacity(n);
        for s in 0..n as StateId {
            g.e_offsets.push(g.ilabel.len() as u32);
            g.final_cost.push(
                fst.final_weight(s)
                    .map_err(err)?
                    .map_or(f32::INFINITY, |w| *w.value()),
            );
            let before = ne.len();
            for tr in fst.get_trs(s).map_err(err)?.trs() {
                let il = map(tr.ilabel)?;
                if il == 0 {
                    ne.push((tr.olabel, *tr.weight.value(), tr.nextstate));
                } else {
                    g.ilabel.push(il);
                    g.olabel.push(tr.olabel);
                    g.weight.push(*tr.weight.value());
                    g.next.push(tr.nextstate);
                }
            }
            ne_counts.push(ne.len() - before);
        }
        let num_e = g.ilabel.len() as u32;
        g.e_offsets.push(num_e);
        let mut off = num_e;
        for c in ne_counts {
            g.ne_offsets.push(off);
            off += c as u32;
        }
        g.ne_offsets.push(off);
        for (o, w, d) in ne {
            g.ilabel.push(0);
            g.olabel.push(o);
            g.weight.push(w);
            g.next.push(d);
        }
        Ok(g)
    }

    /// Maps every input label through `map` (index = label, 0 stays 0): a graph compiled over
    /// canonical units (blank = 1) read onto a model's own columns
    /// ([`crate::labels::CtcLabels::label_map`]). A label outside the map, or a reading label
    /// mapped to 0, is an error.
    pub fn map_input_labels(&mut self, map: &[u32]) -> Result<()> {
        for l in self.ilabel.iter_mut().filter(|l| **l != 0) {
            match map.get(*l as usize) {
                Some(&m) if m != 0 => *l = m,
                _ => {
                    return Err(GraphError::Invalid(format!(
                        "input label {l} is outside the label map ({} labels)",
                        map.len()
                    )))
                }
            }
        }
        Ok(())
    }

    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.final_cost.len()
    }

    /// Number of arcs.
    pub fn num_arcs(&self) -> usize {
        self.ilabel.len()
    }

    /// Number of emitting arcs (they come first).
    pub fn num_emitting(&self) -> usize {
        self.ne_offsets.first().copied().unwrap_or(0) as usize
    }

    /// The emitting arc indices of state `s`.
    #[inline]
    pub fn emitting(&self, s: u32) -> std::ops::Range<usize> {
        row(&self.e_offsets, s)
    }

    /// The non-emitting arc indices of state `s`.
    #[inline]
    pub fn non_emitting(&self, s: u32) -> std::ops::Range<usize> {
        row(&self.ne_offsets, s)
    }

    /// The largest input label (score columns needed = this value).
    pub fn max_ilabel(&self) -> u32 {
        self.ilabel.iter().copied().max().unwrap_or(0)
    }

    /// Checks the invariants a decoder relies on (offsets monotone, labels and states in range).
    pub fn validate(&self) -> Result<()> {
        let n = self.num_states();
        let bad = |m: String| Err(GraphError::Invalid(format!("CSR graph: {m}")));
        if self.e_offsets.len() != n + 1 || self.ne_offsets.len() != n + 1 {
            return bad("offset arrays do not have num_states + 1 entries".into());
        }
        let a = self.num_arcs();
        if [self.olabel.len(), self.weight.len(), self.next.len()]
            .iter()
            .any(|&l| l != a)
        {
            return bad("arc arrays differ in length".into());
        }
        if self.start as usize >= n {
            return bad(format!("start state {} out of range", self.start));
        }
        if self.e_offsets[0] != 0
            || self.e_offsets[n] != self.ne_offsets[0]
            || self.ne_offsets[n] as usize != a
        {
            return bad("offset blocks do not cover the arcs".into());
        }
        for s in 0..n {
            if self.e_offsets[s] > self.e_offsets[s + 1]
                || self.ne_offsets[s] > self.ne_offsets[s + 1]
            {
                return bad(format!("offsets decrease at state {s}"));
            }
        }
        for s in 0..n {
            for i in self.emitting(s as u32).chain(self.non_emitting(s as u32)) {
                if self.next[i] as usize >= n {
                    return bad(format!(
                        "arc {i} (from state {s}, input {}, output {}) goes to state {}, beyond \
                         the graph's {n} states",
                        self.ilabel[i], self.olabel[i], self.next[i]
                    ));
                }
            }
        }
        for i in 0..a {
            if (i < self.num_emitting()) != (self.ilabel[i] != 0) {
                return bad(format!("arc {i} is in the wrong block"));
            }
        }
        Ok(())
    }

    /// Checks what the search needs of the weights, beyond [`Self::validate`]'s layout: every
    /// arc weight and final cost a number that is not −∞ (+∞ is an arc never taken, a state
    /// that is not final), and no cycle of ε-input arcs of zero or negative total cost (the
    /// ε-closure could not end it, or its best paths would go round it). Errors name the arc,
    /// state or cycle; `validate` should pass first.
    ///
    /// ```
    /// use ctx_graph::csr::DecodingGraph;
    /// use ctx_graph::StdFst;
    /// use rustfst::prelude::*;
    /// let mut f = StdFst::new();
    /// let (a, b) = (f.add_state(), f.add_state());
    /// f.set_start(a).unwrap();
    /// f.add_tr(a, Tr::new(1, 1, 0.5, b)).unwrap();
    /// f.add_tr(b, Tr::new(0, 0, 0.0, b)).unwrap(); // an ε self-loop of cost 0
    /// f.set_final(b, 0.0).unwrap();
    /// let g = DecodingGraph::from_fst(&f, None).unwrap();
    /// let e = g.check_weights().unwrap_err().to_string();
    /// assert!(e.contains("zero or negative cost") && e.contains("state 1"), "{e}");
    /// ```
    pub fn check_weights(&self) -> Result<()> {
        let bad = |m: String| Err(GraphError::Invalid(m));
        let n = self.num_states();
        for s in 0..n {
            for a in self.emitting(s as u32).chain(self.non_emitting(s as u32)) {
                let w = self.weight[a];
                if w.is_nan() || w == f32::NEG_INFINITY {
                    return bad(format!(
                        "arc {a} (from state {s} to state {}, input {}, output {}) has weight {w}",
                        self.next[a], self.ilabel[a], self.olabel[a]
                    ));
                }
            }
            let f = self.final_cost[s];
            if f.is_nan() || f == f32::NEG_INFINITY {
                return bad(format!("state {s} has final weight {f}"));
            }
        }
        if let Some(cycle) = self.nonpositive_eps_cycle() {
            let path: Vec<String> = cycle.iter().map(|s| s.to_string()).collect();
            return bad(format!(
                "ε-input arcs form a cycle of zero or negative cost through state {} ({}):                  the search cannot close it",
                cycle[0],
                path.join(" -> ")
            ));
        }
        Ok(())
    }

    /// The states of a cycle of ε-input arcs whose weights sum to zero or less (its first
    /// state repeated at the end), if any: the ε subgraph's strongly connected components, then
    /// in each one with a cycle Bellman–Ford for a negative cycle and, without one, a cycle of
    /// tight arcs (reduced weight 0 under its potentials) for a zero one.
    pub fn nonpositive_eps_cycle(&self) -> Option<Vec<u32>> {
        let n = self.num_states();
        // Tarjan's SCCs over the ε arcs (iterative).
        let (mut index, mut low) = (vec![u32::MAX; n], vec![0u32; n]);
        let (mut on, mut stack, mut comp) = (vec![false; n], Vec::new(), vec![u32::MAX; n]);
        let (mut next_index, mut comps) = (0u32, 0u32);
        let mut call: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != u32::MAX || self.non_emitting(root).is_empty() {
                continue;
            }
            call.push((root, self.ne_offsets[root as usize] as usize));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on[root as usize] = true;
            while let Some(&mut (v, ref mut a)) = call.last_mut() {
                let end = self.ne_offsets[v as usize + 1] as usize;
                if *a < end {
                    let w = self.next[*a];
                    *a += 1;
                    if index[w as usize] == u32::MAX {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on[w as usize] = true;
                        call.push((w, self.ne_offsets[w as usize] as usize));
                    } else if on[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p as usize] = low[p as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    while let Some(x) = stack.pop() {
                        on[x as usize] = false;
                        comp[x as usize] = comps;
                        if x == v {
                            break;
                        }
                    }
                    comps += 1;
                }
            }
        }
        // Members per component, and the components that hold a cycle (an ε arc inside).
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); comps as usize];
        for s in 0..n {
            if comp[s] != u32::MAX {
                members[comp[s] as usize].push(s as u32);
            }
        }
        let comp = &comp;
        let inside = move |s: u32| {
            let c = comp[s as usize];
            self.non_emitting(s)
                .filter(move |&a| comp[self.next[a] as usize] == c)
        };
        for m in members
            .iter()
            .filter(|m| m.iter().any(|&s| inside(s).next().is_some()))
        {
            // Bellman–Ford from a virtual source at 0 to every member.
            let mut dist: std::collections::BTreeMap<u32, f64> =
                m.iter().map(|&s| (s, 0.0)).collect();
            let mut pred: std::collections::BTreeMap<u32, u32> = Default::default();
            let mut changed = true;
            let mut rounds = 0;
            while changed && rounds <= m.len() {
                changed = false;
                rounds += 1;
                for &u in m {
                    for a in inside(u) {
                        let v = self.next[a];
                        let c = dist[&u] + self.weight[a] as f64;
                        if c < dist[&v] {
                            dist.insert(v, c);
                            pred.insert(v, u);
                            changed = true;
                        }
                    }
                }
            }
            if changed {
                // A negative cycle: the predecessor graph has one (every cycle in it is
                // negative); found by walking predecessors from each relaxed state.
                for &start in pred.keys() {
                    let mut seen: std::collections::BTreeMap<u32, usize> = Default::default();
                    let mut path = Vec::new();
                    let mut v = start;
                    loop {
                        if let Some(&i) = seen.get(&v) {
                            let mut cycle: Vec<u32> = path[i..].to_vec();
                            cycle.reverse();
                            cycle.push(cycle[0]);
                            return Some(cycle);
                        }
                        seen.insert(v, path.len());
                        path.push(v);
                        match pred.get(&v) {
                            Some(&u) => v = u,
                            None => break,
                        }
                    }
                }
            }
            // A zero cycle: a cycle of tight arcs (every reduced weight is ≥ 0 now).
            let dist = &dist;
            let tight = move |u: u32| {
                let du = dist[&u];
                inside(u)
                    .filter(move |&a| du + self.weight[a] as f64 == dist[&self.next[a]])
                    .map(|a| self.next[a])
            };
            let mut colour: std::collections::BTreeMap<u32, u8> = Default::default();
            for &r in m {
                if colour.contains_key(&r) {
                    continue;
                }
                let mut path: Vec<(u32, Vec<u32>)> = vec![(r, tight(r).collect())];
                colour.insert(r, 1);
                while let Some((u, nexts)) = path.last_mut() {
                    let u = *u;
                    match nexts.pop() {
                        Some(w) => match colour.get(&w) {
                            Some(1) => {
                                let at = path.iter().position(|(x, _)| *x == w).expect("on path");
                                let mut cycle: Vec<u32> =
                                    path[at..].iter().map(|(x, _)| *x).collect();
                                cycle.push(w);
                                return Some(cycle);
                            }
                            Some(_) => {}
                            None => {
                                colour.insert(w, 1);
                                path.push((w, tight(w).collect()));
                            }
                        },
                        None => {
                            colour.insert(u, 2);
                            path.pop();
                        }
                    }
                }
            }
        }
        None
    }

    /// Writes the graph in ctxbench's little-endian binary format (atomically).
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut buf: Vec<u8> =
            Vec::with_capacity(16 + 4 * (3 * self.num_states() + 4 * self.num_arcs()));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&(self.num_states() as u64).to_le_bytes());
        buf.extend_from_slice(&(self.num_arcs() as u64).to_le_bytes());
        buf.extend_from_slice(&self.start.to_le_bytes());
        let put_u = |b: &mut Vec<u8>, v: &[u32]| {
            v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()))
        };
        let put_f = |b: &mut Vec<u8>, v: &[f32]| {
            v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()))
        };
        put_f(&mut buf, &self.final_cost);
        put_u(&mut buf, &self.e_offsets);
        put_u(&mut buf, &self.ne_offsets);
        put_u(&mut buf, &self.ilabel);
        put_u(&mut buf, &self.olabel);
        put_f(&mut buf, &self.weight);
        put_u(&mut buf, &self.next);
        ctx_core::io::write_atomic(path, |w: &mut dyn Write| w.write_all(&buf))?;
        Ok(())
    }

    /// Reads a graph written by [`DecodingGraph::write`], validating it.
    pub fn read(path: &Path) -> Result<Self> {
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|err| GraphError::Io {
                path: path.to_path_buf(),
                err,
            })?;
        let bad = |m: &str| GraphError::Invalid(format!("{}: {m}", path.display()));
        if bytes.len() < 28 || &bytes[..8] != MAGIC {
            return Err(bad("not a ctxbench CSR graph (bad magic)"));
        }
        let n = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
        let a = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
        let start = u32::from_le_bytes(bytes[24..28].try_into().unwrap());
        let need = 28 + 4 * (n + 2 * (n + 1) + 4 * a);
        if bytes.len() != need {
            return Err(bad(&format!(
                "truncated or padded: {} bytes, expected {need}",
                bytes.len()
            )));
        }
        let mut pos = 28;
        let mut take_u = |k: usize| -> Vec<u32> {
            let v = bytes[pos..pos + 4 * k]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            pos += 4 * k;
            v
        };
        let final_bits = take_u(n);
        let e_offsets = take_u(n + 1);
        let ne_offsets = take_u(n + 1);
        let ilabel = take_u(a);
        let olabel = take_u(a);
        let weight_bits = take_u(a);
        let next = take_u(a);
        let g = DecodingGraph {
            start,
            final_cost: final_bits.into_iter().map(f32::from_bits).collect(),
            e_offsets,
            ne_offsets,
            ilabel,
            olabel,
            weight: weight_bits.into_iter().map(f32::from_bits).collect(),
            next,
        };
        g.validate().map_err(|e| bad(&e.to_string()))?;
        Ok(g)
    }
}

/// `offsets[s]..offsets[s + 1]`, read through one two-element sub-slice: one bound check
/// instead of two (the search asks this once per expanded token).
#[inline(always)]
fn row(offsets: &[u32], s: u32) -> std::ops::Range<usize> {
    let s = s as usize;
    let pair = &offsets[s..s + 2];
    pair[0] as usize..pair[1] as usize
}

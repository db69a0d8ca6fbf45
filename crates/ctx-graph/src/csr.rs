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
        for i in 0..a {
            if self.next[i] as usize >= n {
                return bad(format!("arc {i} goes to state {} of {n}", self.next[i]));
            }
            if (i < self.num_emitting()) != (self.ilabel[i] != 0) {
                return bad(format!("arc {i} is in the wrong block"));
            }
        }
        Ok(())
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

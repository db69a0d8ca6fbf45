//! The batch's open-vocabulary context graphs on the device: one pool holding every
//! distinct [`ContextGraph`] the batch's streams decode with or asked for, each graph's state
//! arrays (CSR offsets local to its arcs, final costs; `M + 1` entries) from its state base and
//! its arc arrays from its arc base. A lane follows its stream's context through `LANE_CTX`
//! words (`decoder.cu`'s `Ctx`): a context switch changes those words, not the pool.

use super::frame::{upload_new, LANE_CTX};
use crate::context::Active;
use ctx_cuda::{DevPtr, Device, Result};
use ctx_graph::context::ContextGraph;
use std::collections::HashMap;
use std::sync::Arc;

/// The pool of context graphs on the device.
pub(crate) struct ContextPool {
    /// The graphs, in pool order (held, so that no address of `index` is reused while the
    /// pool lives).
    _graphs: Vec<Arc<ContextGraph>>,
    /// Per graph: (state base, arc base).
    bases: Vec<(u32, u32)>,
    /// Pool position of each graph, by address.
    index: HashMap<usize, usize>,
    /// The largest graph's states.
    pub max_states: usize,
    pub e_off: DevPtr,
    pub ne_off: DevPtr,
    pub final_cost: DevPtr,
    pub ilabel: DevPtr,
    pub weight: DevPtr,
    pub next: DevPtr,
    pub src: DevPtr,
}

impl ContextPool {
    /// Uploads `graphs` (distinct, in this order).
    pub fn upload(dev: &mut dyn Device, graphs: Vec<Arc<ContextGraph>>) -> Result<Self> {
        let (mut e_off, mut ne_off, mut fin) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ilabel, mut weight, mut next, mut src) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut bases = Vec::with_capacity(graphs.len());
        let mut max_states = 0;
        for c in &graphs {
            let g = &c.graph;
            let m = g.num_states();
            max_states = max_states.max(m);
            bases.push((e_off.len() as u32, ilabel.len() as u32));
            e_off.extend_from_slice(&g.e_offsets[..=m]);
            ne_off.extend_from_slice(&g.ne_offsets[..=m]);
            fin.extend_from_slice(&g.final_cost[..m]);
            fin.push(f32::INFINITY);
            ilabel.extend_from_slice(&g.ilabel);
            weight.extend_from_slice(&g.weight);
            next.extend_from_slice(&g.next);
            let mut s = vec![0u32; g.num_arcs()];
            for st in 0..m as u32 {
                for a in g.emitting(st).chain(g.non_emitting(st)) {
                    s[a] = st;
                }
            }
            src.extend(s);
        }
        for v in [&mut e_off, &mut ne_off, &mut ilabel, &mut next, &mut src] {
            if v.is_empty() {
                v.push(0);
            }
        }
        for v in [&mut fin, &mut weight] {
            if v.is_empty() {
                v.push(0.0);
            }
        }
        let what = "the context graphs' pool";
        let index = graphs
            .iter()
            .enumerate()
            .map(|(k, g)| (key(g), k))
            .collect();
        Ok(Self {
            _graphs: graphs,
            index,
            bases,
            max_states,
            e_off: upload_new(dev, &e_off, what)?,
            ne_off: upload_new(dev, &ne_off, what)?,
            final_cost: upload_new(dev, &fin, what)?,
            ilabel: upload_new(dev, &ilabel, what)?,
            weight: upload_new(dev, &weight, what)?,
            next: upload_new(dev, &next, what)?,
            src: upload_new(dev, &src, what)?,
        })
    }

    /// Whether the pool holds every graph of `graphs`.
    pub fn holds_all(&self, graphs: &[Arc<ContextGraph>]) -> bool {
        graphs.iter().all(|g| self.index.contains_key(&key(g)))
    }

    /// A lane's `LANE_CTX` words for a segment decoding with `active` (all 0 without a
    /// context); `None` when its graph is not in the pool.
    pub fn lane_words(pool: Option<&Self>, active: Option<&Active>) -> Option<[u32; LANE_CTX]> {
        let Some(a) = active else {
            return Some([0; LANE_CTX]);
        };
        let pool = pool?;
        let k = *pool.index.get(&key(&a.graph))?;
        let (sbase, abase) = pool.bases[k];
        let g = &a.graph.graph;
        Some([
            a.m,
            sbase,
            abase,
            g.num_arcs() as u32,
            g.num_emitting() as u32,
            g.start,
            0,
            0,
        ])
    }

    pub fn free(&self, dev: &mut dyn Device) {
        for p in [
            self.e_off,
            self.ne_off,
            self.final_cost,
            self.ilabel,
            self.weight,
            self.next,
            self.src,
        ] {
            dev.free(p);
        }
    }
}

/// The distinct context graphs of `graphs` (by pointer), in first-seen order.
pub(crate) fn distinct<'a>(
    graphs: impl Iterator<Item = &'a Arc<ContextGraph>>,
) -> Vec<Arc<ContextGraph>> {
    let mut seen = std::collections::HashSet::new();
    graphs.filter(|g| seen.insert(key(g))).cloned().collect()
}

/// A graph's identity: its address.
fn key(g: &Arc<ContextGraph>) -> usize {
    Arc::as_ptr(g) as usize
}

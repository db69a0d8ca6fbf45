//! Lattice pruning (Ljolje/Povey extra costs, as in Kaldi's `LatticeFasterDecoder`) and the
//! word lattice: an acyclic acceptor over word ids whose arcs keep graph and acoustic cost apart.
//!
//! **Extra cost.** For a token, the extra cost is how much worse the best path through it is
//! than the best path through the frontier token it leads to; for a link, the same through the
//! link. A link whose extra cost exceeds the lattice beam can lie on no final path within the
//! beam, so pruning it early is exact. Extra costs only grow as frames are added, so a frame
//! whose extra costs did not change stops the backward pass.
//!
//! **Word lattice.** States are the start token and the destinations of word-labelled links;
//! from each, the cheapest ε-output path to every reachable word link becomes one arc (costs
//! summed per kind). Every word sequence within the lattice beam keeps its best cost.

use crate::context::ArcLabels;
use crate::tokens::{LatFrame, NONE};
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Prunes the lattice with `beam`. `final_extra` (one value per frontier token, +∞ = drop) is
/// given at the end of a segment; otherwise frontier tokens have extra cost 0.
pub(crate) fn prune(frames: &mut [LatFrame], beam: f32, final_extra: Option<&[f32]>) {
    let Some(last) = frames.len().checked_sub(1) else {
        return;
    };
    for f in (0..=last).rev() {
        let (head, tail) = frames.split_at_mut(f + 1);
        let cur = &mut head[f];
        let next = tail.first_mut();
        let n = cur.toks.len();
        let mut extra: Vec<f32> = if f == last {
            match final_extra {
                Some(v) => v.to_vec(),
                None => vec![0.0; n],
            }
        } else {
            vec![f32::INFINITY; n]
        };
        if let Some(next) = next.as_deref() {
            for l in &next.links[..next.num_emitting] {
                let src = &cur.toks[l.src as usize];
                let dst = &next.toks[l.dst as usize];
                let le = dst.extra + (src.cost + l.graph + l.ac - dst.cost);
                let e = &mut extra[l.src as usize];
                if le < *e {
                    *e = le;
                }
            }
        }
        // ε links inside the frame: relax until nothing changes.
        let eps = cur.num_emitting..cur.links.len();
        loop {
            let mut changed = false;
            for l in &cur.links[eps.clone()] {
                let src = &cur.toks[l.src as usize];
                let dst = &cur.toks[l.dst as usize];
                let le = extra[l.dst as usize] + (src.cost + l.graph - dst.cost);
                if le < extra[l.src as usize] {
                    extra[l.src as usize] = le;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let unchanged = f < last
            && cur.visited
            && cur
                .toks
                .iter()
                .zip(&extra)
                .all(|(t, &e)| t.extra == e || (t.extra > beam && e > beam));
        // Prune the emitting links into the next frame.
        if let Some(next) = next {
            let mut ne = 0;
            let mut w = 0;
            for r in 0..next.links.len() {
                let l = next.links[r];
                let keep = if r < next.num_emitting {
                    let src = &cur.toks[l.src as usize];
                    let dst = &next.toks[l.dst as usize];
                    let le = dst.extra + (src.cost + l.graph + l.ac - dst.cost);
                    let k = le <= beam;
                    if k {
                        ne += 1;
                    }
                    k
                } else {
                    true
                };
                if keep {
                    next.links[w] = l;
                    w += 1;
                }
            }
            next.links.truncate(w);
            next.num_emitting = ne;
        }
        // Prune ε links of this frame and tokens beyond the beam.
        {
            let mut w = cur.num_emitting;
            for r in cur.num_emitting..cur.links.len() {
                let l = cur.links[r];
                let src = &cur.toks[l.src as usize];
                let dst = &cur.toks[l.dst as usize];
                let le = extra[l.dst as usize] + (src.cost + l.graph - dst.cost);
                if le <= beam {
                    cur.links[w] = l;
                    w += 1;
                }
            }
            cur.links.truncate(w);
        }
        let mut remap = vec![NONE; n];
        let mut kept = 0u32;
        for (i, t) in cur.toks.iter_mut().enumerate() {
            t.extra = extra[i];
            if extra[i] <= beam {
                remap[i] = kept;
                kept += 1;
            }
        }
        if (kept as usize) < n {
            let mut i = 0;
            cur.toks.retain(|_| {
                i += 1;
                remap[i - 1] != NONE
            });
            // Links into removed tokens were pruned above (their extra is beyond the beam).
            let ne = cur.num_emitting;
            let mut w = 0;
            let mut new_ne = 0;
            for r in 0..cur.links.len() {
                let mut l = cur.links[r];
                let dst = remap[l.dst as usize];
                let src_ok = r < ne || remap[l.src as usize] != NONE;
                if dst == NONE || !src_ok {
                    continue;
                }
                l.dst = dst;
                if r >= ne {
                    l.src = remap[l.src as usize];
                } else {
                    new_ne += 1;
                }
                cur.links[w] = l;
                w += 1;
            }
            cur.links.truncate(w);
            cur.num_emitting = new_ne;
            if let Some(next) = tail.first_mut() {
                let mut w = 0;
                let mut new_ne = 0;
                for r in 0..next.links.len() {
                    let mut l = next.links[r];
                    if r < next.num_emitting {
                        let s = remap[l.src as usize];
                        if s == NONE {
                            continue;
                        }
                        l.src = s;
                        new_ne += 1;
                    }
                    next.links[w] = l;
                    w += 1;
                }
                next.links.truncate(w);
                next.num_emitting = new_ne;
            }
        }
        cur.visited = true;
        if unchanged && f > 0 && head[f - 1].visited {
            break;
        }
    }
}

/// A path through a word lattice.
#[derive(Debug, Clone, PartialEq)]
pub struct LatticePath {
    /// Word ids.
    pub words: Vec<u32>,
    /// Segment row at which each word's arc was taken.
    pub start_rows: Vec<u32>,
    /// Graph cost (LM, lexicon, transitions, boosts).
    pub graph: f32,
    /// Acoustic cost (−acoustic_scale × loglik summed).
    pub ac: f32,
}

impl LatticePath {
    /// Total cost.
    pub fn cost(&self) -> f32 {
        self.graph + self.ac
    }

    /// End row of each word: the next word's start, the last word ends at `rows`.
    pub fn end_rows(&self, rows: u32) -> Vec<u32> {
        let mut e: Vec<u32> = self.start_rows.iter().skip(1).copied().collect();
        if !self.words.is_empty() {
            e.push(rows);
        }
        e
    }
}

/// A word-lattice arc.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WlArc {
    /// Source state.
    pub from: u32,
    /// Destination state (always greater than `from`).
    pub to: u32,
    /// Word id (never 0).
    pub word: u32,
    /// Graph cost.
    pub graph: f32,
    /// Acoustic cost.
    pub ac: f32,
    /// Segment row at which the word's arc was taken.
    pub row: u32,
}

/// An acyclic word lattice; states are numbered in topological order, state 0 is the start.
#[derive(Debug, Clone, PartialEq)]
pub struct WordLattice {
    /// Score rows of the segment.
    pub num_rows: u32,
    /// Final (graph, acoustic) cost per state; graph = +∞ when not final.
    pub finals: Vec<(f32, f32)>,
    /// Arcs sorted by source state.
    pub arcs: Vec<WlArc>,
    offsets: Vec<u32>,
}

/// Why a word lattice cannot be made from parts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("word lattice: {0}")]
pub struct LatticeError(pub String);

impl WordLattice {
    /// Builds a lattice from its states' final costs and arcs; arcs must go forward
    /// (`from < to`), carry a word and finite costs.
    pub fn from_parts(
        num_rows: u32,
        finals: Vec<(f32, f32)>,
        mut arcs: Vec<WlArc>,
    ) -> Result<Self, LatticeError> {
        let n = finals.len() as u32;
        if n == 0 {
            return Err(LatticeError("no states".into()));
        }
        for a in &arcs {
            if a.from >= a.to || a.to >= n {
                return Err(LatticeError(format!(
                    "arc {} -> {} is not forward or out of range ({n} states)",
                    a.from, a.to
                )));
            }
            if a.word == 0 || !a.graph.is_finite() || !a.ac.is_finite() {
                return Err(LatticeError(format!(
                    "arc {} -> {} has word {} and costs {} / {}",
                    a.from, a.to, a.word, a.graph, a.ac
                )));
            }
        }
        arcs.sort_by(|a, b| {
            (a.from, a.to, a.word, a.row)
                .cmp(&(b.from, b.to, b.word, b.row))
                .then(a.graph.total_cmp(&b.graph))
                .then(a.ac.total_cmp(&b.ac))
        });
        let mut offsets = vec![0u32; n as usize + 1];
        for a in &arcs {
            offsets[a.from as usize + 1] += 1;
        }
        for s in 0..n as usize {
            offsets[s + 1] += offsets[s];
        }
        Ok(Self {
            num_rows,
            finals,
            arcs,
            offsets,
        })
    }

    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.finals.len()
    }

    /// Arcs leaving state `s`.
    pub fn arcs_of(&self, s: u32) -> &[WlArc] {
        &self.arcs[self.arc_range(s)]
    }

    /// Indices (into `arcs`) of the arcs leaving state `s`.
    pub fn arc_range(&self, s: u32) -> std::ops::Range<usize> {
        self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize
    }

    /// Lattice density: word arcs per score row (002 Table 1's measure).
    pub fn density(&self) -> f64 {
        self.arcs.len() as f64 / self.num_rows.max(1) as f64
    }

    /// The cheapest path (ties: the smaller arc index), or `None` when no state is final.
    pub fn best_path(&self) -> Option<LatticePath> {
        self.best_path_with(|_| 0.0)
    }

    /// The cheapest path when each arc's cost is changed by `delta(arc)` (used by rescoring
    /// that only adds per-arc terms). Costs of the returned path are the lattice's own.
    pub fn best_path_with(&self, delta: impl Fn(&WlArc) -> f32) -> Option<LatticePath> {
        self.cheapest(|a| a.graph + a.ac + delta(a), |(g, a)| g + a)
    }

    /// The cheapest path with graph costs (arcs' and finals') weighted by `graph_scale`
    /// against the acoustic costs: the lattice's best path at another language weight
    /// (pocketsphinx's `-bestpathlw` pass; Kaldi's `lattice-scale` then `lattice-best-path`).
    /// Costs of the returned path are the lattice's own.
    ///
    /// ```
    /// use wfst_search::lattice::{WlArc, WordLattice};
    /// let arc = |from, to, word, graph, ac| WlArc { from, to, word, graph, ac, row: 0 };
    /// // Word 1: cheap for the LM, poor acoustically; word 2 the other way round.
    /// let lat = WordLattice::from_parts(
    ///     10,
    ///     vec![(f32::INFINITY, 0.0), (0.0, 0.0)],
    ///     vec![arc(0, 1, 1, 1.0, 5.0), arc(0, 1, 2, 3.0, 2.0)],
    /// )
    /// .unwrap();
    /// assert_eq!(lat.best_path_scaled(1.0).unwrap().words, [2]);
    /// assert_eq!(lat.best_path_scaled(2.0).unwrap().words, [1]);
    /// ```
    pub fn best_path_scaled(&self, graph_scale: f32) -> Option<LatticePath> {
        self.cheapest(
            |a| graph_scale * a.graph + a.ac,
            |(g, a)| graph_scale * g + a,
        )
    }

    /// The cheapest path under `arc_cost` and `final_cost` (ties: the smaller arc index, then
    /// the smaller end state).
    fn cheapest(
        &self,
        arc_cost: impl Fn(&WlArc) -> f32,
        final_cost: impl Fn((f32, f32)) -> f32,
    ) -> Option<LatticePath> {
        let n = self.num_states();
        let mut best = vec![f32::INFINITY; n];
        let mut back = vec![NONE; n];
        best[0] = 0.0;
        for s in 0..n {
            if !best[s].is_finite() {
                continue;
            }
            for (k, a) in self.arcs_of(s as u32).iter().enumerate() {
                let c = best[s] + arc_cost(a);
                let t = a.to as usize;
                if c < best[t] {
                    best[t] = c;
                    back[t] = self.offsets[s] + k as u32;
                }
            }
        }
        let (end, _) = (0..n)
            .filter(|&s| self.finals[s].0.is_finite() && best[s].is_finite())
            .map(|s| (s, best[s] + final_cost(self.finals[s])))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))?;
        Some(self.trace(end, &back))
    }

    fn trace(&self, end: usize, back: &[u32]) -> LatticePath {
        let mut arcs = Vec::new();
        let mut s = end;
        while s != 0 {
            let a = &self.arcs[back[s] as usize];
            arcs.push(*a);
            s = a.from as usize;
        }
        arcs.reverse();
        self.path_of(&arcs, end)
    }

    /// The path made of `arcs` (in order) ending in state `end`, with its summed costs.
    pub fn path_of(&self, arcs: &[WlArc], end: usize) -> LatticePath {
        let mut p = LatticePath {
            words: arcs.iter().map(|a| a.word).collect(),
            start_rows: arcs.iter().map(|a| a.row).collect(),
            graph: self.finals[end].0,
            ac: self.finals[end].1,
        };
        for a in arcs {
            p.graph += a.graph;
            p.ac += a.ac;
        }
        p
    }

    /// Up to `n` cheapest paths with distinct word sequences, cheapest first.
    pub fn n_best(&self, n: usize) -> Vec<LatticePath> {
        if n == 0 {
            return Vec::new();
        }
        // Per state: up to n (cost, graph, ac, words, rows) with distinct words.
        type Hyp = (f32, f32, f32, Vec<u32>, Vec<u32>);
        let mut lists: Vec<Vec<Hyp>> = vec![Vec::new(); self.num_states()];
        lists[0].push((0.0, 0.0, 0.0, Vec::new(), Vec::new()));
        let insert = |list: &mut Vec<Hyp>, h: Hyp| {
            if let Some(pos) = list.iter().position(|x| x.3 == h.3) {
                if h.0 < list[pos].0 {
                    list.remove(pos);
                } else {
                    return;
                }
            }
            let at = list.partition_point(|x| x.0 <= h.0);
            list.insert(at, h);
            list.truncate(n);
        };
        let mut finals: Vec<Hyp> = Vec::new();
        for s in 0..self.num_states() {
            let here = std::mem::take(&mut lists[s]);
            for a in self.arcs_of(s as u32) {
                for h in &here {
                    let mut w = h.3.clone();
                    w.push(a.word);
                    let mut r = h.4.clone();
                    r.push(a.row);
                    let nh = (h.0 + a.graph + a.ac, h.1 + a.graph, h.2 + a.ac, w, r);
                    insert(&mut lists[a.to as usize], nh);
                }
            }
            let (fg, fa) = self.finals[s];
            if fg.is_finite() {
                for h in &here {
                    insert(
                        &mut finals,
                        (h.0 + fg + fa, h.1 + fg, h.2 + fa, h.3.clone(), h.4.clone()),
                    );
                }
            }
        }
        finals
            .into_iter()
            .map(|(_, graph, ac, words, start_rows)| LatticePath {
                words,
                start_rows,
                graph,
                ac,
            })
            .collect()
    }

    /// The oracle path: fewest word errors against `reference` (ties: cheaper path). Returns
    /// the error count and the path.
    pub fn oracle(&self, reference: &[u32]) -> Option<(usize, LatticePath)> {
        let n = self.num_states();
        let m = reference.len() + 1;
        // Cell (s, j): (errors, cost, back: arc index or NONE = deletion from (s, j−1)).
        let mut err = vec![u32::MAX; n * m];
        let mut cost = vec![f32::INFINITY; n * m];
        let mut back = vec![NONE; n * m];
        let better = |e: u32, c: f32, oe: u32, oc: f32| e < oe || (e == oe && c < oc);
        err[0] = 0;
        cost[0] = 0.0;
        for s in 0..n {
            for j in 0..m {
                let i = s * m + j;
                if j > 0 {
                    let p = i - 1;
                    if err[p] != u32::MAX && better(err[p] + 1, cost[p], err[i], cost[i]) {
                        err[i] = err[p] + 1;
                        cost[i] = cost[p];
                        back[i] = NONE;
                    }
                }
                if err[i] == u32::MAX {
                    continue;
                }
                for (k, a) in self.arcs_of(s as u32).iter().enumerate() {
                    let ai = self.offsets[s] + k as u32;
                    let c = cost[i] + a.graph + a.ac;
                    let t = a.to as usize * m;
                    // insertion
                    if better(err[i] + 1, c, err[t + j], cost[t + j]) {
                        err[t + j] = err[i] + 1;
                        cost[t + j] = c;
                        back[t + j] = ai << 1;
                    }
                    if j < reference.len() {
                        let e = err[i] + u32::from(a.word != reference[j]);
                        if better(e, c, err[t + j + 1], cost[t + j + 1]) {
                            err[t + j + 1] = e;
                            cost[t + j + 1] = c;
                            back[t + j + 1] = (ai << 1) | 1;
                        }
                    }
                }
            }
        }
        let end = (0..n)
            .filter(|&s| self.finals[s].0.is_finite() && err[s * m + m - 1] != u32::MAX)
            .min_by(|&a, &b| {
                let (ia, ib) = (a * m + m - 1, b * m + m - 1);
                err[ia]
                    .cmp(&err[ib])
                    .then(cost[ia].total_cmp(&cost[ib]))
                    .then(a.cmp(&b))
            })?;
        let errors = err[end * m + m - 1] as usize;
        let mut arcs = Vec::new();
        let (mut s, mut j) = (end, m - 1);
        while !(s == 0 && j == 0) {
            let b = back[s * m + j];
            if b == NONE {
                j -= 1;
                continue;
            }
            let a = self.arcs[(b >> 1) as usize];
            arcs.push(a);
            if b & 1 == 1 {
                j -= 1;
            }
            s = a.from as usize;
        }
        arcs.reverse();
        Some((errors, self.path_of(&arcs, end)))
    }

    /// The lattice as an OpenFst-style acceptor (word:word, weight = graph + acoustic cost).
    pub fn to_fst(&self) -> StdFst {
        let mut fst = StdFst::new();
        for _ in 0..self.num_states() {
            fst.add_state();
        }
        fst.set_start(0).expect("state 0 exists");
        for (s, &(g, a)) in self.finals.iter().enumerate() {
            if g.is_finite() {
                fst.set_final(s as StateId, g + a).expect("state exists");
            }
        }
        for a in &self.arcs {
            fst.add_tr(
                a.from as StateId,
                Tr::new(a.word, a.word, a.graph + a.ac, a.to as StateId),
            )
            .expect("state exists");
        }
        fst
    }

    /// Every word sequence with its best cost (exponential: for tests on small lattices).
    pub fn word_sequences(&self) -> BTreeMap<Vec<u32>, f32> {
        let mut out = BTreeMap::new();
        let mut stack = vec![(0u32, Vec::new(), 0.0f32)];
        while let Some((s, w, c)) = stack.pop() {
            let (fg, fa) = self.finals[s as usize];
            if fg.is_finite() {
                let e = out.entry(w.clone()).or_insert(f32::INFINITY);
                *e = e.min(c + fg + fa);
            }
            for a in self.arcs_of(s) {
                let mut w2 = w.clone();
                w2.push(a.word);
                stack.push((a.to, w2, c + a.graph + a.ac));
            }
        }
        out
    }
}

/// Builds the word lattice of pruned frames. `final_graph[i]` is the final cost of frontier
/// token i (+∞ = not final). Fails with what went wrong (an ε cycle names its frame).
pub(crate) fn word_lattice(
    frames: &[LatFrame],
    labels: &ArcLabels<'_>,
    final_graph: &[f32],
) -> Result<WordLattice, String> {
    let g = labels.g;
    let nf = frames.len();
    let mut base = Vec::with_capacity(nf + 1);
    base.push(0usize);
    for f in frames {
        base.push(base.last().unwrap() + f.toks.len());
    }
    let total = *base.last().unwrap();
    let node_src = |f: usize, r: usize| -> usize {
        let l = &frames[f].links[r];
        if r < frames[f].num_emitting {
            base[f - 1] + l.src as usize
        } else {
            base[f] + l.src as usize
        }
    };
    // Forward adjacency (link ids as (frame, index)).
    let mut out_off = vec![0u32; total + 1];
    for f in 0..nf {
        for r in 0..frames[f].links.len() {
            out_off[node_src(f, r) + 1] += 1;
        }
    }
    for i in 0..total {
        out_off[i + 1] += out_off[i];
    }
    let mut fill = out_off.clone();
    let mut out = vec![(0u32, 0u32); out_off[total] as usize];
    for (f, fr) in frames.iter().enumerate() {
        for r in 0..fr.links.len() {
            let s = node_src(f, r);
            out[fill[s] as usize] = (f as u32, r as u32);
            fill[s] += 1;
        }
    }
    // Topological rank: frame-major, Kahn order over ε links within a frame.
    let mut rank = vec![0u32; total];
    let mut next_rank = 0u32;
    for (f, fr) in frames.iter().enumerate() {
        let n = fr.toks.len();
        let mut indeg = vec![0u32; n];
        for l in &fr.links[fr.num_emitting..] {
            indeg[l.dst as usize] += 1;
        }
        let mut eps_out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for l in &fr.links[fr.num_emitting..] {
            eps_out[l.src as usize].push(l.dst);
        }
        let mut q: std::collections::VecDeque<u32> =
            (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
        let mut done = 0;
        while let Some(u) = q.pop_front() {
            rank[base[f] + u as usize] = next_rank;
            next_rank += 1;
            done += 1;
            for &v in &eps_out[u as usize] {
                indeg[v as usize] -= 1;
                if indeg[v as usize] == 0 {
                    q.push_back(v);
                }
            }
        }
        if done != n {
            return Err(format!(
                "epsilon cycle in the lattice at frame {f}; the graph has an epsilon-input cycle"
            ));
        }
    }
    // Word-lattice states: the start token and destinations of word links.
    let mut is_state = vec![false; total];
    if total == 0 {
        return Ok(WordLattice::from_parts(0, vec![(f32::INFINITY, 0.0)], Vec::new()).unwrap());
    }
    let start = frames[0]
        .toks
        .iter()
        .position(|t| t.state == g.start)
        .unwrap_or(0);
    is_state[start] = true;
    for (f, fr) in frames.iter().enumerate() {
        for l in &fr.links {
            if labels.olabel(l.arc) != 0 {
                is_state[base[f] + l.dst as usize] = true;
            }
        }
    }
    let mut states: Vec<usize> = (0..total).filter(|&i| is_state[i]).collect();
    states.sort_by_key(|&i| (rank[i], i));
    let mut wl_id = vec![NONE; total];
    for (k, &i) in states.iter().enumerate() {
        wl_id[i] = k as u32;
    }
    let last = nf - 1;
    let mut finals = vec![(f32::INFINITY, 0.0f32); states.len()];
    let mut arcs: Vec<WlArc> = Vec::new();
    let mut dist_g = vec![0f32; total];
    let mut dist_a = vec![0f32; total];
    let mut stamp = vec![u32::MAX; total];
    let mut heap = BinaryHeap::new();
    let mut cands: BTreeMap<(u32, u32), WlArc> = BTreeMap::new();
    for (q, &qn) in states.iter().enumerate() {
        let q = q as u32;
        cands.clear();
        stamp[qn] = q;
        dist_g[qn] = 0.0;
        dist_a[qn] = 0.0;
        heap.push(Reverse((rank[qn], qn)));
        while let Some(Reverse((_, u))) = heap.pop() {
            let (ug, ua) = (dist_g[u], dist_a[u]);
            if u >= base[last] {
                let fc = final_graph[u - base[last]];
                if fc.is_finite() {
                    let (bg, ba) = finals[q as usize];
                    if ug + fc + ua < bg + ba {
                        finals[q as usize] = (ug + fc, ua);
                    }
                }
            }
            for &(f, r) in &out[out_off[u] as usize..out_off[u + 1] as usize] {
                let (f, r) = (f as usize, r as usize);
                let l = &frames[f].links[r];
                let v = base[f] + l.dst as usize;
                let (ng, na) = (ug + l.graph, ua + l.ac);
                let word = labels.olabel(l.arc);
                if word != 0 {
                    let to = wl_id[v];
                    let row = if r < frames[f].num_emitting {
                        f as u32 - 1
                    } else {
                        f as u32
                    };
                    let arc = WlArc {
                        from: q,
                        to,
                        word,
                        graph: ng,
                        ac: na,
                        row,
                    };
                    cands
                        .entry((to, word))
                        .and_modify(|b| {
                            if ng + na < b.graph + b.ac {
                                *b = arc;
                            }
                        })
                        .or_insert(arc);
                } else if stamp[v] != q {
                    stamp[v] = q;
                    dist_g[v] = ng;
                    dist_a[v] = na;
                    heap.push(Reverse((rank[v], v)));
                } else if ng + na < dist_g[v] + dist_a[v] {
                    dist_g[v] = ng;
                    dist_a[v] = na;
                }
            }
        }
        arcs.extend(cands.values().copied());
    }
    let num_rows = (nf - 1) as u32;
    WordLattice::from_parts(num_rows, finals, arcs).map_err(|e| e.to_string())
}

//! One score row's step (steps 1 to 3 of the search, see `search`): every token that passes the
//! expand cut crosses its emitting arcs, candidates recombine per destination, the beam cuts;
//! then the ε-closure (`closure.rs`) and the frame's end (`finish_frame`) follow.

use super::*;

impl Stream {
    #[inline(never)]
    pub(super) fn step_row_with<B: ArcDelta>(
        &mut self,
        dec: &SearchSpace<'_>,
        row: &[f32],
        booster: &B,
    ) -> Result<()> {
        let g = dec.graph();
        let cfg = dec.config();
        let k = self.frames.len() - 1;
        let scale = cfg.acoustic_scale;
        let record = cfg.lattice;
        self.dirty = true;
        let mut nt: Vec<LTok> = Vec::new();
        self.bp.clear();
        self.cand.clear();
        self.chain.clear();
        {
            let Stream {
                frames,
                map,
                chain,
                bp,
                cand,
                expand,
                active,
                ..
            } = self;
            let prev = &frames[k].toks;
            // Tokens of states from `n_ctx` on are in the stream's context (none without one).
            let n_ctx = if active.is_some() {
                g.num_states() as u32
            } else {
                u32::MAX
            };
            // Early bound from the best expandable token.
            let mut ub = f32::INFINITY;
            let best = prev
                .iter()
                .enumerate()
                .filter(|(_, t)| expand.keeps(t.cost))
                .min_by(|a, b| a.1.cost.total_cmp(&b.1.cost).then(a.0.cmp(&b.0)));
            if let Some((_, t)) = best {
                if t.state >= n_ctx {
                    let cx = active.as_ref().expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    for a in cg.emitting(cx.split(t.state).1) {
                        let (gc, ac) = arc_costs(cg.weight[a], cg.ilabel[a], -0.0, row, scale);
                        ub = ub.min(t.cost + gc + ac);
                    }
                } else {
                    let touched = booster.touches(t.state);
                    for a in g.emitting(t.state) {
                        let delta = delta_of(booster, touched, a);
                        let (gc, ac) = arc_costs(g.weight[a], g.ilabel[a], delta, row, scale);
                        let (_, wc) = word_step(g, booster, a, t.lm);
                        ub = ub.min(t.cost + (gc + wc) + ac);
                    }
                }
            }
            let bound = ub + cfg.beam;
            // Lower bounds of the booster's costs: an arc that fails the bound even with them
            // is skipped before any lookup or automaton move (exact, `ArcDelta::min_delta`).
            let (min_delta, min_word) = (booster.min_delta(), booster.min_word());
            // The arc arrays as slices of one length, taken once per frame: a row's sub-slices
            // then cost one bound check per row, not three, and stay out of the token loop.
            let weight = g.weight.as_slice();
            let n = weight.len();
            let (ilabel, next) = (&g.ilabel[..n], &g.next[..n]);
            // Relaxes emitting arc `$a` of token `$i` (`$t`), whose graph cost with the
            // booster's delta is `$gc` and acoustic cost `$ac` (both from `arc_costs`), to its
            // destination `$nx` (a macro, not a closure: called from three loops, a closure was
            // not inlined, and the call per arc cost more than the lookup it saves).
            macro_rules! relax {
                ($i:expr, $t:expr, $a:expr, $gc:expr, $ac:expr, $nx:expr) => {{
                    let (i, t, a, gc, ac) = ($i, $t, $a, $gc, $ac);
                    if B::STATEFUL && t.cost + (gc + min_word) + ac > bound {
                        continue;
                    }
                    let (lm, wc) = word_step(g, booster, a, t.lm);
                    relax_to!(i, t, a as u32, gc + wc, ac, $nx as usize, lm)
                }};
            }
            // The relaxation itself, by arc id `$a` (a main arc's index, or a context arc's
            // id), total graph cost `$gc`, destination search state `$d` and automaton state
            // `$lm`.
            macro_rules! relax_to {
                ($i:expr, $t:expr, $a:expr, $gc:expr, $ac:expr, $d:expr, $lm:expr) => {{
                    let (i, t, a, gc, ac, d, lm): (usize, &LTok, u32, f32, f32, usize, u32) =
                        ($i, $t, $a, $gc, $ac, $d, $lm);
                    let c = t.cost + gc + ac;
                    if c > bound {
                        continue;
                    }
                    let j = find::<B>(map, chain, &nt, d, lm);
                    let j = if j == NONE {
                        let j = nt.len() as u32;
                        if B::STATEFUL {
                            chain.push(map[d]);
                        }
                        map[d] = j;
                        nt.push(LTok {
                            state: d as u32,
                            lm,
                            cost: c,
                            extra: 0.0,
                        });
                        bp.push(Bp {
                            src: i as u32,
                            arc: a,
                        });
                        j
                    } else {
                        let tok = &mut nt[j as usize];
                        let b = &mut bp[j as usize];
                        if c < tok.cost || (c == tok.cost && a < b.arc) {
                            tok.cost = c;
                            *b = Bp {
                                src: i as u32,
                                arc: a,
                            };
                        }
                        j
                    };
                    if record {
                        cand.push(Link {
                            src: i as u32,
                            dst: j,
                            arc: a,
                            graph: gc,
                            ac,
                        });
                    }
                }};
            }
            let mut in_ctx = false;
            // With a word automaton, the tokens of one graph state (one per automaton state)
            // share one scan of its arcs: an arc the group's cheapest token cannot relax within
            // the bound, with the automaton's least cost, none of them can (exact). A group is
            // expanded where its first token comes in frame order, its tokens in frame order
            // for each arc (a tie on one arc still goes to the earlier token); a token alone in
            // its state expands as before, so a frame without shared states is unchanged.
            let groups = match B::STATEFUL && booster.splits() {
                true => state_groups(map, prev, expand, g),
                false => Vec::new(),
            };
            let mut role = vec![SINGLE; if groups.is_empty() { 0 } else { prev.len() }];
            for (k, group) in groups.chunk_by(|x, y| x.0 == y.0).enumerate() {
                role[group[0].0 as usize] = k as u32;
                for &(_, j) in group {
                    role[j as usize] = MEMBER;
                }
            }
            let group_list: Vec<&[(u32, u32)]> = groups.chunk_by(|x, y| x.0 == y.0).collect();
            for (i, t) in prev.iter().enumerate() {
                if !expand.keeps(t.cost) {
                    continue;
                }
                if t.state >= n_ctx {
                    in_ctx = true;
                    continue;
                }
                if B::STATEFUL && !role.is_empty() && role[i] != SINGLE {
                    if role[i] == MEMBER {
                        continue;
                    }
                    let members = group_list[role[i] as usize];
                    let least = members
                        .iter()
                        .map(|&(_, j)| prev[j as usize].cost)
                        .fold(t.cost, f32::min);
                    let touched = booster.touches(t.state);
                    for a in g.emitting(t.state) {
                        let delta = delta_of(booster, touched, a);
                        let (gc, ac) = arc_costs(weight[a], ilabel[a], delta, row, scale);
                        if least + (gc + min_word) + ac > bound {
                            continue;
                        }
                        // (`relax!` skips a token with `continue`: each token of the group
                        // in this inner loop, so one skipped token never skips the others.)
                        let group = std::iter::once(i as u32).chain(members.iter().map(|m| m.1));
                        for (j, u) in group.map(|j| (j, &prev[j as usize])) {
                            relax!(j as usize, u, a, gc, ac, next[a]);
                        }
                    }
                    continue;
                }
                let arcs = g.emitting(t.state);
                let (lo, hi) = (arcs.start, arcs.end);
                // Two loops, so that a token the booster does not touch (most of them) runs
                // the loop without any lookup.
                if booster.touches(t.state) {
                    if B::ROW_BITS && hi - lo <= 64 {
                        // The row's bits read once; each arc takes its delta from a two-entry
                        // table indexed by its bit (one shift and one load per arc, no branch:
                        // a walk from one boosted arc to the next cost fewer instructions but
                        // more branch misses, and more time). Bits past the row go unread.
                        let mut bits = booster.row_bits(lo as u32);
                        let deltas = [-0.0, booster.discount()];
                        let row_arcs = weight[lo..hi]
                            .iter()
                            .zip(&ilabel[lo..hi])
                            .zip(&next[lo..hi]);
                        for (k, ((&w, &il), &nx)) in row_arcs.enumerate() {
                            let delta = deltas[(bits & 1) as usize];
                            bits >>= 1;
                            let (gc, ac) = arc_costs(w, il, delta, row, scale);
                            relax!(i, t, lo + k, gc, ac, nx);
                        }
                    } else {
                        for a in arcs {
                            let (low, ac) = arc_costs(weight[a], ilabel[a], min_delta, row, scale);
                            if t.cost + (low + min_word) + ac > bound {
                                continue;
                            }
                            let delta = booster.delta(a as u32);
                            let (gc, ac) = arc_costs(weight[a], ilabel[a], delta, row, scale);
                            relax!(i, t, a, gc, ac, next[a]);
                        }
                    }
                } else {
                    // Weight, input label and destination from sub-slices zipped together:
                    // no bound check per arc.
                    let row_arcs = weight[lo..hi]
                        .iter()
                        .zip(&ilabel[lo..hi])
                        .zip(&next[lo..hi]);
                    for (k, ((&w, &il), &nx)) in row_arcs.enumerate() {
                        let (gc, ac) = arc_costs(w, il, -0.0, row, scale);
                        relax!(i, t, lo + k, gc, ac, nx);
                    }
                }
            }
            // The context's tokens after the main graph's, in ascending order: their arcs lead
            // to context states only, so the two never recombine with each other. A context
            // arc has no booster delta and moves no word automaton (its words are the list's).
            if in_ctx {
                let cx = active.as_ref().expect("a context token has a context");
                let cg = &cx.graph.graph;
                for (i, t) in prev.iter().enumerate() {
                    if t.state < n_ctx || !expand.keeps(t.cost) {
                        continue;
                    }
                    let (ri, c) = cx.split(t.state);
                    // By label runs: a run whose cheapest arc fails the bound is skipped whole
                    // (exact: every arc of it would fail), then each arc as the main graph's.
                    let mut a = cg.e_offsets[c as usize] as usize;
                    for r in cx.runs.of(c) {
                        let end = cx.runs.end[r] as usize;
                        let ac = -scale * row[cg.ilabel[a] as usize - 1];
                        if t.cost + cx.runs.min_w[r] + ac > bound {
                            a = end;
                            continue;
                        }
                        for a in a..end {
                            let (gc, ac) = arc_costs(cg.weight[a], cg.ilabel[a], -0.0, row, scale);
                            let d = cx.state(ri, cg.next[a]) as usize;
                            relax_to!(i, t, cx.a_main + a as u32, gc, ac, d, t.lm);
                        }
                        a = end;
                    }
                }
            }
        }
        if nt.is_empty() {
            return Err(DecodeError::NoSurvivors {
                utt: self.id.clone(),
                frame: (self.rows_total + 1) as usize,
            });
        }
        let cutoff = self.beam_prune(&mut nt, cfg.beam, B::STATEFUL);
        let mut links = if cfg.lattice {
            surviving_links(&self.cand, &self.remap, &self.frames[k].toks, cutoff)
        } else {
            Vec::new()
        };
        let num_emitting = links.len();
        let mut toks = nt;
        self.closure(g, dec.slot(), cfg, booster, &mut toks, cutoff, &mut links)?;
        self.gpu_epoch = 0;
        self.commit_frame(dec, toks, links, num_emitting, cutoff)
    }
}

/// A token alone in its graph state, for the expansion's groups.
const SINGLE: u32 = u32::MAX;
/// A token expanded with the first token of its graph state.
const MEMBER: u32 = u32::MAX - 1;

/// A graph state's tokens are expanded together from this many emitting arcs on (below it the
/// shared scan saves less than the grouping costs: a hybrid HCLG's states have a few arcs).
const GROUP_ARCS: usize = 16;

/// The expandable tokens of `prev` that share a graph state of at least [`GROUP_ARCS`]
/// emitting arcs with an earlier one, as (that state's first token, token), sorted; empty when
/// there are none (the usual frame). Found with the state map `map` (all [`NONE`] between
/// frames, and left so).
fn state_groups(
    map: &mut [u32],
    prev: &[LTok],
    expand: &ExpandCut,
    g: &DecodingGraph,
) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let n = g.num_states() as u32;
    for (i, t) in prev.iter().enumerate() {
        if !expand.keeps(t.cost) || t.state >= n || g.emitting(t.state).len() < GROUP_ARCS {
            continue;
        }
        if let Some(m) = map.get_mut(t.state as usize) {
            match *m {
                NONE => *m = i as u32,
                first => out.push((first, i as u32)),
            }
        }
    }
    for t in prev {
        if let Some(m) = map.get_mut(t.state as usize) {
            *m = NONE;
        }
    }
    out.sort_unstable();
    out
}

//! The ε-closure of a frame (step 3 of the search, see `search`): non-emitting arcs relaxed in
//! rounds, Bellman-Ford in Jacobi style, numbering new tokens as the CUDA backend does.

use super::*;

impl Stream {
    /// ε-closure of the frontier tokens `toks` under `cutoff`; appends the ε links. With a
    /// context, a slot arc enters it and a final context state leaves it (module
    /// [`crate::context`]); with a slot but no context, slot arcs are not followed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn closure<B: ArcDelta>(
        &mut self,
        g: &DecodingGraph,
        slot: Option<&SlotInfo>,
        cfg: &DecoderConfig,
        booster: &B,
        toks: &mut Vec<LTok>,
        cutoff: f32,
        links: &mut Vec<Link>,
    ) -> Result<()> {
        let Stream {
            map,
            chain,
            bp,
            frontier,
            next_frontier: flagged,
            inq,
            active,
            ..
        } = self;
        let cx = active.as_ref();
        let n_main = g.num_states() as u32;
        // Only tokens of states with ε arcs enter a frontier (most states have none: no
        // relaxation or booster question for them). A context state has them when it has ε
        // arcs or completes a phrase (the exit step).
        let has_eps = |s: u32| {
            if s < n_main {
                !g.non_emitting(s).is_empty()
            } else {
                let cx = cx.expect("a context token has a context");
                let c = cx.split(s).1;
                let cg = &cx.graph.graph;
                !cg.non_emitting(c).is_empty() || cg.final_cost[c as usize].is_finite()
            }
        };
        let has_slot = |s: u32| slot.is_some_and(|sl| s < n_main && sl.has_slot(s));
        // As in the expansion: an ε arc that fails the cut even at the booster's least costs
        // is skipped before its delta is looked up or the automaton moves.
        let (min_delta, min_word) = (booster.min_delta(), booster.min_word());
        // Round 0: every token with ε arcs, ascending, with its cost.
        frontier.clear();
        frontier.extend(
            toks.iter()
                .enumerate()
                .filter(|(_, t)| has_eps(t.state))
                .map(|(j, t)| (j as u32, t.cost)),
        );
        inq.clear();
        inq.resize(toks.len(), false);
        let mut pops = 0usize;
        while !frontier.is_empty() {
            pops += frontier.len();
            if pops > 64 * toks.len() + 100_000 {
                return Err(DecodeError::EpsilonCycle {
                    utt: self.id.clone(),
                    frame: self.frames.len(),
                });
            }
            flagged.clear();
            for &(u, cost) in frontier.iter() {
                let LTok { state, lm, .. } = toks[u as usize];
                // Relaxes the ε step `$a` (an arc id) of graph cost `$gc` to search state `$d`
                // with automaton state `$lm`. `cost` is the source's cost at the start of the
                // round, not its current one.
                macro_rules! relax_eps_to {
                    ($a:expr, $gc:expr, $d:expr, $lm:expr) => {{
                        let (a, gc, d, lm): (u32, f32, usize, u32) = ($a, $gc, $d, $lm);
                        let c = cost + gc;
                        if c > cutoff {
                            continue;
                        }
                        let j = find::<B>(map, chain, toks, d, lm);
                        if j == NONE {
                            let j = toks.len() as u32;
                            if B::STATEFUL {
                                chain.push(map[d]);
                            }
                            map[d] = j;
                            toks.push(LTok {
                                state: d as u32,
                                lm,
                                cost: c,
                                extra: 0.0,
                            });
                            bp.push(Bp { src: u, arc: a });
                            let eps = has_eps(d as u32);
                            inq.push(eps);
                            if eps {
                                flagged.push(j);
                            }
                        } else {
                            let tok = &mut toks[j as usize];
                            let b = &mut bp[j as usize];
                            if c < tok.cost {
                                tok.cost = c;
                                *b = Bp { src: u, arc: a };
                                if !inq[j as usize] && has_eps(d as u32) {
                                    inq[j as usize] = true;
                                    flagged.push(j);
                                }
                            } else if c == tok.cost && a < b.arc {
                                *b = Bp { src: u, arc: a };
                            }
                        }
                    }};
                }
                // Relaxes main ε arc `$a` with the booster's `$delta` (two loops, as in the
                // expansion: a token of an unmarked state asks nothing per arc).
                macro_rules! relax_eps {
                    ($a:expr, $delta:expr) => {{
                        let a = $a;
                        if cost + ((g.weight[a] + min_delta) + min_word) > cutoff {
                            continue;
                        }
                        let (lm, wc) = word_step(g, booster, a, lm);
                        let gc = g.weight[a] + $delta + wc;
                        relax_eps_to!(a as u32, gc, g.next[a] as usize, lm)
                    }};
                }
                if state >= n_main {
                    // Inside the context: its ε arcs, then the exit of a completed phrase.
                    let cx = cx.expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    let (ri, c) = cx.split(state);
                    for a in cg.non_emitting(c) {
                        let d = cx.state(ri, cg.next[a]) as usize;
                        relax_eps_to!(cx.a_main + a as u32, cg.weight[a], d, lm);
                    }
                    let fc = cg.final_cost[c as usize];
                    if fc.is_finite() {
                        let r = slot.expect("a context has a slot").returns[ri as usize];
                        // (Last step of this token: a cut `continue`s to the next.)
                        relax_eps_to!(cx.exit_arc(c), fc, r as usize, lm);
                    }
                    continue;
                }
                let arcs = g.non_emitting(state);
                if has_slot(state) {
                    // Slot arcs enter the context at the arc's (entry) cost, returning to the
                    // arc's destination; without a context they are not followed.
                    let sl = slot.expect("checked");
                    let touched = booster.touches_eps(state);
                    for a in arcs {
                        if g.olabel[a] != sl.word {
                            relax_eps!(a, delta_of(booster, touched, a));
                        } else if let Some(cx) = cx.filter(|_| sl.is_entry(a)) {
                            let ri = sl.return_index(g.next[a]);
                            if map.len() < cx.map_len(ri) {
                                map.resize(cx.map_len(ri), NONE);
                            }
                            let d = cx.state(ri, cx.graph.graph.start) as usize;
                            relax_eps_to!(a as u32, g.weight[a], d, lm);
                        }
                    }
                } else if booster.touches_eps(state) {
                    for a in arcs {
                        relax_eps!(a, booster.delta(a as u32));
                    }
                } else {
                    for a in arcs {
                        relax_eps!(a, -0.0);
                    }
                }
            }
            // The next round: the tokens created or improved in this one, ascending, with
            // their costs at the end of this round.
            flagged.sort_unstable();
            frontier.clear();
            for &j in flagged.iter() {
                inq[j as usize] = false;
                frontier.push((j, toks[j as usize].cost));
            }
        }
        if cfg.lattice {
            for (u, t) in toks.iter().enumerate() {
                // Records the ε step `$a` of graph cost `$gc` to search state `$d` (its token
                // exists: the rounds relaxed every step within the cut).
                macro_rules! link_to {
                    ($a:expr, $gc:expr, $d:expr, $lm:expr) => {{
                        let (a, gc, d, lm): (u32, f32, usize, u32) = ($a, $gc, $d, $lm);
                        if t.cost + gc > cutoff {
                            continue;
                        }
                        let dst = find::<B>(map, chain, toks, d, lm);
                        debug_assert_ne!(dst, NONE);
                        links.push(Link {
                            src: u as u32,
                            dst,
                            arc: a,
                            graph: gc,
                            ac: 0.0,
                        });
                    }};
                }
                macro_rules! link_eps {
                    ($a:expr, $delta:expr) => {{
                        let a = $a;
                        if t.cost + ((g.weight[a] + min_delta) + min_word) > cutoff {
                            continue;
                        }
                        let (lm, wc) = word_step(g, booster, a, t.lm);
                        let gc = g.weight[a] + $delta + wc;
                        link_to!(a as u32, gc, g.next[a] as usize, lm)
                    }};
                }
                if t.state >= n_main {
                    let cx = cx.expect("a context token has a context");
                    let cg = &cx.graph.graph;
                    let (ri, c) = cx.split(t.state);
                    for a in cg.non_emitting(c) {
                        let d = cx.state(ri, cg.next[a]) as usize;
                        link_to!(cx.a_main + a as u32, cg.weight[a], d, t.lm);
                    }
                    let fc = cg.final_cost[c as usize];
                    if fc.is_finite() {
                        let r = slot.expect("a context has a slot").returns[ri as usize];
                        // (Last step of this token: a cut `continue`s to the next.)
                        link_to!(cx.exit_arc(c), fc, r as usize, t.lm);
                    }
                    continue;
                }
                let arcs = g.non_emitting(t.state);
                if arcs.is_empty() {
                    continue;
                }
                if has_slot(t.state) {
                    let sl = slot.expect("checked");
                    let touched = booster.touches_eps(t.state);
                    for a in arcs {
                        if g.olabel[a] != sl.word {
                            link_eps!(a, delta_of(booster, touched, a));
                        } else if let Some(cx) = cx.filter(|_| sl.is_entry(a)) {
                            let ri = sl.return_index(g.next[a]);
                            let d = cx.state(ri, cx.graph.graph.start) as usize;
                            link_to!(a as u32, g.weight[a], d, t.lm);
                        }
                    }
                } else if booster.touches_eps(t.state) {
                    for a in arcs {
                        link_eps!(a, booster.delta(a as u32));
                    }
                } else {
                    for a in arcs {
                        link_eps!(a, -0.0);
                    }
                }
            }
        }
        Ok(())
    }
}

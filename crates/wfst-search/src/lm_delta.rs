//! On-the-fly LM composition for the search (003 §3.1.3 "online" G-boosting; Kaldi's biglm
//! decoder): a word automaton whose state travels with each token, so that the decoder searches
//! graph ∘ automaton lazily, without ever building the composed graph.
//!
//! - [`BackoffLm`] is the deterministic view of a back-off grammar G (as
//!   [`ctx_graph::grammar`] builds it): reading word `w` in state `h` takes the arc `h —w→`
//!   when it exists, else pays the back-off weight and retries from the back-off state (Kaldi's
//!   `BackoffDeterministicOnDemandFst`). Its cost of a sentence is the ARPA back-off cost.
//! - [`LmDelta`] is `big − small` for two such grammars of the same LM, `big` edited
//!   (G-boosting's G_boosted, `small` the G the decoding graph was compiled with): added to every
//!   word the graph emits, it turns HCLG(G) into HCLG(G_boosted) without recompiling. Without
//!   `small` it is `big` itself (for a graph compiled without G, e.g. HCL).
//!
//! [`ctx_graph::grammar::build_grammar_fst_with`] numbers the states of an unedited G first, so
//! state `s < |small|` of `big` is the same history as state `s` of `small`; an added history
//! maps to the first unedited state on its back-off chain (its longest suffix `small` knows).

use crate::error::{DecodeError, Result};
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::sync::Arc;

/// "No state".
const NONE: u32 = u32::MAX;

/// A back-off grammar in flat arrays, read deterministically (see the module notes).
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffLm {
    /// Per state, `[offsets[s], offsets[s + 1])` indexes its word arcs.
    offsets: Vec<u32>,
    /// Word label of each arc, ascending within a state.
    words: Vec<u32>,
    /// Cost (−ln p) of each arc.
    costs: Vec<f32>,
    /// Destination of each arc.
    next: Vec<u32>,
    /// Back-off state ([`NONE`] for the empty history) and its weight.
    backoff: Vec<(u32, f32)>,
    /// Final cost (the `</s>` n-gram) of each state, +∞ when not listed.
    finals: Vec<f32>,
    start: u32,
}

impl BackoffLm {
    /// Reads a grammar FST: arcs with input `backoff_label` are back-off arcs (one per state at
    /// most), every other arc must be `w:w` with `w > 0` and deterministic per state.
    pub fn from_fst(g: &StdFst, backoff_label: u32) -> Result<Self> {
        let bad = |m: String| DecodeError::Booster(format!("grammar: {m}"));
        let n = g.num_states();
        let start = g.start().ok_or_else(|| bad("no start state".into()))?;
        let mut lm = BackoffLm {
            offsets: Vec::with_capacity(n + 1),
            words: Vec::new(),
            costs: Vec::new(),
            next: Vec::new(),
            backoff: vec![(NONE, 0.0); n],
            finals: vec![f32::INFINITY; n],
            start,
        };
        lm.offsets.push(0);
        let mut arcs: Vec<(u32, f32, u32)> = Vec::new();
        for s in 0..n {
            let sid = s as StateId;
            arcs.clear();
            for tr in g.get_trs(sid).map_err(|e| bad(e.to_string()))?.trs() {
                let w = *tr.weight.value();
                if tr.ilabel == backoff_label {
                    if lm.backoff[s].0 != NONE {
                        return Err(bad(format!("state {s} has two back-off arcs")));
                    }
                    lm.backoff[s] = (tr.nextstate, w);
                } else if tr.ilabel == 0 || tr.ilabel != tr.olabel {
                    return Err(bad(format!(
                        "state {s}: arc {}:{} is neither a word nor a back-off arc",
                        tr.ilabel, tr.olabel
                    )));
                } else {
                    arcs.push((tr.ilabel, w, tr.nextstate));
                }
            }
            arcs.sort_by_key(|a| a.0);
            if let Some(p) = arcs.windows(2).find(|p| p[0].0 == p[1].0) {
                return Err(bad(format!("state {s} has two arcs for word {}", p[0].0)));
            }
            for &(w, c, d) in &arcs {
                lm.words.push(w);
                lm.costs.push(c);
                lm.next.push(d);
            }
            lm.offsets.push(lm.words.len() as u32);
            if let Some(f) = g.final_weight(sid).map_err(|e| bad(e.to_string()))? {
                lm.finals[s] = *f.value();
            }
        }
        Ok(lm)
    }

    /// Number of states.
    pub fn num_states(&self) -> usize {
        self.finals.len()
    }

    /// The start state (history `<s>`).
    pub fn start(&self) -> u32 {
        self.start
    }

    /// Reads `word` in state `s`: the next state and the cost (back-off weights included), or
    /// `None` when no state on the back-off chain knows the word.
    #[inline]
    pub fn step(&self, mut s: u32, word: u32) -> Option<(u32, f32)> {
        let mut cost = 0.0f32;
        loop {
            let (lo, hi) = (
                self.offsets[s as usize] as usize,
                self.offsets[s as usize + 1] as usize,
            );
            if let Ok(k) = self.words[lo..hi].binary_search(&word) {
                return Some((self.next[lo + k], cost + self.costs[lo + k]));
            }
            let (b, w) = self.backoff[s as usize];
            if b == NONE {
                return None;
            }
            cost += w;
            s = b;
        }
    }

    /// The cost of ending in state `s` (`</s>`, through back-off when not listed there).
    pub fn final_cost(&self, mut s: u32) -> f32 {
        let mut cost = 0.0f32;
        loop {
            let f = self.finals[s as usize];
            if f.is_finite() {
                return cost + f;
            }
            let (b, w) = self.backoff[s as usize];
            if b == NONE {
                return f32::INFINITY;
            }
            cost += w;
            s = b;
        }
    }

    /// The back-off state of `s` ([`None`] for the empty history).
    pub fn backoff_state(&self, s: u32) -> Option<u32> {
        let b = self.backoff[s as usize].0;
        (b != NONE).then_some(b)
    }

    /// Cost of a word sequence from the start state, `</s>` included (+∞ for an unknown word).
    pub fn sentence_cost(&self, words: &[u32]) -> f32 {
        let mut s = self.start;
        let mut cost = 0.0;
        for &w in words {
            match self.step(s, w) {
                Some((d, c)) => {
                    s = d;
                    cost += c;
                }
                None => return f32::INFINITY,
            }
        }
        cost + self.final_cost(s)
    }
}

/// `big − small` as a word automaton over `big`'s states (see the module notes); shared, so a
/// clone per stream is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct LmDelta {
    inner: Arc<DeltaInner>,
}

#[derive(Debug, PartialEq)]
struct DeltaInner {
    big: BackoffLm,
    small: Option<(Arc<BackoffLm>, Vec<u32>)>,
}

impl LmDelta {
    /// The difference `big − small` of two grammars of one LM (`big` = `small` edited, built
    /// with [`ctx_graph::grammar::build_grammar_fst_with`]), or `big` alone when `small` is
    /// `None`. `small` is shared: one G serves the deltas of many lists.
    pub fn new(big: BackoffLm, small: Option<Arc<BackoffLm>>) -> Result<Self> {
        let small = match small {
            None => None,
            Some(small) => {
                if small.num_states() > big.num_states() || small.start != big.start {
                    return Err(DecodeError::Booster(format!(
                        "LM delta: the edited grammar ({} states, start {}) does not extend the \
                         decoding graph's ({} states, start {}); were both built from one LM?",
                        big.num_states(),
                        big.start,
                        small.num_states(),
                        small.start
                    )));
                }
                let n = small.num_states() as u32;
                let mut map: Vec<u32> = (0..n).collect();
                for s in n..big.num_states() as u32 {
                    let mut t = s;
                    while t >= n {
                        t = big.backoff_state(t).ok_or_else(|| {
                            DecodeError::Booster(format!(
                                "LM delta: added history state {s} backs off to no known history"
                            ))
                        })?;
                    }
                    map.push(t);
                }
                Some((small, map))
            }
        };
        Ok(Self {
            inner: Arc::new(DeltaInner { big, small }),
        })
    }

    /// The automaton's start state.
    #[inline]
    pub fn start(&self) -> u32 {
        self.inner.big.start
    }

    /// Reads `word` in state `s`: the next state and the cost to add (+∞ when `big` does not
    /// know the word).
    #[inline]
    pub fn word(&self, s: u32, word: u32) -> (u32, f32) {
        let inner = &*self.inner;
        let Some((d, cb)) = inner.big.step(s, word) else {
            return (s, f32::INFINITY);
        };
        match &inner.small {
            None => (d, cb),
            Some((small, map)) => match small.step(map[s as usize], word) {
                Some((_, cs)) => (d, cb - cs),
                None => (d, cb),
            },
        }
    }

    /// The cost to add when a path ends in state `s`.
    #[inline]
    pub fn final_cost(&self, s: u32) -> f32 {
        let inner = &*self.inner;
        let fb = inner.big.final_cost(s);
        match &inner.small {
            None => fb,
            Some((small, map)) => {
                let fs = small.final_cost(map[s as usize]);
                if fb.is_finite() && fs.is_finite() {
                    fb - fs
                } else {
                    fb
                }
            }
        }
    }

    /// States of the edited grammar.
    pub fn num_states(&self) -> usize {
        self.inner.big.num_states()
    }

    /// The cost the automaton adds to a whole word sequence (ending included).
    pub fn sentence_cost(&self, words: &[u32]) -> f32 {
        let mut s = self.start();
        let mut cost = 0.0;
        for &w in words {
            let (d, c) = self.word(s, w);
            s = d;
            cost += c;
        }
        cost + self.final_cost(s)
    }
}

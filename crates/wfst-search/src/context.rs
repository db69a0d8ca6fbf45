//! Open-vocabulary contexts in the search (docs/design.md §3): a stream's
//! [`ContextGraph`] entered from the main graph's class slot and left at a completed phrase.
//!
//! The main graph (HCLG or TLG built with a slot) holds ε:`#CONTEXT` arcs. For a stream with a
//! context such an arc is not a word: it leads into the context graph's start state, and the
//! token remembers where to come back to — the slot arc's destination, its *return state*. A
//! token on a final context state (a phrase completed) leaves by an ε step to its return state
//! at the final cost (−weight). For a stream without a context the slot arcs are not followed.
//!
//! **State space.** With `N` main states, `M` context states and the slot arcs' distinct
//! destinations `r_0 < r_1 < …` (their *return indices*, a property of the main graph: usually a
//! handful), context state `c` with return index `i` is search state `N + i·M + c`. A state id
//! therefore names (context state, return state) exactly — the recombination key — and the
//! search's per-state map, beam and lattice code stay as they are. The map grows by `M` entries
//! per return index a stream enters.
//!
//! **Arc ids.** Main arcs keep their CSR index (`0..A`); context arc `a` is `A + a`; the exit
//! step of final context state `c` is `A + num_arcs(context) + c` (one id per source state, so
//! that an arc id names its source state given its destination: the CUDA backend finds an ε
//! token's back-pointer that way, and the tie rule on equal costs — the smaller arc id — is one
//! rule on both backends). So lattice links and back-pointers keep one index type, and
//! [`ArcLabels`] answers what an id reads and writes.
//!
//! **Words.** Context output label `k > 0` is written as word id `base + k − 1`, where `base`
//! ([`SlotInfo::word_base`]) is one past the main graph's largest output label; the segment's
//! [`ContextWords`] spells it.

use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use std::sync::Arc;

/// What the search needs to know about a main graph's class slot, found once per decoder.
#[derive(Debug, Clone)]
pub struct SlotInfo {
    /// The slot's output label (`LangSymbols::context_slot`).
    pub word: u32,
    /// Per main state, one bit: the state has a slot arc (followed or not).
    has_slot: Vec<u64>,
    /// Per arc, one bit: a slot arc the search follows into a context.
    slot_arc: Vec<u64>,
    /// The slot arcs' distinct destinations, ascending (return index = position).
    pub returns: Vec<u32>,
    /// Word id of the first context word: one past the main graph's largest output label.
    pub word_base: u32,
}

impl SlotInfo {
    /// Scans `g` for the arcs with output `word`. Fails when one is emitting (the slot is an ε
    /// step of the main graph) or when there is none (the graph was built without the slot).
    ///
    /// `silence`: where some slot arcs leave a state that loops on a silence label (a CTC
    /// graph's blank state), only those are kept — the phrase starts after a blank, as the
    /// context graph's start state expects ("blanks before a phrase belong to the main graph").
    /// A normal-topology TLG has one slot arc per T state (869 on Earnings-21: the last token
    /// before the slot), each its own return state and so its own copy of the context's search;
    /// the blank state's is the one that lets the phrase's first token be anything.
    pub fn find(
        g: &DecodingGraph,
        word: u32,
        silence: &dyn Fn(u32) -> bool,
    ) -> Result<Self, String> {
        let num_e = g.num_emitting();
        let mut arcs: Vec<(u32, usize, bool)> = Vec::new();
        for s in 0..g.num_states() as u32 {
            for a in g.emitting(s).chain(g.non_emitting(s)) {
                if g.olabel[a] == word {
                    if a < num_e {
                        return Err(format!(
                            "the slot word (output label {word}) is on an emitting arc of state {s}; \
                             the slot must be an epsilon-input arc"
                        ));
                    }
                    let quiet = g
                        .emitting(s)
                        .any(|e| g.next[e] == s && silence(g.ilabel[e]));
                    arcs.push((s, a, quiet));
                }
            }
        }
        if arcs.is_empty() {
            return Err(format!(
                "the graph has no arc with the slot word (output label {word}): build it with \
                 a context slot to decode open-vocabulary contexts"
            ));
        }
        // Every state with a slot arc is marked (its slot arcs are never plain ε arcs); only
        // the kept ones enter.
        let mut has_slot = vec![0u64; g.num_states().div_ceil(64)];
        for &(s, _, _) in &arcs {
            has_slot[s as usize / 64] |= 1 << (s % 64);
        }
        if arcs.iter().any(|x| x.2) {
            arcs.retain(|x| x.2);
        }
        let mut slot_arc = vec![0u64; g.num_arcs().div_ceil(64)];
        let mut returns = Vec::new();
        for &(_, a, _) in &arcs {
            slot_arc[a / 64] |= 1 << (a % 64);
            returns.push(g.next[a]);
        }
        returns.sort_unstable();
        returns.dedup();
        let word_base = g.olabel.iter().copied().max().unwrap_or(0) + 1;
        Ok(Self {
            word,
            has_slot,
            slot_arc,
            returns,
            word_base,
        })
    }

    /// Whether arc `a` (with the slot word) is an entry the search follows.
    #[inline]
    pub fn is_entry(&self, a: usize) -> bool {
        self.slot_arc[a / 64] >> (a % 64) & 1 != 0
    }

    /// Whether main state `s` has a slot arc.
    #[inline]
    pub fn has_slot(&self, s: u32) -> bool {
        self.has_slot[s as usize / 64] >> (s % 64) & 1 != 0
    }

    /// The entry arcs the search follows, ascending: (arc, weight, return index).
    pub(crate) fn entries(&self, g: &DecodingGraph) -> Vec<(u32, f32, u32)> {
        (0..g.num_arcs())
            .filter(|&a| self.is_entry(a))
            .map(|a| (a as u32, g.weight[a], self.return_index(g.next[a])))
            .collect()
    }

    /// The return index of main state `r` (a slot arc's destination).
    #[inline]
    pub(crate) fn return_index(&self, r: u32) -> u32 {
        self.returns
            .binary_search(&r)
            .expect("a slot arc's destination is a return state") as u32
    }
}

/// The words a segment's context wrote: word id `base + k` is `graph.words[k]`.
#[derive(Debug, Clone)]
pub struct ContextWords {
    /// Word id of the context's first word.
    pub base: u32,
    /// The context graph the segment was decoded with.
    pub graph: Arc<ContextGraph>,
}

impl ContextWords {
    /// The spelling of word id `id` when it is a context word.
    pub fn word(&self, id: u32) -> Option<&str> {
        id.checked_sub(self.base)
            .and_then(|k| self.graph.words.get(k as usize))
            .map(String::as_str)
    }
}

/// A context graph's emitting arcs in runs of one input label (the compiler sorts each
/// state's emitting arcs by label), each run with its smallest weight: the expansion skips a
/// run whose cheapest arc already fails the bound — exactly, as float addition is monotonic —
/// so the trie root's fan-out (one arc per distinct first word, entered at every frame) costs
/// one check per distinct first piece, not one relaxation per phrase.
#[derive(Debug, Clone, Default)]
pub(crate) struct LabelRuns {
    /// Per state, its runs `off[s]..off[s + 1]`.
    off: Vec<u32>,
    /// Per run: one past its last arc.
    pub end: Vec<u32>,
    /// Per run: its smallest arc weight.
    pub min_w: Vec<f32>,
}

impl LabelRuns {
    pub fn new(g: &DecodingGraph) -> Self {
        let mut r = Self {
            off: Vec::with_capacity(g.num_states() + 1),
            ..Default::default()
        };
        for s in 0..g.num_states() as u32 {
            r.off.push(r.end.len() as u32);
            let arcs = g.emitting(s);
            let mut a = arcs.start;
            while a < arcs.end {
                let (il, mut w, mut e) = (g.ilabel[a], g.weight[a], a + 1);
                while e < arcs.end && g.ilabel[e] == il {
                    w = w.min(g.weight[e]);
                    e += 1;
                }
                r.end.push(e as u32);
                r.min_w.push(w);
                a = e;
            }
        }
        r.off.push(r.end.len() as u32);
        r
    }

    /// The runs of state `s`.
    #[inline]
    pub fn of(&self, s: u32) -> std::ops::Range<usize> {
        self.off[s as usize] as usize..self.off[s as usize + 1] as usize
    }
}

/// A stream's context while it decodes a segment: the graph and the layout of its states and
/// arcs after the main graph's.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    pub graph: Arc<ContextGraph>,
    /// The graph's emitting arcs by label runs.
    pub runs: Arc<LabelRuns>,
    /// Main graph's states (`N`) and arcs (`A`).
    pub n_main: u32,
    pub a_main: u32,
    /// Context states (`M`).
    pub m: u32,
    /// The first exit step's arc id (`A + num_arcs(context)`).
    pub exit_base: u32,
    /// The decoder's context word base.
    pub word_base: u32,
}

impl Active {
    pub fn new(
        graph: Arc<ContextGraph>,
        runs: Arc<LabelRuns>,
        main: &DecodingGraph,
        slot: &SlotInfo,
    ) -> Self {
        let a_main = main.num_arcs() as u32;
        Self {
            runs,
            n_main: main.num_states() as u32,
            a_main,
            m: graph.graph.num_states() as u32,
            exit_base: a_main + graph.graph.num_arcs() as u32,
            word_base: slot.word_base,
            graph,
        }
    }

    /// The arc id of the exit step from (final) context state `c`.
    #[inline]
    pub fn exit_arc(&self, c: u32) -> u32 {
        self.exit_base + c
    }

    /// Search state of context state `c` with return index `ri`.
    #[inline]
    pub fn state(&self, ri: u32, c: u32) -> u32 {
        self.n_main + ri * self.m + c
    }

    /// (return index, context state) of search state `s ≥ N`.
    #[inline]
    pub fn split(&self, s: u32) -> (u32, u32) {
        let v = s - self.n_main;
        (v / self.m, v % self.m)
    }

    /// Map entries needed to hold return index `ri`'s states.
    #[inline]
    pub fn map_len(&self, ri: u32) -> usize {
        (self.n_main + (ri + 1) * self.m) as usize
    }
}

/// What an arc id reads and writes, over the main graph and a stream's context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArcLabels<'a> {
    pub g: &'a DecodingGraph,
    pub ctx: Option<&'a Active>,
    /// The slot word (written as no word), `u32::MAX` without a slot.
    pub slot: u32,
}

impl ArcLabels<'_> {
    /// The word arc `x` writes (0: none; the slot step writes none).
    #[inline]
    pub fn olabel(&self, x: u32) -> u32 {
        let x = x as usize;
        if x < self.g.olabel.len() {
            let w = self.g.olabel[x];
            return if w == self.slot { 0 } else { w };
        }
        let c = self.ctx.expect("a context arc id without a context");
        let k = x - c.a_main as usize;
        match c.graph.graph.olabel.get(k) {
            Some(&w) if w > 0 => c.word_base + w - 1,
            _ => 0,
        }
    }

    /// The input label of arc `x` (0 for ε steps).
    #[inline]
    pub fn ilabel(&self, x: u32) -> u32 {
        let x = x as usize;
        if x < self.g.ilabel.len() {
            return self.g.ilabel[x];
        }
        let c = self.ctx.expect("a context arc id without a context");
        let k = x - c.a_main as usize;
        c.graph.graph.ilabel.get(k).copied().unwrap_or(0)
    }

    /// Whether arc `x` reads a score row.
    #[inline]
    pub fn is_emitting(&self, x: u32) -> bool {
        let x = x as usize;
        if x < self.g.ilabel.len() {
            return x < self.g.num_emitting();
        }
        let c = self.ctx.expect("a context arc id without a context");
        x - (c.a_main as usize) < c.graph.graph.num_emitting()
    }
}

//! Per-stream cost modifiers (docs/design.md §4). A booster never copies the graph: it adds a cost
//! delta to an arc when the arc is relaxed, looked up from the arc's CSR index, or — a word
//! automaton ([`LmDelta`]) — carries a state along each token and adds a cost per output word.

use crate::error::{DecodeError, Result};
use crate::lm_delta::LmDelta;
use crate::phrase_automaton::PhraseAutomaton;
use ctx_graph::csr::DecodingGraph;

/// A state's mark bit: one of its emitting arcs is boosted.
const EMITTING: u8 = 1;
/// A state's mark bit: one of its non-emitting arcs is boosted.
const EPSILON: u8 = 2;

/// A sorted, de-duplicated set of arc indices that all earn one discount (000 Algorithm 1's
/// per-context list). The sorted list is what the GPU binary-searches; the CPU backend also keeps
/// a bitmap over `0..=max index` built from it, because a binary search on every relaxed arc
/// costs more than the relaxation itself (measured: +79% decode time with 1,000 phrases), and a
/// byte per graph state marking those with a boosted emitting arc (bit [`EMITTING`]) or a
/// boosted non-emitting one (bit [`EPSILON`]), because even the bitmap lookup per arc costs
/// about 12% (`benches/overhead.rs`): a token of an unmarked state — most of them — expands
/// exactly as without a booster, and a marked state's row reads its arcs' bits as one word
/// ([`ArcDelta::row_bits`]) and takes each arc's delta from a two-entry table. Two bits,
/// because a state marked for its emitting arcs only (most marked ones) would otherwise also
/// look up every ε arc in the closure. A byte per state (117 kB on the ATCO2 graph, per list,
/// not per stream) instead of a bit: the question per token is one load. All are shared
/// (`Arc`), so cloning a booster per stream is cheap.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArcSetBooster {
    arcs: std::sync::Arc<Vec<u32>>,
    bits: std::sync::Arc<Vec<u64>>,
    states: std::sync::Arc<Vec<u8>>,
    num_states: usize,
    discount: f32,
    slot: Option<PoolSlot>,
}

/// Where an arc list also lies in a pool of lists kept in one buffer (the context registry of
/// `hclg-boost`): which pool, its layout generation (bumped when lists move) and the list's
/// offset. A device that holds the pool reads the list there instead of a copy per batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSlot {
    /// The pool's identity (unique per process).
    pub pool: u64,
    /// The pool's layout generation the offset belongs to.
    pub generation: u64,
    /// First element of the list in the pool.
    pub offset: u32,
}

impl ArcSetBooster {
    /// Builds the set for graph `g`; `arcs` may come unsorted and with duplicates (emitting and
    /// non-emitting CSR ranges interleave when collected state by state). An arc index outside
    /// the graph is an error.
    pub fn new(g: &DecodingGraph, mut arcs: Vec<u32>, discount: f32) -> Result<Self> {
        if !discount.is_finite() {
            return Err(DecodeError::Booster(format!(
                "discount {discount} is not finite"
            )));
        }
        arcs.sort_unstable();
        arcs.dedup();
        if let Some(&a) = arcs.last().filter(|&&a| a as usize >= g.num_arcs()) {
            return Err(DecodeError::Booster(format!(
                "arc index {a} is outside the graph ({} arcs)",
                g.num_arcs()
            )));
        }
        let mut bits = vec![0u64; arcs.last().map_or(0, |&m| m as usize / 64 + 1)];
        for &a in &arcs {
            bits[a as usize / 64] |= 1 << (a % 64);
        }
        // Each boosted arc's state, by binary search of the offsets (the arcs of one kind lie
        // in state order; a state without arcs of that kind never ends such a search): a
        // list is built per utterance, so this is per boosted arc, not per graph arc.
        let n = g.num_states();
        let mut states = vec![0u8; n];
        let num_e = g.num_emitting();
        for &a in &arcs {
            let (offsets, mark) = if (a as usize) < num_e {
                (&g.e_offsets, EMITTING)
            } else {
                (&g.ne_offsets, EPSILON)
            };
            let s = offsets[..n].partition_point(|&o| o <= a) - 1;
            states[s] |= mark;
        }
        Ok(Self {
            arcs: std::sync::Arc::new(arcs),
            bits: std::sync::Arc::new(bits),
            states: std::sync::Arc::new(states),
            num_states: n,
            discount,
            slot: None,
        })
    }

    /// This set, marked as also lying at `slot` of a pool (its arcs must be the pool's
    /// `slot.offset..slot.offset + len` elements; the pool's owner guarantees it).
    pub fn with_slot(mut self, slot: PoolSlot) -> Self {
        self.slot = Some(slot);
        self
    }

    /// Where this set also lies in a pool, if anywhere.
    pub fn slot(&self) -> Option<PoolSlot> {
        self.slot
    }

    /// Whether state `s` has a boosted arc (emitting or not).
    #[inline]
    pub fn touches(&self, s: u32) -> bool {
        self.states.get(s as usize).is_some_and(|&m| m != 0)
    }

    /// Whether `arc` is in the set, by binary search of the sorted list (the GPU's rule).
    pub fn contains_sorted(&self, arc: u32) -> bool {
        self.arcs.binary_search(&arc).is_ok()
    }

    /// The boosted arc indices, ascending.
    pub fn arcs(&self) -> &[u32] {
        &self.arcs
    }

    /// The discount added to a boosted arc's cost (negative = boost).
    pub fn discount(&self) -> f32 {
        self.discount
    }

    /// The cost delta of arc `arc` (bitmap lookup; same answer as [`Self::contains_sorted`]).
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        self.view().delta(arc)
    }

    /// Heap bytes of this list (the sorted arcs, the bitmap and the state marks): what one
    /// biasing list costs, shared by every stream that decodes with it.
    pub fn heap_bytes(&self) -> usize {
        4 * self.arcs.len() + 8 * self.bits.len() + self.states.len()
    }
}

/// For each word id of a graph, the states with an arc that outputs it, flagged emitting or ε:
/// built once per graph (one pass over the arcs) so that a [`WordBooster`] costs its own words'
/// arcs instead of a scan of the whole graph.
#[derive(Debug, Clone, Default)]
pub struct WordArcIndex {
    /// Entries of word w: `entries[offsets[w]..offsets[w + 1]]`.
    offsets: Vec<u32>,
    /// (state, EMITTING or EPSILON), one per distinct pair, by word then state.
    entries: Vec<(u32, u8)>,
    num_states: usize,
}

impl WordArcIndex {
    /// Indexes every arc of `g` with a non-ε output label.
    pub fn new(g: &DecodingGraph) -> Self {
        let n = g.num_states();
        let num_e = g.num_emitting();
        let mut pairs: Vec<(u32, u32, u8)> = Vec::new();
        for s in 0..n as u32 {
            for a in g.emitting(s).chain(g.non_emitting(s)) {
                let w = g.olabel[a];
                if w != 0 {
                    pairs.push((w, s, if a < num_e { EMITTING } else { EPSILON }));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let max_w = pairs.last().map_or(0, |p| p.0) as usize;
        let mut offsets = vec![0u32; max_w + 2];
        for p in &pairs {
            offsets[p.0 as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        Self {
            offsets,
            entries: pairs.into_iter().map(|(_, s, f)| (s, f)).collect(),
            num_states: n,
        }
    }

    /// The (state, flag) pairs of word `w` (empty for a word no arc outputs).
    pub fn states_of(&self, w: u32) -> &[(u32, u8)] {
        let w = w as usize;
        if w + 1 >= self.offsets.len() {
            return &[];
        }
        &self.entries[self.offsets[w] as usize..self.offsets[w + 1] as usize]
    }

    /// States of the indexed graph.
    pub fn num_states(&self) -> usize {
        self.num_states
    }
}

/// Word boosting (001 §3.3, Fig. 4–5): a cost added to every arc whose output label is one of
/// the listed words — the single-state acceptor B of 001 applied on the fly, without composing
/// or copying the graph. The cost is in the graph's units (−log, like arc weights): a negative
/// cost boosts the word, a positive one penalises it; 001's "boost ≤ beam/2" rule is about its
/// magnitude. Stateless: a word's bonus does not depend on the words before it (phrases with
/// partial-match take-back are [`PhraseAutomaton`]'s job). The CPU backend marks the states with
/// a boosted arc (as [`ArcSetBooster`] does) so other tokens expand with no lookup; the GPU looks
/// each output label up by binary search in the sorted word list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WordBooster {
    words: std::sync::Arc<Vec<u32>>,
    bonus: std::sync::Arc<Vec<f32>>,
    states: std::sync::Arc<Vec<u8>>,
    num_states: usize,
    /// The smallest cost added to any arc (the least bonus and 0): the loops' early test.
    min_cost: f32,
    /// For a list of at least 1/64 of the vocabulary: the cost by word id (−0.0 unlisted), one
    /// load per lookup instead of a binary search (at most 256 bytes per listed word).
    dense: Option<std::sync::Arc<Vec<f32>>>,
}

impl WordBooster {
    /// Builds the table for graph `g` from (word id, cost) entries; a word given twice keeps its
    /// last cost. Word 0 (ε) and non-finite costs are errors. Scans the graph once; many tables
    /// over one graph share a [`WordArcIndex`] through [`Self::with_index`].
    pub fn new(g: &DecodingGraph, entries: impl IntoIterator<Item = (u32, f32)>) -> Result<Self> {
        Self::with_index(&WordArcIndex::new(g), entries)
    }

    /// [`Self::new`] with the graph's word-arc index built beforehand: the cost is the boosted
    /// words' arcs, not a scan of every arc (per-utterance tables at decoding speed).
    pub fn with_index(
        index: &WordArcIndex,
        entries: impl IntoIterator<Item = (u32, f32)>,
    ) -> Result<Self> {
        let mut map = std::collections::BTreeMap::new();
        for (w, c) in entries {
            if w == 0 {
                return Err(DecodeError::Booster(
                    "word id 0 is epsilon, not a word to boost".into(),
                ));
            }
            if !c.is_finite() {
                return Err(DecodeError::Booster(format!(
                    "word {w}: boost cost {c} is not finite"
                )));
            }
            map.insert(w, c);
        }
        let words: Vec<u32> = map.keys().copied().collect();
        let bonus: Vec<f32> = map.values().copied().collect();
        let n = index.num_states;
        let mut states = vec![0u8; n];
        for &w in &words {
            for &(s, flag) in index.states_of(w) {
                states[s as usize] |= flag;
            }
        }
        let min_cost = bonus.iter().fold(-0.0f32, |m, &c| m.min(c));
        let top = words.last().map_or(0, |&w| w as usize);
        let dense = (words.len() * 64 >= top).then(|| {
            let mut d = vec![-0.0f32; top + 1];
            for (&w, &c) in words.iter().zip(&bonus) {
                d[w as usize] = c;
            }
            std::sync::Arc::new(d)
        });
        Ok(Self {
            words: std::sync::Arc::new(words),
            bonus: std::sync::Arc::new(bonus),
            states: std::sync::Arc::new(states),
            num_states: n,
            min_cost,
            dense,
        })
    }

    /// The boosted word ids, ascending.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The cost of each word of [`Self::words`].
    pub fn costs(&self) -> &[f32] {
        &self.bonus
    }

    /// The cost added to an arc with output label `word` (−0.0, adding nothing, when unlisted).
    #[inline]
    pub fn cost_of(&self, word: u32) -> f32 {
        if let Some(d) = &self.dense {
            return d.get(word as usize).copied().unwrap_or(-0.0);
        }
        match self.words.binary_search(&word) {
            Ok(i) if word != 0 => self.bonus[i],
            _ => -0.0,
        }
    }

    /// The view the search loops use, over the graph's output labels.
    pub(crate) fn view<'a>(&'a self, olabel: &'a [u32]) -> WordView<'a> {
        WordView {
            booster: self,
            olabel,
        }
    }
}

/// A [`WordBooster`] with the graph's output labels, as the search loops read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WordView<'a> {
    booster: &'a WordBooster,
    olabel: &'a [u32],
}

impl ArcDelta for WordView<'_> {
    #[inline(always)]
    fn touches(&self, s: u32) -> bool {
        self.booster
            .states
            .get(s as usize)
            .is_some_and(|&m| m & EMITTING != 0)
    }

    #[inline(always)]
    fn touches_eps(&self, s: u32) -> bool {
        self.booster
            .states
            .get(s as usize)
            .is_some_and(|&m| m & EPSILON != 0)
    }

    #[inline(always)]
    fn delta(&self, arc: u32) -> f32 {
        self.booster.cost_of(self.olabel[arc as usize])
    }

    #[inline(always)]
    fn min_delta(&self) -> f32 {
        self.booster.min_cost
    }

    #[inline(always)]
    fn min_word(&self) -> f32 {
        -0.0
    }
}

/// An arc's cost delta, as the search loops ask for it. The loops are generic over it so each
/// booster kind gets its own compiled loop ([`NoDelta`] for none: nothing left per arc).
///
/// A *stateful* booster (a word automaton) also has a state per token: tokens recombine per
/// (graph state, automaton state), and an arc with output word `w` moves the automaton with
/// [`ArcDelta::word`], adding its cost to the arc's graph cost.
pub(crate) trait ArcDelta {
    /// Whether tokens carry an automaton state (compile-time, so stateless loops pay nothing).
    const STATEFUL: bool = false;

    /// Whether an emitting arc of state `s` may have a delta: asked once per token, so that a
    /// token of a state without one expands with no per-arc lookup.
    fn touches(&self, s: u32) -> bool;

    /// [`ArcDelta::touches`] for the non-emitting arcs of `s` (the ε-closure's question).
    #[inline(always)]
    fn touches_eps(&self, s: u32) -> bool {
        self.touches(s)
    }

    /// The cost delta of arc `arc` (0 for unboosted arcs).
    fn delta(&self, arc: u32) -> f32;

    /// A lower bound of every arc's delta (−∞: none known). The loops add it instead of the
    /// delta to test an arc against the beam first, and look the delta up only for an arc that
    /// might pass: exact (float addition is monotonic), and it makes a big list's lookups as
    /// many as the arcs near the beam, not as the arcs of every touched state.
    #[inline(always)]
    fn min_delta(&self) -> f32 {
        f32::NEG_INFINITY
    }

    /// A lower bound of every cost [`ArcDelta::word`] adds (−∞: none known); the automaton's
    /// move is skipped for an arc that fails the beam even with it.
    #[inline(always)]
    fn min_word(&self) -> f32 {
        f32::NEG_INFINITY
    }

    /// The next automaton state and the added cost after output word `word`.
    #[inline(always)]
    fn word(&self, state: u32, _word: u32) -> (u32, f32) {
        (state, -0.0)
    }

    /// Whether tokens of one graph state may differ in automaton state (a stateful booster
    /// with an automaton; a stack of arc boosters is stateful without one).
    #[inline(always)]
    fn splits(&self) -> bool {
        Self::STATEFUL
    }

    /// Whether [`ArcDelta::row_bits`] and [`ArcDelta::discount`] describe the deltas (one
    /// discount for a set of arcs), so that a state's row of arcs reads its bits once.
    const ROW_BITS: bool = false;

    /// Bit `i` set when arc `a + i` earns the discount (`i < 64`).
    #[inline(always)]
    fn row_bits(&self, _a: u32) -> u64 {
        0
    }

    /// The one discount of a [`ArcDelta::ROW_BITS`] booster.
    #[inline(always)]
    fn discount(&self) -> f32 {
        -0.0
    }
}

/// No booster: every delta is −0.0, which `x + (−0.0) = x` lets the compiler drop.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoDelta;

impl ArcDelta for NoDelta {
    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn min_delta(&self) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn min_word(&self) -> f32 {
        -0.0
    }
}

/// An [`ArcSetBooster`] as the search loops read it: plain slices taken once per frame, so that
/// a lookup is one load (through the shared `Arc<Vec>` it is three dependent loads, which the
/// compiler cannot hoist out of a loop that writes tokens).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArcSetView<'a> {
    bits: &'a [u64],
    states: &'a [u8],
    discount: f32,
}

impl ArcSetBooster {
    /// The view the search loops use.
    pub(crate) fn view(&self) -> ArcSetView<'_> {
        ArcSetView {
            bits: &self.bits,
            states: &self.states,
            discount: self.discount,
        }
    }
}

impl ArcDelta for ArcSetView<'_> {
    #[inline(always)]
    fn touches(&self, s: u32) -> bool {
        self.states
            .get(s as usize)
            .is_some_and(|&m| m & EMITTING != 0)
    }

    #[inline(always)]
    fn touches_eps(&self, s: u32) -> bool {
        self.states
            .get(s as usize)
            .is_some_and(|&m| m & EPSILON != 0)
    }

    /// Branch-free: within a state that has boosted arcs, whether the next arc is one is a coin
    /// toss the branch predictor loses.
    #[inline(always)]
    fn delta(&self, arc: u32) -> f32 {
        let w = self.bits.get(arc as usize / 64).copied().unwrap_or(0);
        self.discount * (w >> (arc % 64) & 1) as f32
    }

    const ROW_BITS: bool = true;

    /// The 64 bits from arc `a` on, from the two words they straddle (branch-free: the high
    /// word's shift is split in two so that `a % 64 == 0` shifts it out entirely).
    #[inline(always)]
    fn row_bits(&self, a: u32) -> u64 {
        let (w, s) = (a as usize / 64, a % 64);
        let lo = self.bits.get(w).copied().unwrap_or(0);
        let hi = self.bits.get(w + 1).copied().unwrap_or(0);
        lo >> s | (hi << 1) << (63 - s)
    }

    #[inline(always)]
    fn discount(&self) -> f32 {
        self.discount
    }

    #[inline(always)]
    fn min_delta(&self) -> f32 {
        self.discount.min(-0.0)
    }

    #[inline(always)]
    fn min_word(&self) -> f32 {
        -0.0
    }
}

impl ArcDelta for LmDelta {
    const STATEFUL: bool = true;

    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        LmDelta::word(self, state, word)
    }

    #[inline(always)]
    fn min_delta(&self) -> f32 {
        -0.0
    }
}

impl ArcDelta for PhraseAutomaton {
    const STATEFUL: bool = true;

    #[inline(always)]
    fn touches(&self, _s: u32) -> bool {
        false
    }

    #[inline(always)]
    fn delta(&self, _arc: u32) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        PhraseAutomaton::word(self, state, word)
    }

    #[inline(always)]
    fn min_delta(&self) -> f32 {
        -0.0
    }

    #[inline(always)]
    fn min_word(&self) -> f32 {
        self.min_cost()
    }
}

impl ArcDelta for Booster {
    const STATEFUL: bool = true;

    #[inline]
    fn touches(&self, s: u32) -> bool {
        Booster::touches(self, s)
    }

    #[inline]
    fn delta(&self, arc: u32) -> f32 {
        Booster::delta(self, arc)
    }

    #[inline]
    fn word(&self, state: u32, word: u32) -> (u32, f32) {
        Booster::word(self, state, word)
    }

    #[inline]
    fn min_delta(&self) -> f32 {
        Booster::min_delta(self)
    }

    #[inline]
    fn min_word(&self) -> f32 {
        match self.automaton() {
            Some(Booster::Phrases(p)) => p.min_cost(),
            Some(_) => f32::NEG_INFINITY,
            None => -0.0,
        }
    }

    fn splits(&self) -> bool {
        self.has_automaton()
    }
}

/// A stream's booster.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Booster {
    /// No change to the graph's costs.
    #[default]
    None,
    /// Arc-index set + discount.
    ArcSet(ArcSetBooster),
    /// A word automaton composed on the fly: an LM difference (G_boosted − G).
    Lm(LmDelta),
    /// A word automaton composed on the fly: phrase prefixes (G-boosting's cost change).
    Phrases(PhraseAutomaton),
    /// Word boosting: a cost per output word (001's B, applied on the fly).
    Words(WordBooster),
    /// Several boosters whose deltas add up (at most one of them a word automaton; no word
    /// booster, whose delta needs the graph's output labels).
    Stack(Vec<Booster>),
}

impl Booster {
    /// One stream's boosters as one, the single rule every caller stacks by: none given →
    /// [`Booster::None`], one → itself, several → a [`Booster::Stack`] in the given order
    /// (deltas add up).
    ///
    /// ```
    /// use wfst_search::Booster;
    /// assert!(matches!(Booster::stack([None, None]), Booster::None));
    /// let one = Booster::stack([None, Some(Booster::Stack(Vec::new()))]);
    /// assert!(matches!(one, Booster::Stack(ref v) if v.is_empty()));
    /// let two = Booster::stack([Some(Booster::None), None, Some(Booster::None)]);
    /// assert!(matches!(two, Booster::Stack(ref v) if v.len() == 2));
    /// ```
    pub fn stack(parts: impl IntoIterator<Item = Option<Booster>>) -> Booster {
        let mut v: Vec<Booster> = parts.into_iter().flatten().collect();
        match v.len() {
            0 => Booster::None,
            1 => v.pop().expect("one booster"),
            _ => Booster::Stack(v),
        }
    }

    /// The cost delta of arc `arc` (0 for unboosted arcs).
    #[inline]
    pub fn delta(&self, arc: u32) -> f32 {
        match self {
            Booster::None => 0.0,
            Booster::ArcSet(b) => b.delta(arc),
            Booster::Lm(_) | Booster::Phrases(_) | Booster::Words(_) => 0.0,
            Booster::Stack(v) => v.iter().map(|b| b.delta(arc)).sum(),
        }
    }

    /// A lower bound of every arc's delta ([`Booster::delta`]): the sum of the parts' (each
    /// at most 0).
    pub fn min_delta(&self) -> f32 {
        match self {
            Booster::None | Booster::Lm(_) | Booster::Phrases(_) => -0.0,
            Booster::ArcSet(b) => b.discount.min(-0.0),
            Booster::Words(b) => b.min_cost,
            Booster::Stack(v) => v.iter().map(Booster::min_delta).sum(),
        }
    }

    /// Whether an arc of state `s` may have a delta.
    #[inline]
    pub fn touches(&self, s: u32) -> bool {
        match self {
            Booster::None | Booster::Lm(_) | Booster::Phrases(_) => false,
            Booster::ArcSet(b) => b.touches(s),
            Booster::Words(b) => b.states.get(s as usize).is_some_and(|&m| m != 0),
            Booster::Stack(v) => v.iter().any(|b| b.touches(s)),
        }
    }

    /// The word automaton of the booster, if any (the first of a stack).
    fn automaton(&self) -> Option<&Booster> {
        match self {
            Booster::Lm(_) | Booster::Phrases(_) => Some(self),
            Booster::Stack(v) => v.iter().find_map(Booster::automaton),
            _ => None,
        }
    }

    /// Whether the booster carries a word automaton (tokens then have an automaton state).
    pub fn has_automaton(&self) -> bool {
        self.automaton().is_some()
    }

    /// The automaton state of a segment's start token (0 without an automaton).
    pub fn start(&self) -> u32 {
        match self.automaton() {
            Some(Booster::Lm(d)) => d.start(),
            _ => 0,
        }
    }

    /// The next automaton state and the added cost after output word `word`.
    #[inline]
    pub fn word(&self, state: u32, word: u32) -> (u32, f32) {
        match self {
            Booster::None | Booster::ArcSet(_) | Booster::Words(_) => (state, 0.0),
            Booster::Lm(d) => d.word(state, word),
            Booster::Phrases(p) => p.word(state, word),
            Booster::Stack(_) => match self.automaton() {
                Some(a) => a.word(state, word),
                None => (state, 0.0),
            },
        }
    }

    /// The cost added when a path ends with automaton state `state` (0 without an automaton).
    pub fn final_cost(&self, state: u32) -> f32 {
        match self.automaton() {
            Some(Booster::Lm(d)) => d.final_cost(state),
            _ => 0.0,
        }
    }

    /// Whether the booster changes nothing.
    pub fn is_none(&self) -> bool {
        match self {
            Booster::None => true,
            Booster::ArcSet(b) => b.arcs.is_empty() || b.discount == 0.0,
            Booster::Words(b) => b.bonus.iter().all(|&c| c == 0.0),
            Booster::Lm(_) | Booster::Phrases(_) => false,
            Booster::Stack(v) => v.iter().all(Booster::is_none),
        }
    }

    /// Checks an arc set was built for a graph of this size (every arc index below `num_arcs`,
    /// its state marks over `num_states`) and that a stack holds one automaton at most.
    pub fn validate(&self, num_arcs: usize, num_states: usize) -> Result<()> {
        match self {
            Booster::None | Booster::Lm(_) | Booster::Phrases(_) => Ok(()),
            Booster::Stack(v) if v.iter().filter(|b| b.automaton().is_some()).count() > 1 => Err(
                DecodeError::Booster("a booster stack holds more than one word automaton".into()),
            ),
            Booster::Stack(v) if v.iter().any(|b| matches!(b, Booster::Words(_))) => Err(
                DecodeError::Booster("a word booster cannot be stacked; use it alone".into()),
            ),
            Booster::Words(b) if b.num_states != num_states => Err(DecodeError::Booster(format!(
                "the word booster was built for a graph of {} states, not this one ({num_states})",
                b.num_states
            ))),
            Booster::Words(_) => Ok(()),
            Booster::ArcSet(b) => match b.arcs.last() {
                Some(&a) if a as usize >= num_arcs => Err(DecodeError::Booster(format!(
                    "arc index {a} is outside the graph ({num_arcs} arcs)"
                ))),
                _ if b.num_states != num_states => Err(DecodeError::Booster(format!(
                    "the arc set was built for a graph of {} states, not this one ({num_states})",
                    b.num_states
                ))),
                _ => Ok(()),
            },
            Booster::Stack(v) => v.iter().try_for_each(|b| b.validate(num_arcs, num_states)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `states` states with `per` emitting arcs each (state s owns arcs `per·s..per·(s+1)`) and
    /// one non-emitting arc each after them (state s owns arc `per·states + s`).
    fn graph(states: u32, per: u32) -> DecodingGraph {
        let e = states * per;
        DecodingGraph {
            start: 0,
            final_cost: vec![0.0; states as usize],
            e_offsets: (0..=states).map(|s| s * per).collect(),
            ne_offsets: (0..=states).map(|s| e + s).collect(),
            ilabel: (0..e).map(|_| 1).chain((0..states).map(|_| 0)).collect(),
            olabel: vec![0; (e + states) as usize],
            weight: vec![0.0; (e + states) as usize],
            next: (0..e + states).map(|a| a % states).collect(),
        }
    }

    /// A short list over a large vocabulary is looked up by binary search, a long one in a
    /// dense table by word id: both give every word its listed cost and others −0.0, and the
    /// least cost bounds them all.
    #[test]
    fn word_costs_by_search_and_by_table_agree() {
        let g = graph(10, 2);
        let index = WordArcIndex::new(&g);
        let sparse = WordBooster::with_index(&index, [(7000, -3.0), (20, 1.5)]).unwrap();
        assert!(sparse.dense.is_none());
        let many: Vec<(u32, f32)> = (1..=200).map(|w| (w * 7, -(w as f32) / 100.0)).collect();
        let dense = WordBooster::with_index(&index, many.clone()).unwrap();
        assert!(dense.dense.is_some());
        for w in 0..8000u32 {
            let want = match w {
                7000 => -3.0,
                20 => 1.5,
                _ => 0.0,
            };
            assert_eq!(sparse.cost_of(w), want, "word {w}");
            let want = many.iter().find(|x| x.0 == w).map_or(0.0, |x| x.1);
            assert_eq!(dense.cost_of(w), want, "word {w}");
        }
        assert_eq!(sparse.min_cost, -3.0);
        assert_eq!(dense.min_cost, -2.0);
        assert_eq!(Booster::Words(dense).min_delta(), -2.0);
        let positive = WordBooster::with_index(&index, [(5, 2.0)]).unwrap();
        assert_eq!(positive.min_cost, 0.0);
    }

    #[test]
    fn arc_set_sorts_dedups_and_finds() {
        let g = graph(1000, 6);
        let b = ArcSetBooster::new(&g, vec![9, 3, 7, 3, 12], -2.0).unwrap();
        assert_eq!(b.arcs(), &[3, 7, 9, 12]);
        let hits: Vec<u32> = (0..200).filter(|&a| b.delta(a) != 0.0).collect();
        assert_eq!(hits, vec![3, 7, 9, 12]);
        let sorted: Vec<u32> = (0..200).filter(|&a| b.contains_sorted(a)).collect();
        assert_eq!(sorted, hits);
        // Arcs 3 (state 0), 7 and 9 (state 1), 12 (state 2).
        let touched: Vec<u32> = (0..1000).filter(|&s| b.touches(s)).collect();
        assert_eq!(touched, vec![0, 1, 2]);
        let wide = ArcSetBooster::new(&g, vec![0, 63, 64, 127, 128, 5000, 6999], -1.0).unwrap();
        for a in 0..7000 {
            assert_eq!(wide.delta(a) != 0.0, wide.contains_sorted(a), "arc {a}");
        }
        // Emitting arcs 0, 63, 64, 127, 128, 5000 are states 0, 10, 10, 21, 21, 833; the
        // non-emitting arc 6999 is state 999's.
        let touched: Vec<u32> = (0..1000).filter(|&s| wide.touches(s)).collect();
        assert_eq!(touched, vec![0, 10, 21, 833, 999]);
        // A row's 64 bits from any arc on, straddling words or not, past the last set bit too.
        let view = wide.view();
        for a in 0..7100u32 {
            let bits = view.row_bits(a);
            for i in 0..64 {
                assert_eq!(
                    bits >> i & 1 == 1,
                    wide.delta(a + i) != 0.0,
                    "arc {a} + {i}"
                );
            }
        }
        // Bytes: 7 arcs, 110 bitmap words (arcs 0..=6999), a mark per state.
        assert_eq!(wide.heap_bytes(), 28 + 880 + 1000);
        assert_eq!(b.delta(7), -2.0);
        let s = Booster::Stack(vec![Booster::ArcSet(b.clone()), Booster::ArcSet(b.clone())]);
        assert_eq!(s.delta(9), -4.0);
        assert_eq!(s.delta(8), 0.0);
        assert!(s.touches(1) && !s.touches(3));
        assert!(ArcSetBooster::new(&g, vec![7000], -1.0).is_err());
        assert!(Booster::ArcSet(b.clone()).validate(7000, 1000).is_ok());
        assert!(Booster::ArcSet(b.clone()).validate(12, 1000).is_err());
        assert!(Booster::ArcSet(b).validate(7000, 999).is_err());
        assert!(ArcSetBooster::new(&g, vec![1], f32::NAN).is_err());
    }
}

//! Minimum-edit (Levenshtein) alignment of a hypothesis against a reference that may contain spans
//! with alternative verbalisations.
//!
//! The reference is a chain of blocks, each a set of alternative word sequences (a plain word is a
//! block with one alternative of one word). The dynamic programme runs block by block; every block
//! boundary is a cut of the reference graph, so only one row per boundary is needed. The work is
//! an Ukkonen band around the diagonal that doubles until the cost found is provably optimal, and
//! each row stores its band's cells only. The backtrace recomputes rows from checkpoints, in
//! levels that each keep at most 16 MB of cells: one level (√n checkpointing) for any alignment
//! with a band of up to a few thousand cells, a few for a hypothesis unrelated to its reference.
//!
//! Costs: substitution, deletion and insertion 1, match 0. Ties are broken deterministically:
//! among alternatives the earliest (the span as written) wins; along the backtrace a diagonal step
//! (match/substitution) is preferred to a deletion, and a deletion to an insertion.

pub use crate::metrics::reference::RefPos;
use crate::metrics::reference::{RefSegment, ScoringRef};
use std::collections::HashMap;

/// The kind of one alignment step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum EditOp {
    /// Reference and hypothesis words are equal.
    Match,
    /// A reference word was recognised as another word.
    Sub,
    /// A reference word is missing from the hypothesis.
    Del,
    /// A hypothesis word has no reference counterpart.
    Ins,
}

/// One step of an alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// What happened.
    pub op: EditOp,
    /// The reference word (none for an insertion).
    pub reference: Option<RefPos>,
    /// The hypothesis word index (none for a deletion).
    pub hyp: Option<usize>,
}

/// Aligns two plain word sequences; reference positions are word indices in `RefPos::segment`.
pub fn align_words<S: AsRef<str>, T: AsRef<str>>(reference: &[S], hyp: &[T]) -> Vec<Step> {
    align_reference(&ScoringRef::plain("", reference), hyp)
}

/// Aligns a hypothesis against a reference with alternatives, returning the steps in order.
pub fn align_reference<T: AsRef<str>>(reference: &ScoringRef, hyp: &[T]) -> Vec<Step> {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let blocks: Vec<Vec<Vec<u32>>> = reference
        .segments
        .iter()
        .map(|s| match s {
            RefSegment::Word(t) => vec![vec![intern(&mut ids, &t.word)]],
            RefSegment::Alternatives(a) => a
                .iter()
                .map(|alt| alt.iter().map(|t| intern(&mut ids, &t.word)).collect())
                .collect(),
        })
        .collect();
    let hyp_ids: Vec<u32> = hyp.iter().map(|w| intern(&mut ids, w.as_ref())).collect();
    align_blocks(&blocks, &hyp_ids)
}

/// Maps a word to a dense id so the DP compares integers.
fn intern<'a>(ids: &mut HashMap<&'a str, u32>, w: &'a str) -> u32 {
    let n = ids.len() as u32;
    *ids.entry(w).or_insert(n)
}

/// "Unreachable" cost for cells outside the band; far enough from `u32::MAX` that adding to it
/// cannot overflow.
const INF: u32 = u32::MAX / 4;

/// The band of hypothesis positions a row may use: `[lo, hi]` inclusive (`lo <= hi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Band {
    lo: usize,
    hi: usize,
}

impl Band {
    /// Number of cells a row over this band stores.
    fn width(self) -> usize {
        self.hi + 1 - self.lo
    }
}

/// One DP row as stored: the cells of its band only (cell `j` at `cells[j - band.lo]`); every
/// cell outside the band is [`INF`]. Storing bands, not full rows, makes an alignment's memory
/// grow with the band's width, not with the hypothesis length.
#[derive(Clone, Copy)]
struct RowRef<'a> {
    band: Band,
    cells: &'a [u32],
}

impl RowRef<'_> {
    /// The cost of cell `j` ([`INF`] outside the band).
    #[inline]
    fn get(self, j: usize) -> u32 {
        j.checked_sub(self.band.lo)
            .and_then(|i| self.cells.get(i))
            .copied()
            .unwrap_or(INF)
    }
}

/// Banded rows in one flat buffer, numbered in the order pushed.
#[derive(Default)]
struct Rows {
    cells: Vec<u32>,
    /// Per row: offset of its first cell and its band.
    rows: Vec<(usize, Band)>,
}

impl Rows {
    fn clear(&mut self) {
        self.cells.clear();
        self.rows.clear();
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn row(&self, r: usize) -> RowRef<'_> {
        let (off, band) = self.rows[r];
        RowRef {
            band,
            cells: &self.cells[off..off + band.width()],
        }
    }

    /// Appends a copy of `row`; returns its number.
    fn push_copy(&mut self, row: RowRef) -> usize {
        self.rows.push((self.cells.len(), row.band));
        self.cells.extend_from_slice(row.cells);
        self.rows.len() - 1
    }

    /// Appends the row over `band` that follows row `prev` by reference word `w`; returns its
    /// number.
    fn push_step(
        &mut self,
        prev: usize,
        w: u32,
        hyp: &[u32],
        band: Band,
        win: &mut Vec<u32>,
    ) -> usize {
        let off = self.cells.len();
        self.cells.resize(off + band.width(), INF);
        let (poff, pband) = self.rows[prev];
        let (head, tail) = self.cells.split_at_mut(off);
        let prev = RowRef {
            band: pband,
            cells: &head[poff..poff + pband.width()],
        };
        step_row(prev, w, hyp, band, tail, win);
        self.rows.push((off, band));
        self.rows.len() - 1
    }

    /// Appends the cell-wise minimum of rows `ends` over `band`, which holds each of their
    /// bands; returns its number.
    fn push_min(&mut self, ends: &[usize], band: Band) -> usize {
        let off = self.cells.len();
        self.cells.resize(off + band.width(), INF);
        let (head, tail) = self.cells.split_at_mut(off);
        for &e in ends {
            let (eoff, eband) = self.rows[e];
            let row = RowRef {
                band: eband,
                cells: &head[eoff..eoff + eband.width()],
            };
            min_into(tail, band, row);
        }
        self.rows.push((off, band));
        self.rows.len() - 1
    }
}

/// `out` (a row over `band`) becomes its cell-wise minimum with `row`, whose band `band` holds.
fn min_into(out: &mut [u32], band: Band, row: RowRef) {
    debug_assert!(band.lo <= row.band.lo && row.band.hi <= band.hi);
    let at = row.band.lo - band.lo;
    for (o, &v) in out[at..at + row.cells.len()].iter_mut().zip(row.cells) {
        *o = (*o).min(v);
    }
}

/// One DP row transition for reference word `w`: `next` (the cells of `band`) gets the cost of
/// aligning `hyp[..j]` to the reference up to and including `w`, for `j` in the band. `win` is
/// scratch: `prev`'s cells `band.lo - 1 ..= band.hi`, [`INF`] where `prev` has none.
#[inline]
fn step_row(prev: RowRef, w: u32, hyp: &[u32], band: Band, next: &mut [u32], win: &mut Vec<u32>) {
    let Band { lo, hi } = band;
    let n = band.width();
    debug_assert_eq!(next.len(), n);
    // win[i] = prev[lo - 1 + i], i in 0..=n: the diagonal source of cell lo + i is win[i], the
    // vertical one win[i + 1].
    win.clear();
    win.resize(n + 1, INF);
    let first = (lo as isize - 1).max(prev.band.lo as isize) as usize;
    let last = hi.min(prev.band.hi);
    if first <= last {
        let at = (first + 1) - lo;
        win[at..at + (last - first + 1)]
            .copy_from_slice(&prev.cells[first - prev.band.lo..=last - prev.band.lo]);
    }
    let mut i0 = 0;
    if lo == 0 {
        next[0] = (win[1] + 1).min(INF);
        i0 = 1;
    }
    if i0 < n {
        // Diagonal and vertical moves first: independent per cell, so this loop vectorises.
        let (d, u, h, out) = (
            &win[i0..n],
            &win[i0 + 1..=n],
            &hyp[lo + i0 - 1..hi],
            &mut next[i0..n],
        );
        for (((o, &d), &u), &x) in out.iter_mut().zip(d).zip(u).zip(h) {
            *o = (d + u32::from(x != w)).min(u + 1).min(INF);
        }
    }
    // Then horizontal moves (insertions), a running minimum along the row.
    let mut left = next[0];
    for o in &mut next[1..] {
        let v = (*o).min(left + 1);
        *o = v;
        left = v;
    }
}

/// The reference as blocks with the range of reference lengths before each block, which bounds
/// where in the hypothesis an alignment of cost at most `t` can be at each row.
struct Layout<'a> {
    blocks: &'a [Vec<Vec<u32>>],
    /// `pre[b]` = (shortest, longest) number of reference words before block `b`; `pre[nb]` is the
    /// whole reference.
    pre: Vec<(usize, usize)>,
    hyp_len: usize,
}

impl<'a> Layout<'a> {
    fn new(blocks: &'a [Vec<Vec<u32>>], hyp_len: usize) -> Self {
        let mut pre = Vec::with_capacity(blocks.len() + 1);
        let (mut lo, mut hi) = (0usize, 0usize);
        pre.push((0, 0));
        for b in blocks {
            lo += b.iter().map(Vec::len).min().unwrap_or(0);
            hi += b.iter().map(Vec::len).max().unwrap_or(0);
            pre.push((lo, hi));
        }
        Self {
            blocks,
            pre,
            hyp_len,
        }
    }

    /// Band of the row after `k` words of an alternative of block `b` (k = 0: the block's input),
    /// for alignments whose cost never exceeds `t`: reaching hypothesis position `j` after `i`
    /// reference words costs at least `|i − j|`. The band entering block `b + 1` holds the band
    /// of every alternative's last row of block `b`.
    fn band(&self, b: usize, k: usize, t: usize) -> Band {
        let (lo, hi) = self.pre[b];
        Band {
            lo: (lo + k).saturating_sub(t).min(self.hyp_len),
            hi: (hi + k + t).min(self.hyp_len),
        }
    }

    /// The widest band of any row up to block `end` (its rows included): the reference lengths'
    /// spread plus the band on either side, at most the whole hypothesis.
    fn max_width(&self, end: usize, t: usize) -> usize {
        let (lo, hi) = self.pre[end];
        (hi - lo + 2 * t + 1).min(self.hyp_len + 1)
    }

    /// A lower bound of the alignment cost from the lengths alone.
    fn length_bound(&self) -> usize {
        let (lo, hi) = self.pre[self.blocks.len()];
        self.hyp_len
            .saturating_sub(hi)
            .max(lo.saturating_sub(self.hyp_len))
    }
}

/// Where one block's rows sit in a leaf's buffer (row numbers).
struct BlockRows {
    /// Row entering the block.
    row_in: usize,
    /// Per alternative: its first row and number of words (row `first + k` follows word `k`).
    alts: Vec<(usize, usize)>,
    /// Row leaving the block (the minimum over the alternatives' last rows).
    row_out: usize,
}

/// Scratch of [`push_block`], reused from block to block.
#[derive(Default)]
struct Scratch {
    ends: Vec<usize>,
    win: Vec<u32>,
}

/// Appends to `rows` the rows of block `b` entered from row `row_in`: per alternative its
/// rows, then (several alternatives) their minimum. Returns the row leaving the block; `alts`
/// gets, per alternative, its first row and number of words (row `first + k` follows word `k`).
#[allow(clippy::too_many_arguments)]
fn push_block(
    rows: &mut Rows,
    lay: &Layout,
    b: usize,
    t: usize,
    row_in: usize,
    hyp: &[u32],
    s: &mut Scratch,
    alts: &mut Vec<(usize, usize)>,
) -> usize {
    alts.clear();
    s.ends.clear();
    for alt in &lay.blocks[b] {
        let first = rows.len();
        let mut prev = row_in;
        for (k, &w) in alt.iter().enumerate() {
            prev = rows.push_step(prev, w, hyp, lay.band(b, k + 1, t), &mut s.win);
        }
        alts.push((first, alt.len()));
        s.ends.push(prev);
    }
    if let [only] = s.ends.as_slice() {
        *only
    } else {
        rows.push_min(&s.ends, lay.band(b + 1, 0, t))
    }
}

/// The first row over its band: `j` insertions.
fn first_row(lay: &Layout, t: usize) -> Rows {
    let band = lay.band(0, 0, t);
    let cells: Vec<u32> = (band.lo..=band.hi).map(|j| j as u32).collect();
    let mut rows = Rows::default();
    rows.push_copy(RowRef {
        band,
        cells: &cells,
    });
    rows
}

/// Cells (4 bytes each) one level of the backtrace may keep: 16 MB.
const LEVEL_CELLS: usize = 1 << 22;
/// Fewest checkpoint rows a level keeps, however wide the band: with a full-width band (a
/// hypothesis unrelated to its reference) the recursion is then at most log₁₆ B deep.
const MIN_CHECKPOINTS: usize = 16;
/// Blocks a leaf may always hold, however wide the band.
const MIN_LEAF: usize = 64;

/// Runs the forward pass over blocks `start..end` entered by `row_in` with band half-width `t`;
/// returns the checkpoint rows (the row entering `start`, `start + k`, …) and the cost of the
/// whole hypothesis after block `end - 1`, which for `end` = B is exact whenever it is ≤ `t`.
fn forward(
    lay: &Layout,
    hyp: &[u32],
    t: usize,
    (start, end): (usize, usize),
    row_in: RowRef,
    k: usize,
) -> (Rows, u32) {
    // Reserved at once: growing by doubling would hold two copies at its peak.
    let n_ck = (end - start).div_ceil(k);
    let mut checkpoints = Rows::default();
    checkpoints
        .cells
        .reserve(n_ck.saturating_mul(lay.max_width(end, t)));
    checkpoints.rows.reserve(n_ck);
    let (mut s, mut alts) = (Scratch::default(), Vec::new());
    // `cur` holds one row, the one entering block b; the block's rows are appended after it and
    // the one leaving it becomes the next `cur`.
    let mut cur = Rows::default();
    cur.push_copy(row_in);
    let mut next = Rows::default();
    for b in start..end {
        if (b - start) % k == 0 {
            checkpoints.push_copy(cur.row(0));
        }
        let out = push_block(&mut cur, lay, b, t, 0, hyp, &mut s, &mut alts);
        next.clear();
        next.push_copy(cur.row(out));
        std::mem::swap(&mut cur, &mut next);
    }
    let cost = cur.row(0).get(lay.hyp_len);
    (checkpoints, cost)
}

/// The backtrace: from the end of the reference and hypothesis back to their start, one
/// segment of blocks at a time, recomputing each segment's rows from the row entering it.
///
/// A segment whose rows fit [`LEVEL_CELLS`] is a leaf: all its rows are computed and walked
/// back. A longer one is cut into pieces by a forward pass that keeps only the rows entering
/// them (as many as fit the same budget, at least [`MIN_CHECKPOINTS`]), and the pieces are
/// walked back last to first. Memory is a few budgets whatever the lengths (for a band of a few
/// hundred cells, two passes and one level, as √n checkpointing); the rows and the tie-breaking
/// are those of a full table, so the alignment is the same.
struct Backtrace<'a> {
    lay: &'a Layout<'a>,
    hyp: &'a [u32],
    /// Band half-width the forward pass proved sufficient.
    t: usize,
    /// Cells one level may keep ([`LEVEL_CELLS`]; smaller in tests, to exercise the levels).
    budget: usize,
    /// Hypothesis words not yet walked back.
    j: usize,
    /// Steps found, last first.
    steps: Vec<Step>,
    buf: Rows,
    s: Scratch,
}

impl Backtrace<'_> {
    /// How blocks `start..end` are walked: `None` as one leaf (its rows fit the budget, or it is
    /// short), `Some(k)` in pieces of `k`: about √n pieces (the pass that keeps their rows costs
    /// as much memory as a piece), at least [`MIN_CHECKPOINTS`], no more than fit the budget.
    fn plan(lay: &Layout, t: usize, budget: usize, (start, end): (usize, usize)) -> Option<usize> {
        let width = lay.max_width(end, t);
        let n = end - start;
        // A leaf holds about a row per block; a quarter of the budget keeps it beside the
        // checkpoints of the levels above it.
        if n <= MIN_LEAF || n.saturating_mul(width) <= budget / 4 {
            return None;
        }
        let pieces = ((n as f64).sqrt().ceil() as usize)
            .min(budget / width)
            .max(MIN_CHECKPOINTS);
        Some(n.div_ceil(pieces))
    }

    /// Walks blocks `start..end` back, entered by `row_in`.
    fn segment(&mut self, (start, end): (usize, usize), row_in: RowRef) {
        match Self::plan(self.lay, self.t, self.budget, (start, end)) {
            None => self.leaf((start, end), row_in),
            Some(k) => {
                let (ck, _) = forward(self.lay, self.hyp, self.t, (start, end), row_in, k);
                self.pieces(&ck, (start, end), k);
            }
        }
    }

    /// Walks back the pieces of `k` blocks of `start..end` entered by the rows of `ck`.
    fn pieces(&mut self, ck: &Rows, (start, end): (usize, usize), k: usize) {
        for c in (0..ck.len()).rev() {
            let s0 = start + c * k;
            self.segment((s0, (s0 + k).min(end)), ck.row(c));
        }
    }

    /// Computes every row of blocks `start..end` and walks them back.
    fn leaf(&mut self, (start, end): (usize, usize), row_in: RowRef) {
        let (lay, hyp, t) = (self.lay, self.hyp, self.t);
        let blocks = lay.blocks;
        let mut layout: Vec<BlockRows> = Vec::with_capacity(end - start);
        let buf = &mut self.buf;
        buf.clear();
        // Rows of the leaf times the widest band among them, reserved at once: growing the
        // buffer by doubling would hold two copies at its peak.
        let n_rows: usize = blocks[start..end]
            .iter()
            .map(|b| b.iter().map(Vec::len).sum::<usize>() + usize::from(b.len() > 1))
            .sum();
        buf.cells
            .reserve((n_rows + 1).saturating_mul(lay.max_width(end, t)));
        buf.rows.reserve(n_rows + 1);
        let mut r_in = buf.push_copy(row_in);
        for (b, block) in blocks.iter().enumerate().take(end).skip(start) {
            let mut alts = Vec::with_capacity(block.len());
            let r_out = push_block(buf, lay, b, t, r_in, hyp, &mut self.s, &mut alts);
            layout.push(BlockRows {
                row_in: r_in,
                alts,
                row_out: r_out,
            });
            r_in = r_out;
        }
        let row = |r: usize| buf.row(r);
        let (steps, j) = (&mut self.steps, &mut self.j);
        for b in (start..end).rev() {
            let BlockRows {
                row_in: r_in,
                alts,
                row_out: r_out,
            } = &layout[b - start];
            let target = row(*r_out).get(*j);
            let end_row = |&(first, len): &(usize, usize)| {
                if len == 0 {
                    *r_in
                } else {
                    first + len - 1
                }
            };
            let alt = alts
                .iter()
                .position(|a| row(end_row(a)).get(*j) == target)
                .expect("some alternative reaches the block's minimum");
            let (first, len) = alts[alt];
            let words = &blocks[b][alt];
            let mut kk = len;
            while kk > 0 {
                let cur_row = row(first + kk - 1);
                let prev_row = if kk == 1 {
                    row(*r_in)
                } else {
                    row(first + kk - 2)
                };
                let v = cur_row.get(*j);
                let w = words[kk - 1];
                let pos = Some(RefPos {
                    segment: b,
                    alt,
                    index: kk - 1,
                });
                if *j > 0 && prev_row.get(*j - 1) + u32::from(hyp[*j - 1] != w) == v {
                    let op = if hyp[*j - 1] == w {
                        EditOp::Match
                    } else {
                        EditOp::Sub
                    };
                    steps.push(Step {
                        op,
                        reference: pos,
                        hyp: Some(*j - 1),
                    });
                    *j -= 1;
                    kk -= 1;
                } else if prev_row.get(*j) + 1 == v {
                    steps.push(Step {
                        op: EditOp::Del,
                        reference: pos,
                        hyp: None,
                    });
                    kk -= 1;
                } else {
                    debug_assert!(*j > 0 && cur_row.get(*j - 1) + 1 == v);
                    steps.push(Step {
                        op: EditOp::Ins,
                        reference: None,
                        hyp: Some(*j - 1),
                    });
                    *j -= 1;
                }
            }
        }
    }
}

fn align_blocks(blocks: &[Vec<Vec<u32>>], hyp: &[u32]) -> Vec<Step> {
    align_blocks_within(blocks, hyp, LEVEL_CELLS)
}

/// [`align_blocks`] keeping at most `budget` cells per level of the backtrace.
fn align_blocks_within(blocks: &[Vec<Vec<u32>>], hyp: &[u32], budget: usize) -> Vec<Step> {
    let nb = blocks.len();
    let lay = Layout::new(blocks, hyp.len());

    // Banded forward passes (Ukkonen): a cell more than t positions off every reference length is
    // only reachable at a cost above t, so a cost ≤ t found inside the band is the true optimum.
    // The band doubles until that holds, or until it covers every cell. The pass keeps the rows
    // the backtrace's first level starts from.
    let full = lay.pre[nb].1 + hyp.len();
    let mut t = lay.length_bound() + 64;
    let (checkpoints, k) = loop {
        let t_eff = t.min(full);
        let k = Backtrace::plan(&lay, t_eff, budget, (0, nb)).unwrap_or(nb.max(1));
        let first = first_row(&lay, t_eff);
        let (ck, cost) = forward(&lay, hyp, t_eff, (0, nb), first.row(0), k);
        if cost as usize <= t_eff || t_eff == full {
            t = t_eff;
            break (ck, k);
        }
        t = (2 * t).max(cost as usize);
    };

    let mut bt = Backtrace {
        lay: &lay,
        hyp,
        t,
        budget,
        j: hyp.len(),
        steps: Vec::with_capacity(nb + hyp.len()),
        buf: Rows::default(),
        s: Scratch::default(),
    };
    bt.pieces(&checkpoints, (0, nb), k);
    let (mut steps, mut j) = (bt.steps, bt.j);
    while j > 0 {
        steps.push(Step {
            op: EditOp::Ins,
            reference: None,
            hyp: Some(j - 1),
        });
        j -= 1;
    }
    steps.reverse();
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::reference::RefToken;

    fn ops(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|s| match s.op {
                EditOp::Match => 'M',
                EditOp::Sub => 'S',
                EditOp::Del => 'D',
                EditOp::Ins => 'I',
            })
            .collect()
    }

    #[test]
    fn known_alignments() {
        let s = align_words(&["a", "b", "c", "d"], &["a", "x", "c", "d", "e"]);
        assert_eq!(ops(&s), "MSMMI");
        let s = align_words(&["a", "b", "c"], &["b", "c"]);
        assert_eq!(ops(&s), "DMM");
        let s = align_words::<&str, &str>(&[], &["a", "b"]);
        assert_eq!(ops(&s), "II");
        let s = align_words::<&str, &str>(&["a"], &[]);
        assert_eq!(ops(&s), "D");
        // The classic kitten/sitting distance, on letters as words: 3 edits.
        let r: Vec<String> = "kitten".chars().map(String::from).collect();
        let h: Vec<String> = "sitting".chars().map(String::from).collect();
        let s = align_words(&r, &h);
        assert_eq!(s.iter().filter(|s| s.op != EditOp::Match).count(), 3);
        assert_eq!(ops(&s), "SMMMSMI");
    }

    fn lev(a: &[u32], b: &[u32]) -> u32 {
        let mut prev: Vec<u32> = (0..=b.len() as u32).collect();
        for (i, &x) in a.iter().enumerate() {
            let mut cur = vec![i as u32 + 1; b.len() + 1];
            for j in 1..=b.len() {
                cur[j] = (prev[j - 1] + u32::from(x != b[j - 1]))
                    .min(prev[j] + 1)
                    .min(cur[j - 1] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    }

    /// Every expansion of the alternatives, for brute force.
    fn expansions(blocks: &[Vec<Vec<u32>>]) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new()];
        for b in blocks {
            let mut next = Vec::new();
            for prefix in &out {
                for alt in b {
                    let mut p = prefix.clone();
                    p.extend(alt);
                    next.push(p);
                }
            }
            out = next;
        }
        out
    }

    /// A seeded xorshift generator: `rnd(n)` is in `0..n`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    #[test]
    fn matches_brute_force_on_random_references_with_alternatives() {
        let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
        for case in 0..300 {
            let nb = rnd(9) as usize;
            let mut blocks: Vec<Vec<Vec<u32>>> = Vec::new();
            for _ in 0..nb {
                if rnd(4) == 0 {
                    let alts = 1 + rnd(3) as usize;
                    blocks.push(
                        (0..alts)
                            .map(|_| (0..rnd(4)).map(|_| rnd(5) as u32).collect())
                            .collect(),
                    );
                } else {
                    blocks.push(vec![vec![rnd(5) as u32]]);
                }
            }
            let hyp: Vec<u32> = (0..rnd(10)).map(|_| rnd(5) as u32).collect();
            let steps = align_blocks(&blocks, &hyp);
            let cost = steps.iter().filter(|s| s.op != EditOp::Match).count() as u32;
            let best = expansions(&blocks)
                .iter()
                .map(|e| lev(e, &hyp))
                .min()
                .unwrap();
            assert_eq!(cost, best, "case {case}: {blocks:?} vs {hyp:?}");
            // The steps spell the hypothesis in order and a valid reference path.
            let hyp_seen: Vec<usize> = steps.iter().filter_map(|s| s.hyp).collect();
            assert_eq!(hyp_seen, (0..hyp.len()).collect::<Vec<_>>());
            for s in &steps {
                if let (Some(r), Some(h)) = (s.reference, s.hyp) {
                    let w = blocks[r.segment][r.alt][r.index];
                    assert_eq!(s.op == EditOp::Match, w == hyp[h]);
                }
            }
            let mut by_block: Vec<Option<(usize, Vec<usize>)>> = vec![None; blocks.len()];
            for r in steps.iter().filter_map(|s| s.reference) {
                let e = by_block[r.segment].get_or_insert((r.alt, Vec::new()));
                assert_eq!(e.0, r.alt, "one alternative per block");
                e.1.push(r.index);
            }
            for (b, e) in by_block.iter().enumerate() {
                match e {
                    Some((a, idx)) => {
                        assert_eq!(*idx, (0..blocks[b][*a].len()).collect::<Vec<_>>())
                    }
                    None => assert!(blocks[b].iter().any(Vec::is_empty), "block {b} skipped"),
                }
            }
        }
    }

    #[test]
    fn alternatives_absorb_verbalisations() {
        let tok = |w: &str| RefToken {
            word: w.into(),
            entities: vec![],
        };
        let r = ScoringRef {
            id: "d".into(),
            segments: vec![
                RefSegment::Word(tok("fiscal")),
                RefSegment::Alternatives(vec![
                    vec![tok("2020")],
                    vec![tok("twenty"), tok("twenty")],
                    vec![tok("two"), tok("thousand"), tok("twenty")],
                ]),
                RefSegment::Word(tok("results")),
            ],
            entities: vec![],
        };
        let s = align_reference(&r, &["fiscal", "twenty", "twenty", "results"]);
        assert_eq!(ops(&s), "MMMM");
        assert_eq!(s[1].reference.unwrap().alt, 1);
        let s = align_reference(&r, &["fiscal", "2020", "results"]);
        assert_eq!(ops(&s), "MMM");
        assert_eq!(s[1].reference.unwrap().alt, 0);
        // A wrong year: as-written alternative wins the tie (one substitution).
        let s = align_reference(&r, &["fiscal", "2021", "results"]);
        assert_eq!(ops(&s), "MSM");
        assert_eq!(s[1].reference.unwrap().alt, 0);
    }

    #[test]
    fn band_widens_until_exact() {
        // A shift by 200 words costs 400 edits: far outside the first band of 64.
        let r: Vec<u32> = (0..1000).collect();
        let mut h: Vec<u32> = (2000..2200).collect();
        h.extend(0..800);
        let steps = align_blocks(
            &[r.iter().map(|&w| vec![vec![w]]).collect::<Vec<_>>()].concat(),
            &h,
        );
        let cost = steps.iter().filter(|s| s.op != EditOp::Match).count() as u32;
        assert_eq!(cost, lev(&r, &h));
        assert_eq!(cost, 400);
    }

    #[test]
    fn long_sequences_use_checkpoints_and_stay_exact() {
        // 2,000 words with every 10th substituted and every 15th deleted: exact counts expected.
        let r: Vec<String> = (0..2000).map(|i| format!("w{i}")).collect();
        let mut h = Vec::new();
        let (mut subs, mut dels) = (0, 0);
        for (i, w) in r.iter().enumerate() {
            if i % 15 == 7 {
                dels += 1;
            } else if i % 10 == 3 {
                subs += 1;
                h.push(format!("x{i}"));
            } else {
                h.push(w.clone());
            }
        }
        let s = align_words(&r, &h);
        let count = |op| s.iter().filter(|s| s.op == op).count();
        assert_eq!(
            (count(EditOp::Sub), count(EditOp::Del), count(EditOp::Ins)),
            (subs, dels, 0)
        );
    }

    /// FNV-1a over every step of many seeded alignments (alternatives, shifts, long lines): the
    /// storage of the DP rows may change, the alignments chosen (ties included) may not.
    #[test]
    fn alignments_are_unchanged() {
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut h = crate::hash::Fnv1a::new();
        let mut eat = |x: u64| h.write(&x.to_le_bytes());
        for case in 0..200 {
            let nb = if case % 10 == 0 {
                3000
            } else {
                rnd(300) as usize
            };
            let vocab = 2 + rnd(30);
            let mut blocks: Vec<Vec<Vec<u32>>> = Vec::new();
            for _ in 0..nb {
                if rnd(6) == 0 {
                    let alts = 1 + rnd(3) as usize;
                    blocks.push(
                        (0..alts)
                            .map(|_| (0..rnd(4)).map(|_| rnd(vocab) as u32).collect())
                            .collect(),
                    );
                } else {
                    blocks.push(vec![vec![rnd(vocab) as u32]]);
                }
            }
            // A hypothesis made from the reference by edits, sometimes a shifted or unrelated one.
            let mut hyp: Vec<u32> = Vec::new();
            let flat: Vec<u32> = blocks.iter().flat_map(|b| b[0].clone()).collect();
            match case % 4 {
                0 => hyp.extend((0..rnd(400)).map(|_| rnd(vocab) as u32)),
                1 => {
                    hyp.extend((0..rnd(150)).map(|_| rnd(vocab) as u32));
                    hyp.extend(&flat);
                }
                _ => {
                    for &w in &flat {
                        match rnd(10) {
                            0 => {}
                            1 => hyp.push(rnd(vocab) as u32),
                            2 => hyp.extend([w, rnd(vocab) as u32]),
                            _ => hyp.push(w),
                        }
                    }
                }
            }
            let steps = align_blocks(&blocks, &hyp);
            // A tiny budget walks the same rows back through several levels of pieces.
            assert_eq!(steps, align_blocks_within(&blocks, &hyp, 64), "case {case}");
            for s in steps {
                eat(s.op as u64);
                let r = s.reference.map_or(u64::MAX, |r| {
                    ((r.segment as u64) << 24) | ((r.alt as u64) << 16) | r.index as u64
                });
                eat(r);
                eat(s.hyp.map_or(u64::MAX, |x| x as u64));
            }
        }
        let h = h.finish();
        eprintln!("fingerprint {h:#x}");
        assert_eq!(h, 0xcbb4_e5db_61ef_096f);
    }
}

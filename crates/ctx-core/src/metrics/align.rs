//! Minimum-edit (Levenshtein) alignment of a hypothesis against a reference that may contain spans
//! with alternative verbalisations.
//!
//! The reference is a chain of blocks, each a set of alternative word sequences (a plain word is a
//! block with one alternative of one word). The dynamic programme runs block by block over rows of
//! `hyp.len() + 1` costs; every block boundary is a cut of the reference graph, so only one row per
//! boundary is needed. To align whole earnings calls (10k × 10k words) in little memory, the forward
//! pass keeps a checkpoint row every √B blocks and the backtrace recomputes one chunk at a time.
//! Rows are stored at full width (the band only limits the work): memory is ~8·n·√B bytes, 14 MB
//! for the longest Earnings-21 call, 372 MB for one 120k-word line (docs/guide.md).
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

/// The band of hypothesis positions a row may use: `[lo, hi]` inclusive.
#[derive(Clone, Copy)]
struct Band {
    lo: usize,
    hi: usize,
}

/// One DP row transition for reference word `w`: `next[j]` = cost of aligning `hyp[..j]` to the
/// reference up to and including `w`, for `j` in the band; cells outside it are set to [`INF`].
#[inline]
fn step_row(prev: &[u32], w: u32, hyp: &[u32], next: &mut [u32], band: Band) {
    let Band { lo, hi } = band;
    next[..lo].fill(INF);
    next[hi + 1..].fill(INF);
    let mut j = lo;
    if j == 0 {
        next[0] = prev[0] + 1;
        j = 1;
    }
    if j <= hi {
        // Diagonal and vertical moves first: independent per cell, so this loop vectorises.
        let (p0, p1, h, out) = (
            &prev[j - 1..hi],
            &prev[j..=hi],
            &hyp[j - 1..hi],
            &mut next[j..=hi],
        );
        for (((o, &d), &u), &x) in out.iter_mut().zip(p0).zip(p1).zip(h) {
            *o = (d + u32::from(x != w)).min(u + 1).min(INF);
        }
        // Then horizontal moves (insertions), a running minimum along the row.
        let mut left = next[j - 1];
        for o in &mut next[j..=hi] {
            let v = (*o).min(left + 1);
            *o = v;
            left = v;
        }
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
    /// reference words costs at least `|i − j|`.
    fn band(&self, b: usize, k: usize, t: usize) -> Band {
        let (lo, hi) = self.pre[b];
        Band {
            lo: (lo + k).saturating_sub(t).min(self.hyp_len),
            hi: (hi + k + t).min(self.hyp_len),
        }
    }

    /// A lower bound of the alignment cost from the lengths alone.
    fn length_bound(&self) -> usize {
        let (lo, hi) = self.pre[self.blocks.len()];
        self.hyp_len
            .saturating_sub(hi)
            .max(lo.saturating_sub(self.hyp_len))
    }
}

/// Forward output row of block `b` (`out`), keeping no intermediate rows; `a`/`c` are scratch.
#[allow(clippy::too_many_arguments)]
fn advance(
    lay: &Layout,
    b: usize,
    t: usize,
    row_in: &[u32],
    hyp: &[u32],
    out: &mut [u32],
    a: &mut Vec<u32>,
    c: &mut Vec<u32>,
) {
    let block = &lay.blocks[b];
    if let [alt] = block.as_slice() {
        if let [w] = alt.as_slice() {
            step_row(row_in, *w, hyp, out, lay.band(b, 1, t));
            return;
        }
    }
    out.fill(INF);
    for alt in block {
        a.clear();
        a.extend_from_slice(row_in);
        for (k, &w) in alt.iter().enumerate() {
            c.resize(row_in.len(), 0);
            step_row(a, w, hyp, c, lay.band(b, k + 1, t));
            std::mem::swap(a, c);
        }
        for (o, &v) in out.iter_mut().zip(a.iter()) {
            *o = (*o).min(v);
        }
    }
}

/// Where one block's rows sit in the chunk buffer (row numbers, not offsets).
struct BlockRows {
    /// Row entering the block.
    row_in: usize,
    /// Per alternative: its first row and number of words (row `first + k` follows word `k`).
    alts: Vec<(usize, usize)>,
    /// Row leaving the block (the minimum over the alternatives' last rows).
    row_out: usize,
}

/// Appends a row computed from row `prev` of `buf` for word `w`; returns its row number.
fn push_step(
    buf: &mut Vec<u32>,
    width: usize,
    prev: usize,
    w: u32,
    hyp: &[u32],
    band: Band,
) -> usize {
    let next = buf.len() / width;
    buf.resize(buf.len() + width, 0);
    let (head, tail) = buf.split_at_mut(next * width);
    step_row(&head[prev * width..(prev + 1) * width], w, hyp, tail, band);
    next
}

/// The first row: `j` insertions, inside the band.
fn first_row(width: usize, t: usize) -> Vec<u32> {
    (0..width)
        .map(|j| if j <= t { j as u32 } else { INF })
        .collect()
}

/// Runs the forward pass with band half-width `t`; returns the checkpoint rows (every `k` blocks,
/// flattened) and the cost found, which is exact whenever it is at most `t`.
fn forward(lay: &Layout, hyp: &[u32], t: usize, k: usize) -> (Vec<u32>, u32) {
    let nb = lay.blocks.len();
    let width = hyp.len() + 1;
    let mut checkpoints: Vec<u32> = Vec::with_capacity(nb.div_ceil(k) * width);
    let mut cur = first_row(width, t);
    let mut next = vec![0u32; width];
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for b in 0..nb {
        if b % k == 0 {
            checkpoints.extend_from_slice(&cur);
        }
        advance(lay, b, t, &cur, hyp, &mut next, &mut sa, &mut sb);
        std::mem::swap(&mut cur, &mut next);
    }
    (checkpoints, cur[hyp.len()])
}

fn align_blocks(blocks: &[Vec<Vec<u32>>], hyp: &[u32]) -> Vec<Step> {
    let nb = blocks.len();
    let width = hyp.len() + 1;
    let k = ((nb as f64).sqrt().ceil() as usize).max(1);
    let lay = Layout::new(blocks, hyp.len());

    // Banded forward passes (Ukkonen): a cell more than t positions off every reference length is
    // only reachable at a cost above t, so a cost ≤ t found inside the band is the true optimum.
    // The band doubles until that holds, or until it covers every cell.
    let full = lay.pre[nb].1 + hyp.len();
    let mut t = lay.length_bound() + 64;
    let checkpoints = loop {
        let t_eff = t.min(full);
        let (ck, cost) = forward(&lay, hyp, t_eff, k);
        if cost as usize <= t_eff || t_eff == full {
            t = t_eff;
            break ck;
        }
        t = (2 * t).max(cost as usize);
    };

    // Backtrace chunk by chunk, recomputing each chunk's rows from its checkpoint.
    let mut steps: Vec<Step> = Vec::with_capacity(nb + hyp.len());
    let mut buf: Vec<u32> = Vec::new();
    let mut layout: Vec<BlockRows> = Vec::with_capacity(k);
    let mut j = hyp.len();
    let n_chunks = checkpoints.len() / width;
    for c in (0..n_chunks).rev() {
        let start = c * k;
        let end = (start + k).min(nb);
        buf.clear();
        layout.clear();
        buf.extend_from_slice(&checkpoints[c * width..(c + 1) * width]);
        let mut row_in = 0usize;
        for (b, block) in blocks.iter().enumerate().take(end).skip(start) {
            let mut alts = Vec::with_capacity(block.len());
            let mut ends = Vec::with_capacity(block.len());
            for alt in block {
                let first = buf.len() / width;
                let mut prev = row_in;
                for (kk, &w) in alt.iter().enumerate() {
                    prev = push_step(&mut buf, width, prev, w, hyp, lay.band(b, kk + 1, t));
                }
                alts.push((first, alt.len()));
                ends.push(prev);
            }
            let row_out = if let [only] = ends.as_slice() {
                *only
            } else {
                let out = buf.len() / width;
                buf.resize(buf.len() + width, INF);
                for &e in &ends {
                    for x in 0..width {
                        let v = buf[e * width + x];
                        let o = &mut buf[out * width + x];
                        *o = (*o).min(v);
                    }
                }
                out
            };
            layout.push(BlockRows {
                row_in,
                alts,
                row_out,
            });
            row_in = row_out;
        }
        let row = |r: usize| &buf[r * width..(r + 1) * width];
        for b in (start..end).rev() {
            let lay = &layout[b - start];
            let target = row(lay.row_out)[j];
            let end_row = |&(first, len): &(usize, usize)| {
                if len == 0 {
                    lay.row_in
                } else {
                    first + len - 1
                }
            };
            let alt = lay
                .alts
                .iter()
                .position(|a| row(end_row(a))[j] == target)
                .expect("some alternative reaches the block's minimum");
            let (first, len) = lay.alts[alt];
            let words = &blocks[b][alt];
            let mut kk = len;
            while kk > 0 {
                let cur_row = row(first + kk - 1);
                let prev_row = if kk == 1 {
                    row(lay.row_in)
                } else {
                    row(first + kk - 2)
                };
                let v = cur_row[j];
                let w = words[kk - 1];
                let pos = Some(RefPos {
                    segment: b,
                    alt,
                    index: kk - 1,
                });
                if j > 0 && prev_row[j - 1] + u32::from(hyp[j - 1] != w) == v {
                    let op = if hyp[j - 1] == w {
                        EditOp::Match
                    } else {
                        EditOp::Sub
                    };
                    steps.push(Step {
                        op,
                        reference: pos,
                        hyp: Some(j - 1),
                    });
                    j -= 1;
                    kk -= 1;
                } else if prev_row[j] + 1 == v {
                    steps.push(Step {
                        op: EditOp::Del,
                        reference: pos,
                        hyp: None,
                    });
                    kk -= 1;
                } else {
                    debug_assert!(j > 0 && cur_row[j - 1] + 1 == v);
                    steps.push(Step {
                        op: EditOp::Ins,
                        reference: None,
                        hyp: Some(j - 1),
                    });
                    j -= 1;
                }
            }
        }
    }
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

    #[test]
    fn matches_brute_force_on_random_references_with_alternatives() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
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
}

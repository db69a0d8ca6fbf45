//! Minimum-edit (Levenshtein) alignment of a hypothesis against a reference that may contain spans
//! with alternative verbalisations.
//!
//! The reference is a chain of blocks, each a set of alternative word sequences (a plain word is a
//! block with one alternative of one word). The dynamic programme runs block by block over rows of
//! `hyp.len() + 1` costs; every block boundary is a cut of the reference graph, so only one row per
//! boundary is needed. To align whole earnings calls (10k × 10k words) in a few MB, the forward pass
//! keeps a checkpoint row every √B blocks and the backtrace recomputes one chunk at a time.
//!
//! Costs: substitution, deletion and insertion 1, match 0. Ties are broken deterministically:
//! among alternatives the earliest (the span as written) wins; along the backtrace a diagonal step
//! (match/substitution) is preferred to a deletion, and a deletion to an insertion.

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

/// Where a reference word of the chosen path sits in a [`ScoringRef`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefPos {
    /// Segment index.
    pub segment: usize,
    /// Alternative index within the segment (0 for a plain word).
    pub alt: usize,
    /// Word index within the alternative (0 for a plain word).
    pub index: usize,
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

/// One DP row transition for reference word `w`: `next[j]` = cost of aligning `hyp[..j]` to the
/// reference up to and including `w`.
#[inline]
fn step_row(prev: &[u32], w: u32, hyp: &[u32], next: &mut [u32]) {
    let mut left = prev[0] + 1;
    next[0] = left;
    for j in 1..prev.len() {
        let sub = prev[j - 1] + u32::from(hyp[j - 1] != w);
        let del = prev[j] + 1;
        let v = sub.min(del).min(left + 1);
        next[j] = v;
        left = v;
    }
}

/// All rows of one block: `rows[a][k]` after `k + 1` words of alternative `a`.
fn block_rows(block: &[Vec<u32>], row_in: &[u32], hyp: &[u32]) -> Vec<Vec<Vec<u32>>> {
    block
        .iter()
        .map(|alt| {
            let mut rows: Vec<Vec<u32>> = Vec::with_capacity(alt.len());
            for &w in alt {
                let mut next = vec![0u32; row_in.len()];
                step_row(rows.last().map_or(row_in, |r| r.as_slice()), w, hyp, &mut next);
                rows.push(next);
            }
            rows
        })
        .collect()
}

fn block_out(rows: &[Vec<Vec<u32>>], row_in: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = vec![u32::MAX; row_in.len()];
    for alt_rows in rows {
        let end = alt_rows.last().map_or(row_in, |r| r.as_slice());
        for (o, &v) in out.iter_mut().zip(end) {
            *o = (*o).min(v);
        }
    }
    out
}

/// Forward output row of a block without keeping intermediate rows (two scratch rows only).
fn advance(block: &[Vec<u32>], row_in: &[u32], hyp: &[u32], a: &mut Vec<u32>, b: &mut Vec<u32>) -> Vec<u32> {
    if block.len() == 1 && block[0].len() == 1 {
        let mut next = vec![0u32; row_in.len()];
        step_row(row_in, block[0][0], hyp, &mut next);
        return next;
    }
    let mut out: Vec<u32> = vec![u32::MAX; row_in.len()];
    for alt in block {
        a.clear();
        a.extend_from_slice(row_in);
        for &w in alt {
            b.resize(row_in.len(), 0);
            step_row(a, w, hyp, b);
            std::mem::swap(a, b);
        }
        for (o, &v) in out.iter_mut().zip(a.iter()) {
            *o = (*o).min(v);
        }
    }
    out
}

fn align_blocks(blocks: &[Vec<Vec<u32>>], hyp: &[u32]) -> Vec<Step> {
    let nb = blocks.len();
    let k = ((nb as f64).sqrt().ceil() as usize).max(1);
    let mut checkpoints: Vec<Vec<u32>> = Vec::with_capacity(nb / k + 1);
    let mut cur: Vec<u32> = (0..=hyp.len() as u32).collect();
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for (b, block) in blocks.iter().enumerate() {
        if b % k == 0 {
            checkpoints.push(cur.clone());
        }
        cur = advance(block, &cur, hyp, &mut sa, &mut sb);
    }
    drop(cur);

    let mut steps: Vec<Step> = Vec::with_capacity(nb + hyp.len());
    let mut j = hyp.len();
    for c in (0..checkpoints.len()).rev() {
        let start = c * k;
        let end = (start + k).min(nb);
        let mut ins: Vec<Vec<u32>> = vec![checkpoints[c].clone()];
        let mut all_rows: Vec<Vec<Vec<Vec<u32>>>> = Vec::with_capacity(end - start);
        for block in &blocks[start..end] {
            let rows = block_rows(block, ins.last().expect("non-empty"), hyp);
            let out = block_out(&rows, ins.last().expect("non-empty"));
            all_rows.push(rows);
            ins.push(out);
        }
        for b in (start..end).rev() {
            let row_in = &ins[b - start];
            let target = ins[b - start + 1][j];
            let rows = &all_rows[b - start];
            let alt = (0..rows.len())
                .find(|&a| rows[a].last().map_or(row_in[j], |r| r[j]) == target)
                .expect("some alternative reaches the block's minimum");
            let words = &blocks[b][alt];
            let mut kk = words.len();
            while kk > 0 {
                let cur_row = &rows[alt][kk - 1];
                let prev_row = if kk == 1 { row_in } else { &rows[alt][kk - 2] };
                let v = cur_row[j];
                let w = words[kk - 1];
                let pos = Some(RefPos { segment: b, alt, index: kk - 1 });
                if j > 0 && prev_row[j - 1] + u32::from(hyp[j - 1] != w) == v {
                    let op = if hyp[j - 1] == w { EditOp::Match } else { EditOp::Sub };
                    steps.push(Step { op, reference: pos, hyp: Some(j - 1) });
                    j -= 1;
                    kk -= 1;
                } else if prev_row[j] + 1 == v {
                    steps.push(Step { op: EditOp::Del, reference: pos, hyp: None });
                    kk -= 1;
                } else {
                    debug_assert!(j > 0 && cur_row[j - 1] + 1 == v);
                    steps.push(Step { op: EditOp::Ins, reference: None, hyp: Some(j - 1) });
                    j -= 1;
                }
            }
        }
    }
    while j > 0 {
        steps.push(Step { op: EditOp::Ins, reference: None, hyp: Some(j - 1) });
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
                cur[j] = (prev[j - 1] + u32::from(x != b[j - 1])).min(prev[j] + 1).min(cur[j - 1] + 1);
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
                    blocks.push((0..alts).map(|_| (0..rnd(4)).map(|_| rnd(5) as u32).collect()).collect());
                } else {
                    blocks.push(vec![vec![rnd(5) as u32]]);
                }
            }
            let hyp: Vec<u32> = (0..rnd(10)).map(|_| rnd(5) as u32).collect();
            let steps = align_blocks(&blocks, &hyp);
            let cost = steps.iter().filter(|s| s.op != EditOp::Match).count() as u32;
            let best = expansions(&blocks).iter().map(|e| lev(e, &hyp)).min().unwrap();
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
                    Some((a, idx)) => assert_eq!(*idx, (0..blocks[b][*a].len()).collect::<Vec<_>>()),
                    None => assert!(blocks[b].iter().any(Vec::is_empty), "block {b} skipped"),
                }
            }
        }
    }

    #[test]
    fn alternatives_absorb_verbalisations() {
        let tok = |w: &str| RefToken { word: w.into(), entities: vec![] };
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
        assert_eq!((count(EditOp::Sub), count(EditOp::Del), count(EditOp::Ins)), (subs, dels, 0));
    }
}

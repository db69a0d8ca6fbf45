//! The greedy hypothesis as words with frames, and the spots merged into it (NeMo's
//! `merge_alignment_with_ws_hyps`).

use crate::graph::ContextGraph;
use crate::greedy::aligned_tokens;
use crate::spot::{overlap_pct, Spot};
use crate::{Labels, WORD_START};
use ctx_core::scores::ScoreMatrix;

/// A word of the greedy hypothesis: its text and frames (its first label's last frame to its
/// last label's last frame, as NeMo's alignment has them).
#[derive(Debug, Clone, PartialEq)]
pub struct AlignedWord {
    /// The word (several for a merged phrase).
    pub text: String,
    /// First frame.
    pub start: usize,
    /// Last frame.
    pub end: usize,
}

/// The greedy hypothesis of `lp` as words with frames.
///
/// ```
/// use ctc_ws::{greedy_words, Labels};
/// use ctx_core::scores::ScoreMatrix;
/// // Columns: blank, ▁a, b; frames read a, a, b, blank.
/// let lp = ScoreMatrix::new(4, 3, vec![-3.0, -0.1, -3.0, -3.0, -0.1, -3.0, -3.0, -3.0, -0.1, -0.1, -3.0, -3.0]).unwrap();
/// let labels = Labels { pieces: vec!["<blk>".into(), "▁a".into(), "b".into()], blank: 0 };
/// let w = greedy_words(&lp, &labels);
/// assert_eq!((w[0].text.as_str(), w[0].start, w[0].end), ("ab", 1, 2));
/// ```
pub fn greedy_words(lp: &ScoreMatrix, labels: &Labels) -> Vec<AlignedWord> {
    let mut out: Vec<AlignedWord> = Vec::new();
    let mut cur: Option<AlignedWord> = None;
    for (label, frame, _) in aligned_tokens(lp, labels.blank) {
        let piece = &labels.pieces[label as usize];
        let rest: String = piece.chars().skip(1).collect();
        match &mut cur {
            Some(w) if !w.text.is_empty() => {
                if piece.starts_with(WORD_START) {
                    out.push(std::mem::replace(
                        w,
                        AlignedWord {
                            text: rest,
                            start: frame,
                            end: frame,
                        },
                    ));
                } else {
                    w.text.push_str(piece);
                    w.end = frame;
                }
            }
            _ => {
                cur = Some(AlignedWord {
                    text: rest,
                    start: frame,
                    end: frame,
                })
            }
        }
    }
    out.extend(cur);
    out
}

/// The words of the greedy hypothesis `words` with each spot merged in turn: a spot goes
/// before the first word it starts before, replaces the first word it overlaps by more than
/// `pct` percent of that word's frames, and drops the other words it overlaps that much; a
/// spot that reaches none of them goes last. Without greedy words, the spots alone.
pub fn merge(words: &[AlignedWord], spots: &[Spot], g: &ContextGraph, pct: f32) -> Vec<String> {
    let as_word = |s: &Spot| AlignedWord {
        text: g.phrase(s.phrase).to_string(),
        start: s.start,
        end: s.end,
    };
    if words.is_empty() {
        return spots
            .iter()
            .flat_map(|s| g.phrase(s.phrase).split_whitespace().map(String::from))
            .collect();
    }
    let mut cur: Vec<AlignedWord> = words.to_vec();
    for s in spots {
        let mut next = Vec::with_capacity(cur.len() + 1);
        let mut inserted = false;
        for w in cur {
            if s.start < w.start && !inserted {
                next.push(as_word(s));
                inserted = true;
            }
            if overlap_pct((s.start, s.end), (w.start, w.end)) <= pct {
                next.push(w);
            } else if !inserted {
                next.push(as_word(s));
                inserted = true;
            }
        }
        if !inserted {
            next.push(as_word(s));
        }
        cur = next;
    }
    cur.iter()
        .flat_map(|w| w.text.split_whitespace().map(String::from))
        .collect()
}

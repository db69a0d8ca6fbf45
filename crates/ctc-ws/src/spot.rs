//! The word spotter: token passing over a CTC model's log-probabilities through the context
//! graph (NeMo's `run_word_spotter`), overlapping spots resolved (`find_best_hyps`) and spots
//! that do not beat the greedy words of their span dropped (`filter_wb_hyps`).

use crate::graph::ContextGraph;
use crate::greedy::aligned_tokens;
use crate::{Labels, Result, WsError, WORD_START};
use ctx_core::scores::ScoreMatrix;

/// The spotter's settings; the defaults are NeMo's script's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpotterConfig {
    /// Beam: tokens worse than the frame's best by more are dropped (NeMo 5.0).
    pub beam: f32,
    /// Context score earned by every non-blank frame of a spotted phrase (NeMo 3.0).
    pub context_score: f32,
    /// Weight each greedy label earns when a spot is compared with the greedy words of its
    /// span (NeMo's `ctc_ali_token_weight`, 0.6 in its script).
    pub ali_token_weight: f32,
    /// A spot's least score (NeMo −5.0).
    pub keyword_threshold: f32,
    /// No phrase starts on a frame whose blank probability is above this (NeMo 0.8).
    pub blank_threshold: f32,
    /// No phrase starts with a label of probability below this (NeMo 0.001).
    pub non_blank_threshold: f32,
    /// Two spots overlapping by at least this percent of the earlier one's frames keep the
    /// better (NeMo 10).
    pub spot_overlap: f32,
    /// A greedy word overlapped by a spot by more than this percent of its frames is replaced
    /// (NeMo 30).
    pub merge_overlap: f32,
}

impl Default for SpotterConfig {
    fn default() -> Self {
        Self {
            beam: 5.0,
            context_score: 3.0,
            ali_token_weight: 0.6,
            keyword_threshold: -5.0,
            blank_threshold: 0.8,
            non_blank_threshold: 0.001,
            spot_overlap: 10.0,
            merge_overlap: 30.0,
        }
    }
}

impl SpotterConfig {
    /// Refuses settings out of range, naming the setting.
    pub fn check(&self) -> Result<()> {
        let bad = |name: &str, v: f32| WsError::Config(format!("{name} {v} is out of range"));
        for (name, v) in [
            ("beam", self.beam),
            ("context_score", self.context_score),
            ("ali_token_weight", self.ali_token_weight),
            ("keyword_threshold", self.keyword_threshold),
        ] {
            if !v.is_finite() {
                return Err(bad(name, v));
            }
        }
        if self.beam < 0.0 {
            return Err(bad("beam", self.beam));
        }
        for (name, v) in [
            ("blank_threshold", self.blank_threshold),
            ("non_blank_threshold", self.non_blank_threshold),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(bad(name, v));
            }
        }
        for (name, v) in [
            ("spot_overlap", self.spot_overlap),
            ("merge_overlap", self.merge_overlap),
        ] {
            if !(0.0..=100.0).contains(&v) {
                return Err(bad(name, v));
            }
        }
        Ok(())
    }
}

/// A spotted phrase: its id in the graph, score (log-probabilities plus context scores) and
/// frames `[start, end]` (end: the frame its last label was first read).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spot {
    /// Phrase id ([`ContextGraph::phrase`]).
    pub phrase: u32,
    /// Score.
    pub score: f32,
    /// First frame.
    pub start: usize,
    /// Last frame.
    pub end: usize,
}

#[derive(Clone, Copy)]
struct Token {
    state: u32,
    score: f32,
    start: usize,
}

/// Percent of `b`'s frames (inclusive) that `a` covers.
pub(crate) fn overlap_pct(a: (usize, usize), b: (usize, usize)) -> f32 {
    let lo = a.0.max(b.0);
    let hi = a.1.min(b.1);
    let common = if hi >= lo { hi - lo + 1 } else { 0 };
    100.0 / (b.1 - b.0 + 1) as f32 * common as f32
}

/// The spots of `lp` (log-probabilities, one row per frame) that survive the overlap rule and
/// the comparison with the greedy words, in NeMo's order.
///
/// ```
/// use ctc_ws::{spot, ContextGraph, Labels, SpotterConfig};
/// use ctx_core::scores::ScoreMatrix;
/// // Columns: blank, ▁a, b. Greedy reads "a" (blank wins frame 2); "ab" is spotted.
/// let probs = [0.1, 0.85, 0.05, 0.6, 1e-6, 0.4, 0.9, 0.05, 0.05];
/// let lp = ScoreMatrix::new(3, 3, probs.iter().map(|p: &f32| p.ln()).collect()).unwrap();
/// let labels = Labels { pieces: vec!["<blk>".into(), "▁a".into(), "b".into()], blank: 0 };
/// let g = ContextGraph::new(&[("ab".into(), vec![vec![1, 2]])], 0, 3).unwrap();
/// let s = spot(&lp, &g, &labels, &SpotterConfig::default()).unwrap();
/// assert_eq!((s.len(), s[0].start, s[0].end), (1, 0, 1));
/// ```
pub fn spot(
    lp: &ScoreMatrix,
    g: &ContextGraph,
    labels: &Labels,
    cfg: &SpotterConfig,
) -> Result<Vec<Spot>> {
    cfg.check()?;
    if lp.cols() != g.width || labels.pieces.len() != g.width {
        return Err(WsError::Width {
            got: lp.cols(),
            want: g.width,
        });
    }
    let spots = resolve_overlaps(&search(lp, g, cfg), cfg.spot_overlap);
    let words = scored_words(lp, labels, cfg.ali_token_weight);
    Ok(filter(&spots, &words))
}

/// Token passing (NeMo's `run_word_spotter` loop): every spot in the order found.
fn search(lp: &ScoreMatrix, g: &ContextGraph, cfg: &SpotterConfig) -> Vec<Spot> {
    let blank = g.blank as usize;
    let (blank_min, label_min) = (cfg.blank_threshold.ln(), cfg.non_blank_threshold.ln());
    let mut active: Vec<Token> = Vec::new();
    let mut next: Vec<Token> = Vec::new();
    let mut best_of_state: Vec<Option<usize>> = vec![None; g.states.len()];
    let mut spots = Vec::new();
    for t in 0..lp.rows() {
        let row = lp.row(t);
        active.push(Token {
            state: 0,
            score: 0.0,
            start: t,
        });
        let mut best: Option<f32> = None;
        for tok in &active {
            let root = tok.state == 0;
            if root && row[blank] > blank_min {
                continue;
            }
            for &(label, to) in &g.states[tok.state as usize].next {
                if root && row[label as usize] < label_min {
                    continue;
                }
                let mut score = tok.score + row[label as usize];
                if label != g.blank {
                    score += cfg.context_score;
                }
                // The running beam: against the best score of the frame so far.
                let mut set_best = false;
                match best {
                    None => {
                        best = Some(score);
                        set_best = true;
                    }
                    Some(b) if score < b - cfg.beam => continue,
                    Some(b) if score > b => {
                        best = Some(score);
                        set_best = true;
                    }
                    Some(_) => {}
                }
                let st = &g.states[to as usize];
                if let Some(phrase) = st.end {
                    if score > cfg.keyword_threshold {
                        spots.push(Spot {
                            phrase,
                            score,
                            start: tok.start,
                            end: t,
                        });
                        // A phrase's last state with nothing after it (only its loop): the
                        // token ends here, and a best it set no longer counts.
                        if st.next.len() == 1 {
                            if set_best {
                                best = None;
                            }
                            continue;
                        }
                    }
                }
                next.push(Token {
                    state: to,
                    score,
                    start: tok.start,
                });
            }
        }
        // Beam pruning, then the best token per state (ties: the first).
        if let Some(top) = next.iter().map(|k| k.score).reduce(f32::max) {
            next.retain(|k| k.score > top - cfg.beam);
        }
        let mut alive = vec![true; next.len()];
        for (i, k) in next.iter().enumerate() {
            let slot = &mut best_of_state[k.state as usize];
            match *slot {
                None => *slot = Some(i),
                Some(j) if k.score <= next[j].score => alive[i] = false,
                Some(j) => {
                    alive[j] = false;
                    *slot = Some(i);
                }
            }
        }
        for k in &next {
            best_of_state[k.state as usize] = None;
        }
        let mut keep = alive.iter();
        next.retain(|_| *keep.next().expect("one flag per token"));
        std::mem::swap(&mut active, &mut next);
        next.clear();
    }
    spots
}

/// NeMo's `find_best_hyps`: each spot in turn against the kept ones; overlapping one by at
/// least `pct` percent of the kept one's frames, the better stays (the order of NeMo's dict:
/// a kept spot replaced by one of the same frames keeps its place).
fn resolve_overlaps(spots: &[Spot], pct: f32) -> Vec<Spot> {
    let mut kept: Vec<Spot> = Vec::new();
    for s in spots {
        let mut insert = true;
        for k in 0..kept.len() {
            let o = kept[k];
            if overlap_pct((s.start, s.end), (o.start, o.end)) >= pct {
                if s.score > o.score {
                    kept.remove(k);
                    insert = true;
                    break;
                } else {
                    insert = false;
                }
            }
        }
        if insert {
            match kept
                .iter_mut()
                .find(|o| (o.start, o.end) == (s.start, s.end))
            {
                Some(o) => *o = *s,
                None => kept.push(*s),
            }
        }
    }
    kept
}

/// A greedy word with its frames and score (NeMo's `get_ctc_word_alignment`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct ScoredWord {
    start: usize,
    end: usize,
    score: f32,
}

/// The greedy words of `lp` with their scores: each label's log-probabilities summed over its
/// frames plus `weight`; a word's frames run from its first label's last frame to its last
/// label's last frame (as NeMo's alignment records them).
fn scored_words(lp: &ScoreMatrix, labels: &Labels, weight: f32) -> Vec<ScoredWord> {
    let mut out = Vec::new();
    let mut cur: Option<(String, ScoredWord)> = None;
    for (label, frame, score) in aligned_tokens(lp, labels.blank) {
        let piece = &labels.pieces[label as usize];
        let s = score + weight;
        match &mut cur {
            Some((w, sw)) if !w.is_empty() => {
                if piece.starts_with(WORD_START) {
                    out.push(*sw);
                    *w = piece.chars().skip(1).collect();
                    *sw = ScoredWord {
                        start: frame,
                        end: frame,
                        score: s,
                    };
                } else {
                    w.push_str(piece);
                    sw.end = frame;
                    sw.score += s;
                }
            }
            // No word yet (or an empty one): this label starts one, its text whole.
            _ => {
                cur = Some((
                    piece.clone(),
                    ScoredWord {
                        start: frame,
                        end: frame,
                        score: s,
                    },
                ))
            }
        }
    }
    if let Some((w, sw)) = cur {
        if !w.is_empty() {
            out.push(sw);
        }
    }
    out
}

/// NeMo's `filter_wb_hyps`: a spot stays if its score is at least that of the greedy words it
/// overlaps (the first one's whole, the others' in proportion to the overlap).
fn filter(spots: &[Spot], words: &[ScoredWord]) -> Vec<Spot> {
    if words.is_empty() {
        return spots.to_vec();
    }
    let mut out = Vec::new();
    let mut from = 0;
    for s in spots {
        let mut total = 0.0f32;
        let mut hit = false;
        let mut kept = false;
        for (i, w) in words.iter().enumerate().skip(from) {
            let pct = overlap_pct((s.start, s.end), (w.start, w.end));
            if pct > 0.0 {
                if hit {
                    total += pct / 100.0 * w.score;
                } else {
                    total = w.score;
                }
                hit = true;
            } else if hit && s.score >= total {
                out.push(*s);
                from = i;
                kept = true;
                break;
            }
        }
        if !kept && hit && s.score >= total {
            out.push(*s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_a_share_of_the_second_interval() {
        assert_eq!(overlap_pct((0, 9), (5, 14)), 50.0);
        assert_eq!(overlap_pct((0, 1), (5, 14)), 0.0);
        assert_eq!(overlap_pct((5, 5), (5, 5)), 100.0);
    }

    #[test]
    fn overlapping_spots_keep_the_better_in_nemo_order() {
        let s = |phrase, score, start, end| Spot {
            phrase,
            score,
            start,
            end,
        };
        // 1 overlaps 0 and beats it: 0 goes, 1 is appended; 2 is apart; 3 overlaps 1 and loses.
        let out = resolve_overlaps(
            &[
                s(0, 1.0, 0, 9),
                s(1, 2.0, 5, 12),
                s(2, 0.5, 30, 35),
                s(3, 1.5, 10, 14),
            ],
            10.0,
        );
        assert_eq!(out.iter().map(|x| x.phrase).collect::<Vec<_>>(), vec![1, 2]);
    }
}

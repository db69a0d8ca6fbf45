//! Endpoint detection by Kaldi's rules (`OnlineEndpointConfig`, rules 1–5): an utterance ends
//! when the best path has enough trailing silence (silence input labels, or CTC blank), given
//! how close it is to a final state and how long the utterance is.

use ctx_graph::csr::DecodingGraph;

/// One endpoint rule: it fires when every condition holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EndpointRule {
    /// The best path must contain a word.
    pub must_contain_nonsilence: bool,
    /// Trailing silence of the best path, seconds.
    pub min_trailing_silence: f32,
    /// Best final cost minus best cost at most this.
    pub max_relative_cost: f32,
    /// Segment length, seconds.
    pub min_utterance_length: f32,
}

/// The rules and the frame shift they are measured in.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    /// Seconds per score row.
    pub frame_s: f32,
    /// Rules; any one firing ends the segment.
    pub rules: Vec<EndpointRule>,
}

impl EndpointConfig {
    /// Kaldi's five default rules at frame shift `frame_s`.
    pub fn kaldi(frame_s: f32) -> Self {
        let r = |must, sil, rel, len| EndpointRule {
            must_contain_nonsilence: must,
            min_trailing_silence: sil,
            max_relative_cost: rel,
            min_utterance_length: len,
        };
        Self {
            frame_s,
            rules: vec![
                r(false, 5.0, f32::INFINITY, 0.0),
                r(true, 0.5, 2.0, 0.0),
                r(true, 1.0, 8.0, 0.0),
                r(true, 2.0, f32::INFINITY, 0.0),
                r(false, 0.0, f32::INFINITY, 20.0),
            ],
        }
    }

    /// Whether any rule fires for `rows` segment rows, `trailing_rows` of trailing silence,
    /// `has_words` and the relative final cost (computed only when a rule needs it).
    pub fn detected(
        &self,
        rows: u64,
        trailing_rows: u32,
        has_words: bool,
        relative_cost: impl FnOnce() -> f32,
    ) -> bool {
        // A small tolerance so that 10 rows of 0.03 s count as 0.3 s.
        let len = rows as f32 * self.frame_s + 1e-4;
        let sil = trailing_rows as f32 * self.frame_s + 1e-4;
        let mut rel: Option<f32> = None;
        let mut relative_cost = Some(relative_cost);
        for r in &self.rules {
            if (r.must_contain_nonsilence && !has_words)
                || sil < r.min_trailing_silence
                || len < r.min_utterance_length
            {
                continue;
            }
            if r.max_relative_cost.is_infinite() {
                return true;
            }
            let c = *rel.get_or_insert_with(|| (relative_cost.take().unwrap())());
            if c <= r.max_relative_cost {
                return true;
            }
        }
        false
    }
}

/// The states where a path may end a segment: final states and those that reach one by arcs
/// reading no frame. A CTC model's blank runs inside words as well as between them, so for CTC
/// an endpoint's trailing silence counts only while the best path is at such a state — never
/// inside a word, whose path could not end there (Kaldi's rules on CTC output would
/// cut a word in flight and the best final path would lack it).
///
/// ```
/// use ctx_graph::csr::DecodingGraph;
/// // 0 -a-> 1 -b-> 2 -ε-> 3 (final): 2 and 3 may end, 0 and 1 may not.
/// let g = DecodingGraph {
///     start: 0,
///     final_cost: vec![f32::INFINITY, f32::INFINITY, f32::INFINITY, 0.0],
///     e_offsets: vec![0, 1, 2, 2, 2],
///     ne_offsets: vec![2, 2, 2, 3, 3],
///     ilabel: vec![1, 2, 0],
///     olabel: vec![0, 5, 0],
///     weight: vec![0.0; 3],
///     next: vec![1, 2, 3],
/// };
/// assert_eq!(wfst_search::endpoint::may_end(&g), vec![false, false, true, true]);
/// ```
pub fn may_end(g: &DecodingGraph) -> Vec<bool> {
    let n = g.num_states();
    // The ε arcs reversed in CSR form (sources grouped by destination), then a search back
    // from every final state.
    let mut start = vec![0u32; n + 1];
    for s in 0..n as u32 {
        for a in g.non_emitting(s) {
            start[g.next[a] as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut from = vec![0u32; start[n] as usize];
    for s in 0..n as u32 {
        for a in g.non_emitting(s) {
            let d = g.next[a] as usize;
            from[fill[d] as usize] = s;
            fill[d] += 1;
        }
    }
    let mut ok: Vec<bool> = g.final_cost.iter().map(|c| c.is_finite()).collect();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&s| ok[s as usize]).collect();
    while let Some(s) = stack.pop() {
        let s = s as usize;
        for &p in &from[start[s] as usize..start[s + 1] as usize] {
            if !ok[p as usize] {
                ok[p as usize] = true;
                stack.push(p);
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kaldi_rules() {
        let e = EndpointConfig::kaldi(0.03);
        // 0.3 s silence after words: nothing.
        assert!(!e.detected(100, 10, true, || 0.0));
        // 0.6 s after words close to final: rule 2.
        assert!(e.detected(100, 20, true, || 1.0));
        // 0.6 s but far from final: needs 1.0 s (rule 3 up to 8) or 2.0 s (rule 4).
        assert!(!e.detected(100, 20, true, || 9.0));
        assert!(e.detected(100, 34, true, || 7.0));
        assert!(e.detected(100, 67, true, || 50.0));
        // No words: only 5 s of silence (rule 1) or 20 s of audio (rule 5).
        assert!(!e.detected(100, 100, false, || 0.0));
        assert!(e.detected(200, 167, false, || 0.0));
        assert!(e.detected(667, 0, false, || 0.0));
    }
}

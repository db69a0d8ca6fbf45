//! Word lattices as a Kaldi text archive of `CompactLattice`s (what `lattice-copy ark:- ark,t:-`
//! prints), so other tools can rescore, align or inspect what ctxbench decoded.
//!
//! One entry per utterance:
//!
//! ```text
//! utt-id
//! 0 1 27 10.5,230.1,
//! 1 2 4 2.25,80.75,
//! 2 0.5,3.2,
//!
//! ```
//!
//! Fields are separated by tabs. An arc line is `src dst word graph,acoustic,` and a final line `state graph,acoustic,`; the
//! third weight field (the transition-ids of the arc in Kaldi) is empty, because a word lattice
//! here keeps words and costs, not frame alignments (`lattice-best-path`, `lattice-scale`,
//! `lattice-lmrescore` and `lattice-to-nbest` work on it; `lattice-align-words` needs the
//! alignments and does not). Words are ids of the graph's `words.txt`. As in lattices written by
//! Kaldi's decoders, the acoustic cost is unscaled (−log-likelihood: the decoder's acoustic cost
//! divided by its acoustic scale); the graph cost includes any boost the decoder applied.
//!
//! An utterance decoded in several segments (endpointing) is one lattice: each segment's final
//! states continue, through an ε arc (word 0) carrying their final weight, into the next
//! segment's start state; only the last segment's final states are final.

use anyhow::{anyhow, bail, Context, Result};
use std::fmt::Write as _;
use std::path::Path;
use wfst_search::{UtteranceResult, WordLattice};

/// Appends the lattice of one decoded utterance to `out` (acoustic costs divided by
/// `acoustic_scale`). Fails when a segment has no lattice (lattices not recorded) or no final
/// state.
pub fn write_utterance(out: &mut String, r: &UtteranceResult, acoustic_scale: f32) -> Result<()> {
    if !(acoustic_scale > 0.0 && acoustic_scale.is_finite()) {
        bail!("lattice output needs a positive acoustic scale, got {acoustic_scale}");
    }
    let inv = 1.0 / acoustic_scale;
    let _ = writeln!(out, "{}", r.id);
    let mut offset = 0u32;
    let mut pending: Vec<(u32, f32, f32)> = Vec::new();
    for (k, seg) in r.segments.iter().enumerate() {
        let lat: &WordLattice = seg.lattice.as_ref().ok_or_else(|| {
            anyhow!(
                "{}: segment {} has no lattice (decoded with lattice = false; lattice output needs lattice = true)",
                r.id,
                k + 1
            )
        })?;
        // Glue the previous segment's finals to this start state.
        for (s, g, a) in pending.drain(..) {
            let _ = writeln!(out, "{s}\t{offset}\t0\t{},{},", g, a * inv);
        }
        for arc in &lat.arcs {
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{},{},",
                arc.from + offset,
                arc.to + offset,
                arc.word,
                arc.graph,
                arc.ac * inv
            );
        }
        pending = lat
            .finals
            .iter()
            .enumerate()
            .filter(|(_, f)| f.0.is_finite())
            .map(|(s, &(g, a))| (s as u32 + offset, g, a))
            .collect();
        if pending.is_empty() {
            bail!(
                "{}: the lattice of segment {} has no final state",
                r.id,
                k + 1
            );
        }
        offset += lat.num_states() as u32;
    }
    if r.segments.is_empty() {
        bail!("{}: no segments decoded", r.id);
    }
    for (s, g, a) in pending {
        let _ = writeln!(out, "{s}\t{},{},", g, a * inv);
    }
    out.push('\n');
    Ok(())
}

/// One lattice read back from a text archive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextLattice {
    /// The utterance id.
    pub key: String,
    /// Arcs `(src, dst, word, graph, acoustic)` in file order (word 0 = ε).
    pub arcs: Vec<(u32, u32, u32, f32, f32)>,
    /// Final states `(state, graph, acoustic)`.
    pub finals: Vec<(u32, f32, f32)>,
}

impl TextLattice {
    /// The cheapest path's words and total cost (graph + `acoustic_scale` × acoustic), for
    /// lattices whose arcs go from lower to higher states (as written here); ties keep the
    /// arc read first.
    pub fn best_path(&self, acoustic_scale: f32) -> Option<(Vec<u32>, f32)> {
        let n = self
            .arcs
            .iter()
            .map(|a| a.1.max(a.0))
            .chain(self.finals.iter().map(|f| f.0))
            .max()? as usize
            + 1;
        let mut best = vec![f32::INFINITY; n];
        let mut back: Vec<Option<usize>> = vec![None; n];
        best[0] = 0.0;
        let mut order: Vec<usize> = (0..self.arcs.len()).collect();
        order.sort_by_key(|&i| self.arcs[i].0);
        for i in order {
            let (s, d, _, g, a) = self.arcs[i];
            let c = best[s as usize] + g + acoustic_scale * a;
            if c < best[d as usize] {
                best[d as usize] = c;
                back[d as usize] = Some(i);
            }
        }
        let (end, cost) = self
            .finals
            .iter()
            .map(|&(s, g, a)| (s, best[s as usize] + g + acoustic_scale * a))
            .filter(|x| x.1.is_finite())
            .min_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)))?;
        let mut words = Vec::new();
        let mut s = end as usize;
        while let Some(i) = back[s] {
            let a = self.arcs[i];
            if a.2 != 0 {
                words.push(a.2);
            }
            s = a.0 as usize;
        }
        words.reverse();
        Some((words, cost))
    }
}

/// Reads a text archive of `CompactLattice`s (as [`write_utterance`] writes, or Kaldi's
/// `ark,t:` with empty or filled transition-id strings). Errors name the file and line.
pub fn read_text_archive(path: &Path) -> Result<Vec<TextLattice>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading lattices {}", path.display()))?;
    let mut out: Vec<TextLattice> = Vec::new();
    let mut cur: Option<TextLattice> = None;
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{}:{}", path.display(), i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            if let Some(l) = cur.take() {
                out.push(l);
            }
            continue;
        }
        let Some(lat) = cur.as_mut() else {
            if f.len() != 1 {
                bail!("{}: expected an utterance id, got '{line}'", at());
            }
            cur = Some(TextLattice {
                key: f[0].to_string(),
                ..Default::default()
            });
            continue;
        };
        let num = |s: &str| -> Result<u32> {
            s.parse()
                .map_err(|_| anyhow!("{}: '{s}' is not a state or word id", at()))
        };
        let weight = |s: &str| -> Result<(f32, f32)> {
            let mut p = s.split(',');
            let (g, a) = (p.next().unwrap_or(""), p.next().unwrap_or(""));
            match (g.parse(), a.parse()) {
                (Ok(g), Ok(a)) => Ok((g, a)),
                _ => bail!("{}: '{s}' is not a weight graph,acoustic,ids", at()),
            }
        };
        match f.len() {
            4 => {
                let (g, a) = weight(f[3])?;
                lat.arcs.push((num(f[0])?, num(f[1])?, num(f[2])?, g, a));
            }
            2 => {
                let (g, a) = weight(f[1])?;
                lat.finals.push((num(f[0])?, g, a));
            }
            _ => bail!(
                "{}: expected 'src dst word weight' or 'state weight', got '{line}'",
                at()
            ),
        }
    }
    if let Some(l) = cur {
        out.push(l);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wfst_search::{LatticePath, SegmentResult, WlArc};

    fn seg(lattice: Option<WordLattice>) -> SegmentResult {
        SegmentResult {
            start_row: 0,
            rows: 4,
            tokens: 0,
            best: LatticePath {
                words: vec![],
                start_rows: vec![],
                graph: 0.0,
                ac: 0.0,
            },
            reached_final: true,
            lattice,
            endpoint: false,
            context: None,
        }
    }

    fn arc(from: u32, to: u32, word: u32, graph: f32, ac: f32) -> WlArc {
        WlArc {
            from,
            to,
            word,
            graph,
            ac,
            row: 0,
        }
    }

    #[test]
    fn segments_chain_through_epsilon_arcs_with_unscaled_acoustics() {
        let inf = f32::INFINITY;
        // Segment 1: two competing words, both states final with different weights.
        let a = WordLattice::from_parts(
            4,
            vec![(inf, 0.0), (0.5, 0.25), (0.0, 0.0)],
            vec![arc(0, 1, 7, 1.0, 2.0), arc(0, 2, 8, 0.5, 2.5)],
        )
        .unwrap();
        // Segment 2: one word.
        let b = WordLattice::from_parts(
            4,
            vec![(inf, 0.0), (0.0, 0.5)],
            vec![arc(0, 1, 9, 0.5, 1.0)],
        )
        .unwrap();
        let r = UtteranceResult {
            id: "u1".into(),
            segments: vec![seg(Some(a)), seg(Some(b))],
            partials: vec![],
        };
        let mut text = String::new();
        write_utterance(&mut text, &r, 0.5).unwrap();
        assert_eq!(
            text,
            "u1\n0\t1\t7\t1,4,\n0\t2\t8\t0.5,5,\n1\t3\t0\t0.5,0.5,\n2\t3\t0\t0,0,\n3\t4\t9\t0.5,2,\n4\t0,1,\n\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lat.txt");
        std::fs::write(&p, &text).unwrap();
        let l = read_text_archive(&p).unwrap();
        assert_eq!(l.len(), 1);
        // Unscaled: via 7 costs 2 + 7.5 s at acoustic scale s, via 8 costs 1 + 8 s.
        let (w, c) = l[0].best_path(0.5).unwrap();
        assert_eq!(w, vec![8, 9]);
        assert!((c - 5.0).abs() < 1e-5, "{c}");
        assert_eq!(l[0].best_path(3.0).unwrap().0, vec![7, 9]);
    }

    #[test]
    fn missing_lattices_and_bad_lines_are_errors() {
        let r = UtteranceResult {
            id: "u2".into(),
            segments: vec![seg(None)],
            partials: vec![],
        };
        let e = write_utterance(&mut String::new(), &r, 1.0).unwrap_err();
        assert!(
            e.to_string().contains("u2: segment 1 has no lattice"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.txt");
        std::fs::write(&p, "u1\n0\t1\tx\t1,2,\n").unwrap();
        let e = read_text_archive(&p).unwrap_err().to_string();
        assert!(e.contains("bad.txt:2") && e.contains("'x'"), "{e}");
    }
}

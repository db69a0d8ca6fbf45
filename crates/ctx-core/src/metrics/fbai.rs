//! WER, U-WER and B-WER exactly as `score.py` of Le et al. 2021 (the LibriSpeech biasing
//! benchmark, facebookresearch/fbai-speech `is21_deep_bias/`) defines them, for its own files:
//! a reference TSV `utt<TAB>text<TAB>["rare", "words"]<TAB>[distractors]` and a hypothesis TSV
//! `utt<TAB>text`.
//!
//! Its definitions differ from [`crate::metrics::score`]'s: edit costs substitution 4, insertion
//! and deletion 3 (a substitution is preferred to an insertion plus a deletion); each utterance
//! has its own biased-word set, the reference's third column (the rare words it contains, not
//! the distractor list); a reference word counts toward B-WER when it is in that set, else U-WER;
//! an inserted word counts toward B-WER when it is in the utterance's set. Ties follow the script:
//! the diagonal step first, then an insertion if strictly cheaper, then a deletion if strictly
//! cheaper than that.
//!
//! ```
//! use ctx_core::metrics::fbai::{score_utterance, FbaiTotals};
//! use std::collections::HashSet;
//! let rare: HashSet<String> = ["mated".to_string()].into();
//! let mut t = FbaiTotals::default();
//! score_utterance(&["the", "earth", "mated"], &["the", "birth", "mated"], &rare, &mut t);
//! score_utterance(&["the", "earth"], &["the", "earth", "mated"], &rare, &mut t);
//! assert_eq!((t.wer.subs, t.wer.ins, t.wer.ref_words), (1, 1, 5));
//! // "mated" is in the first utterance's biased set: its word counts toward B-WER, and so
//! // does its insertion in the second (the set is per utterance; here both use `rare`).
//! assert_eq!((t.b_wer.ins, t.b_wer.ref_words, t.u_wer.subs), (1, 1, 1));
//! ```

use crate::error::{CoreError, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Error counts of one of the three measures, as `score.py`'s `WordError`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FbaiCounts {
    /// Reference words counted.
    pub ref_words: u64,
    /// Substitutions.
    pub subs: u64,
    /// Insertions.
    pub ins: u64,
    /// Deletions.
    pub dels: u64,
}

impl FbaiCounts {
    /// `100.0 * errors / ref_words` in the script's float operations (None without words,
    /// where the script stops on an assertion).
    pub fn error_rate(&self) -> Option<f64> {
        (self.ref_words > 0)
            .then(|| 100.0 * (self.subs + self.ins + self.dels) as f64 / self.ref_words as f64)
    }

    /// The script's result string: `error_rate=…, ref_words=…, subs=…, ins=…, dels=…`, the rate
    /// printed as Python prints a float (shortest round trip, `.0` on whole numbers).
    pub fn result_string(&self) -> String {
        let rate = match self.error_rate() {
            Some(r) if r.fract() == 0.0 && r.abs() < 1e16 => format!("{r:.1}"),
            Some(r) => format!("{r}"),
            None => "undefined (no reference words)".to_string(),
        };
        format!(
            "error_rate={rate}, ref_words={}, subs={}, ins={}, dels={}",
            self.ref_words, self.subs, self.ins, self.dels
        )
    }
}

/// WER, U-WER and B-WER of a set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FbaiTotals {
    /// Every word.
    pub wer: FbaiCounts,
    /// Words outside the utterance's biased-word set.
    pub u_wer: FbaiCounts,
    /// Words in the utterance's biased-word set.
    pub b_wer: FbaiCounts,
}

impl FbaiTotals {
    /// The three lines `score.py` prints.
    pub fn render(&self) -> String {
        format!(
            "WER: {}\nU-WER: {}\nB-WER: {}\n",
            self.wer.result_string(),
            self.u_wer.result_string(),
            self.b_wer.result_string()
        )
    }
}

/// One alignment step of the script's backtrace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    Match,
    Sub,
    Ins,
    Del,
}

const SUB: u32 = 4;
const INDEL: u32 = 3;

/// The script's alignment: (code, reference index, hypothesis index) from the first step.
fn align<S: AsRef<str>, T: AsRef<str>>(r: &[S], h: &[T]) -> Vec<(Code, usize, usize)> {
    let (n, m) = (r.len(), h.len());
    let w = m + 1;
    let mut score = vec![0u32; (n + 1) * w];
    // 0 diagonal, 1 insertion (left), 2 deletion (up).
    let mut back = vec![0u8; (n + 1) * w];
    for j in 1..=m {
        score[j] = score[j - 1] + INDEL;
        back[j] = 1;
    }
    for i in 1..=n {
        score[i * w] = score[(i - 1) * w] + INDEL;
        back[i * w] = 2;
        for j in 1..=m {
            let same = r[i - 1].as_ref() == h[j - 1].as_ref();
            let mut best = score[(i - 1) * w + j - 1] + if same { 0 } else { SUB };
            let mut b = 0u8;
            let ins = score[i * w + j - 1] + INDEL;
            if ins < best {
                best = ins;
                b = 1;
            }
            let del = score[(i - 1) * w + j] + INDEL;
            if del < best {
                best = del;
                b = 2;
            }
            score[i * w + j] = best;
            back[i * w + j] = b;
        }
    }
    let mut out = Vec::with_capacity(n.max(m));
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        match back[i * w + j] {
            2 => {
                out.push((Code::Del, i - 1, j.wrapping_sub(1)));
                i -= 1;
            }
            1 => {
                out.push((Code::Ins, i.wrapping_sub(1), j - 1));
                j -= 1;
            }
            _ => {
                let same = r[i - 1].as_ref() == h[j - 1].as_ref();
                out.push((if same { Code::Match } else { Code::Sub }, i - 1, j - 1));
                i -= 1;
                j -= 1;
            }
        }
    }
    out.reverse();
    out
}

/// Adds one utterance's counts: `reference` and `hyp` words, `rare` its biased-word set.
pub fn score_utterance<S: AsRef<str>, T: AsRef<str>>(
    reference: &[S],
    hyp: &[T],
    rare: &HashSet<String>,
    t: &mut FbaiTotals,
) {
    for (code, ri, hi) in align(reference, hyp) {
        let part = |w: &str| rare.contains(w);
        match code {
            Code::Ins => {
                t.wer.ins += 1;
                if part(hyp[hi].as_ref()) {
                    t.b_wer.ins += 1;
                } else {
                    t.u_wer.ins += 1;
                }
            }
            _ => {
                let biased = part(reference[ri].as_ref());
                for c in [&mut t.wer, if biased { &mut t.b_wer } else { &mut t.u_wer }] {
                    c.ref_words += 1;
                    match code {
                        Code::Sub => c.subs += 1,
                        Code::Del => c.dels += 1,
                        _ => {}
                    }
                }
            }
        }
    }
}

/// A reference utterance of the benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FbaiRef {
    /// Utterance id.
    pub id: String,
    /// Reference words.
    pub words: Vec<String>,
    /// The rare words of the reference (third column): the utterance's biased-word set.
    pub rare: HashSet<String>,
}

/// Reads a reference TSV (3 or 4 tab-separated columns; the fourth, the distractor list, is not
/// used for scoring). Errors name the line; a repeated id is an error (the script would keep
/// the last silently).
pub fn read_refs(path: &Path) -> Result<Vec<FbaiRef>> {
    let text = crate::io::read_text(path)?;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = crate::io::without_bom(i, line).trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 3 {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!(
                    "{} column(s): a reference line is utt<TAB>text<TAB>[rare words]<TAB>[biasing list]",
                    f.len()
                ),
            ));
        }
        let rare: Vec<String> = serde_json::from_str(f[2]).map_err(|e| {
            CoreError::parse(
                path,
                i + 1,
                format!("the rare-word column is not a JSON list of strings: {e}"),
            )
        })?;
        if !seen.insert(f[0].to_string()) {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("utterance {} appears twice", f[0]),
            ));
        }
        out.push(FbaiRef {
            id: f[0].to_string(),
            words: f[1].split_whitespace().map(str::to_string).collect(),
            rare: rare.into_iter().collect(),
        });
    }
    if out.is_empty() {
        return Err(CoreError::format(path, "no reference utterances"));
    }
    Ok(out)
}

/// Reads a hypothesis TSV: `utt<TAB>text`, or `utt` alone for an empty hypothesis. A repeated id
/// is an error naming the line.
pub fn read_hyps(path: &Path) -> Result<HashMap<String, Vec<String>>> {
    let text = crate::io::read_text(path)?;
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = crate::io::without_bom(i, line).trim();
        if line.is_empty() {
            continue;
        }
        let mut f = line.split('\t');
        let id = f.next().unwrap_or_default().to_string();
        let words = f
            .next()
            .map(|t| t.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        if out.insert(id.clone(), words).is_some() {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("utterance {id} appears twice"),
            ));
        }
    }
    Ok(out)
}

/// Scores `hyps` against `refs` as the script does. Every reference utterance needs a
/// hypothesis unless `lenient` (then those without are skipped, as with `--lenient`); the
/// missing ones are returned.
pub fn score_set(
    refs: &[FbaiRef],
    hyps: &HashMap<String, Vec<String>>,
    lenient: bool,
) -> Result<(FbaiTotals, Vec<String>)> {
    let missing: Vec<String> = refs
        .iter()
        .filter(|r| !hyps.contains_key(&r.id))
        .map(|r| r.id.clone())
        .collect();
    if !lenient {
        if let Some(m) = missing.first() {
            return Err(CoreError::Invalid(format!(
                "{m} missing in hyps ({} reference utterance(s) without a hypothesis); --lenient skips them",
                missing.len()
            )));
        }
    }
    let mut t = FbaiTotals::default();
    for r in refs {
        if let Some(h) = hyps.get(&r.id) {
            score_utterance(&r.words, h, &r.rare, &mut t);
        }
    }
    Ok((t, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(w: &[&str]) -> HashSet<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_substitution_costs_less_than_an_insertion_and_a_deletion() {
        let mut t = FbaiTotals::default();
        score_utterance(&["a", "b", "c"], &["a", "x", "c"], &set(&[]), &mut t);
        assert_eq!((t.wer.subs, t.wer.ins, t.wer.dels), (1, 0, 0));
    }

    #[test]
    fn ties_prefer_the_diagonal_then_insertions() {
        // "a b" against "b": deleting a (cost 3) beats substituting a→b and deleting b (7).
        let mut t = FbaiTotals::default();
        score_utterance(&["a", "b"], &["b"], &set(&["a"]), &mut t);
        assert_eq!((t.wer.dels, t.b_wer.dels, t.u_wer.ref_words), (1, 1, 1));
        // "a" against "b c": sub + ins (7) either way; the backtrace from the end takes the
        // diagonal at the last cell (a→c substituted, b inserted).
        let mut t = FbaiTotals::default();
        score_utterance(&["a"], &["b", "c"], &set(&["b"]), &mut t);
        assert_eq!(
            (t.wer.subs, t.wer.ins, t.b_wer.ins, t.u_wer.subs),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn python_float_printing() {
        let c = FbaiCounts {
            ref_words: 4,
            subs: 1,
            ins: 0,
            dels: 0,
        };
        assert_eq!(
            c.result_string(),
            "error_rate=25.0, ref_words=4, subs=1, ins=0, dels=0"
        );
        let c = FbaiCounts {
            ref_words: 52576,
            subs: 1501,
            ins: 195,
            dels: 225,
        };
        assert!(c
            .result_string()
            .starts_with("error_rate=3.6537583688374924,"));
    }
}

//! Context lists for open-vocabulary biasing (docs/design.md §3): the phrases one
//! stream should favour — or, with a negative weight, avoid — whether or not the decoding graph
//! knows their words.
//!
//! One phrase per line, words separated by spaces, optionally followed by a tab and a weight (a
//! bonus in the search's cost units, earned when the whole phrase has been decoded; negative
//! weights penalise). Lines without a weight take the caller's default. Blank lines are skipped;
//! a phrase given twice with one weight is kept once, with two weights it is an error naming both
//! lines, as are a bad or non-finite weight, an empty phrase before a weight, and a second tab.
//!
//! **Spellings** (NVIDIA NeMo's context files, `WORD_SPELLING1_SPELLING2`, read with a
//! spelling separator: [`ContextList::parse_with`]): a phrase may list, after underscores, the
//! word sequences it may be heard as — `gpu_g p u_gpu` is the phrase
//! *gpu*, spotted or boosted as either *g p u* or *gpu*. The first field is the phrase's display
//! form (what a method that writes the phrase as a unit writes: CTC-WS, open-vocabulary
//! contexts); the spellings are what the model's tokens or the graph's words are matched
//! against. As in NeMo, a phrase with spellings is matched only as its spellings (list the
//! word itself as one to keep it). In that format an underscore always separates; without a
//! separator (our own lists) a word may hold one, as ATC's `k_l_m` does.
//!
//! ```
//! use ctx_core::context_list::ContextList;
//! use std::path::Path;
//!
//! let text = "Zorblax Corp\t3.5\nmister smith\nthe end\t-2\n";
//! let list = ContextList::parse(text, Path::new("calls.txt"), 2.0, true).unwrap();
//! assert_eq!(list.phrases[0].words, ["zorblax", "corp"]);
//! assert_eq!(list.phrases[0].weight, 3.5);
//! assert_eq!(list.phrases[1].weight, 2.0); // the default
//! assert_eq!(list.phrases[2].weight, -2.0); // a penalty
//! let err = ContextList::parse("a b\tlots\n", Path::new("calls.txt"), 2.0, true).unwrap_err();
//! assert_eq!(err.to_string(), "calls.txt:1: weight 'lots' is not a number");
//!
//! let nemo = ContextList::parse_with("nvlink_nv link_nvlink\n", Path::new("n.txt"), 2.0, true, Some('_'))
//!     .unwrap();
//! assert_eq!(nemo.phrases[0].words, ["nvlink"]);
//! let spelled: Vec<&[String]> = nemo.phrases[0].spelled().collect();
//! assert_eq!(spelled, [&["nv", "link"][..], &["nvlink"][..]]);
//! ```

use crate::bias::split_phrase;
use crate::error::{CoreError, Result};
use crate::io::read_text;
use std::collections::HashMap;
use std::path::Path;

/// One phrase of a context list and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPhrase {
    /// The words, in order (lower-cased when the list was read so): the display form.
    pub words: Vec<String>,
    /// Bonus (positive) or penalty (negative) earned when the phrase is completed.
    pub weight: f32,
    /// The word sequences the phrase is matched as (NeMo's spellings); empty: its words.
    pub spellings: Vec<Vec<String>>,
}

impl ContextPhrase {
    /// A phrase matched as its own words.
    pub fn new(words: Vec<String>, weight: f32) -> Self {
        Self {
            words,
            weight,
            spellings: Vec::new(),
        }
    }

    /// The word sequences that match the phrase: its spellings, or its words when it has none.
    pub fn spelled(&self) -> impl Iterator<Item = &[String]> {
        let own = self.spellings.is_empty().then_some(self.words.as_slice());
        own.into_iter()
            .chain(self.spellings.iter().map(Vec::as_slice))
    }
}

/// A stream's context: its phrases in first-seen order, each once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextList {
    /// The phrases.
    pub phrases: Vec<ContextPhrase>,
}

/// A phrase field's display words and spellings (`WORD_SPELLING1_…`, each spelling once);
/// `None` for a blank field, an error message for an empty spelling or spellings without a
/// phrase.
type Spelled = (Vec<String>, Vec<Vec<String>>);

fn split_spellings(
    field: &str,
    lowercase: bool,
    sep: Option<char>,
) -> std::result::Result<Option<Spelled>, String> {
    let Some(sep) = sep else {
        let words = split_phrase(field, lowercase);
        return Ok((!words.is_empty()).then_some((words, Vec::new())));
    };
    let mut parts = field.split(sep);
    let words = split_phrase(parts.next().unwrap_or(""), lowercase);
    let mut spellings: Vec<Vec<String>> = Vec::new();
    for (k, sp) in parts.enumerate() {
        let sp = split_phrase(sp, lowercase);
        if sp.is_empty() {
            return Err(format!("spelling {} is empty", k + 1));
        }
        if !spellings.contains(&sp) {
            spellings.push(sp);
        }
    }
    if words.is_empty() {
        return if field.contains(sep) {
            Err("spellings without a phrase".into())
        } else {
            Ok(None)
        };
    }
    Ok(Some((words, spellings)))
}

impl ContextPhrase {
    /// One phrase as a list line's phrase field writes it (words, or with `spelling` the
    /// separator NeMo's `WORD_SPELLING1_…`) at `weight`: `Ok(None)` for a blank field, `Err`
    /// with what is wrong (an empty spelling, spellings without a phrase).
    ///
    /// ```
    /// use ctx_core::context_list::ContextPhrase;
    /// let p = ContextPhrase::parse("tensorrt_tensor rt", 2.0, true, Some('_')).unwrap().unwrap();
    /// assert_eq!((p.words.len(), p.spellings[0].len()), (1, 2));
    /// let k = ContextPhrase::parse("k_l_m two", 2.0, true, None).unwrap().unwrap();
    /// assert_eq!(k.words, ["k_l_m", "two"]);
    /// assert!(ContextPhrase::parse("  ", 2.0, true, None).unwrap().is_none());
    /// ```
    pub fn parse(
        field: &str,
        weight: f32,
        lowercase: bool,
        spelling: Option<char>,
    ) -> std::result::Result<Option<Self>, String> {
        Ok(
            split_spellings(field, lowercase, spelling)?.map(|(words, spellings)| Self {
                words,
                weight,
                spellings,
            }),
        )
    }
}

impl ContextList {
    /// Parses the text of a context list; `source` names it in errors, `default_weight` is the
    /// weight of lines without one. Phrases as written (no spellings).
    pub fn parse(text: &str, source: &Path, default_weight: f32, lowercase: bool) -> Result<Self> {
        Self::parse_with(text, source, default_weight, lowercase, None)
    }

    /// [`ContextList::parse`] with `spelling` the separator of a phrase from its spellings
    /// (`Some('_')`: NeMo's `WORD_SPELLING1_SPELLING2`).
    pub fn parse_with(
        text: &str,
        source: &Path,
        default_weight: f32,
        lowercase: bool,
        spelling: Option<char>,
    ) -> Result<Self> {
        let bad = |line: usize, msg: String| CoreError::Parse {
            path: source.to_path_buf(),
            line,
            msg,
        };
        let mut list = ContextList::default();
        let mut seen: HashMap<Vec<String>, (usize, usize)> = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let mut fields = raw.split('\t');
            let phrase = fields.next().unwrap_or("");
            let weight = match fields.next() {
                None => default_weight,
                Some(w) => {
                    let w = w.trim();
                    let v: f32 = w
                        .parse()
                        .map_err(|_| bad(line, format!("weight '{w}' is not a number")))?;
                    if !v.is_finite() {
                        return Err(bad(line, format!("weight '{w}' is not finite")));
                    }
                    v
                }
            };
            if fields.next().is_some() {
                return Err(bad(
                    line,
                    "more than one tab (a phrase, then at most one weight)".into(),
                ));
            }
            let (words, spellings) = match split_spellings(phrase, lowercase, spelling) {
                Ok(Some(p)) => p,
                Ok(None) if raw.contains('\t') => {
                    return Err(bad(line, "a weight without a phrase".into()))
                }
                Ok(None) => continue,
                Err(msg) => return Err(bad(line, msg)),
            };
            match seen.get(&words) {
                Some(&(first, k)) => {
                    let had = &mut list.phrases[k].spellings;
                    if had.is_empty() != spellings.is_empty() {
                        return Err(bad(
                            line,
                            format!(
                                "'{}' has spellings on one of lines {first} and {line} only",
                                words.join(" ")
                            ),
                        ));
                    }
                    for sp in spellings {
                        if !had.contains(&sp) {
                            had.push(sp);
                        }
                    }
                    if list.phrases[k].weight != weight {
                        return Err(bad(
                            line,
                            format!(
                                "'{}' has weight {weight} here and {} on line {first}",
                                words.join(" "),
                                list.phrases[k].weight
                            ),
                        ));
                    }
                }
                None => {
                    seen.insert(words.clone(), (line, list.phrases.len()));
                    list.phrases.push(ContextPhrase {
                        words,
                        weight,
                        spellings,
                    });
                }
            }
        }
        Ok(list)
    }

    /// Reads a context list file (see [`ContextList::parse`]).
    pub fn read(path: &Path, default_weight: f32, lowercase: bool) -> Result<Self> {
        Self::read_with(path, default_weight, lowercase, None)
    }

    /// [`ContextList::read`], with `spelling` the separator of a phrase from its spellings
    /// (`Some('_')`: NeMo's context files; `None`: phrases as written).
    pub fn read_with(
        path: &Path,
        default_weight: f32,
        lowercase: bool,
        spelling: Option<char>,
    ) -> Result<Self> {
        let text = read_text(path)?;
        Self::parse_with(&text, path, default_weight, lowercase, spelling)
    }

    /// Number of phrases.
    pub fn len(&self) -> usize {
        self.phrases.len()
    }

    /// Whether the list has no phrase.
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        ContextList::parse(text, Path::new("ctx.txt"), 1.0, true)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn weights_defaults_duplicates_and_errors() {
        let l = ContextList::parse(
            "\nAcme  Widgets\t-1.5\nacme widgets\t-1.5\nzed\n",
            Path::new("ctx.txt"),
            4.0,
            true,
        )
        .unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l.phrases[0].weight, -1.5);
        assert_eq!(l.phrases[1].words, ["zed"]);
        assert_eq!(l.phrases[1].weight, 4.0);
        let kept = ContextList::parse("Acme\n", Path::new("x"), 1.0, false).unwrap();
        assert_eq!(kept.phrases[0].words, ["Acme"]);
        assert_eq!(
            err("a\nb c\tinf\n"),
            "ctx.txt:2: weight 'inf' is not finite"
        );
        assert_eq!(
            err("a\t1\nA\t2\n"),
            "ctx.txt:2: 'a' has weight 2 here and 1 on line 1"
        );
        assert_eq!(err(" \t3\n"), "ctx.txt:1: a weight without a phrase");
        assert!(err("a\t1\t2\n").starts_with("ctx.txt:1: more than one tab"));
        assert!(ContextList::parse("", Path::new("x"), 1.0, true)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn spellings_as_nemo_writes_them() {
        let nemo =
            |text: &str| ContextList::parse_with(text, Path::new("ctx.txt"), 1.0, true, Some('_'));
        let l = nemo("GPU_g p u_gpu\t2\ngpu_G  P U_graphics unit\t2\nplain words\n").unwrap();
        assert_eq!(l.len(), 2);
        let gpu = &l.phrases[0];
        assert_eq!(gpu.words, ["gpu"]);
        // Merged over the two lines, each once, in first-seen order; "gpu" itself is one.
        let spelled: Vec<String> = gpu.spelled().map(|s| s.join(" ")).collect();
        assert_eq!(spelled, ["g p u", "gpu", "graphics unit"]);
        let plain: Vec<&[String]> = l.phrases[1].spelled().collect();
        assert_eq!(plain, [&["plain", "words"][..]]);
        let err = |text: &str| nemo(text).unwrap_err().to_string();
        assert_eq!(err("gpu_\n"), "ctx.txt:1: spelling 1 is empty");
        assert_eq!(err("gpu_g p u_ \n"), "ctx.txt:1: spelling 2 is empty");
        assert_eq!(err("_g p u\n"), "ctx.txt:1: spellings without a phrase");
        assert_eq!(
            err("gpu\ngpu_g p u\n"),
            "ctx.txt:2: 'gpu' has spellings on one of lines 1 and 2 only"
        );
        // Our own lists read an underscore as part of a word.
        let ours = ContextList::parse("k_l_m two\n", Path::new("x"), 1.0, true).unwrap();
        assert_eq!(ours.phrases[0].words, ["k_l_m", "two"]);
        assert!(ours.phrases[0].spellings.is_empty());
    }
}

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
//! ```

use crate::bias::split_phrase;
use crate::error::{CoreError, Result};
use crate::io::read_text;
use std::collections::HashMap;
use std::path::Path;

/// One phrase of a context list and its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPhrase {
    /// The words, in order (lower-cased when the list was read so).
    pub words: Vec<String>,
    /// Bonus (positive) or penalty (negative) earned when the phrase is completed.
    pub weight: f32,
}

/// A stream's context: its phrases in first-seen order, each once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextList {
    /// The phrases.
    pub phrases: Vec<ContextPhrase>,
}

impl ContextList {
    /// Parses the text of a context list; `source` names it in errors, `default_weight` is the
    /// weight of lines without one.
    pub fn parse(text: &str, source: &Path, default_weight: f32, lowercase: bool) -> Result<Self> {
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
            let words = split_phrase(phrase, lowercase);
            if words.is_empty() {
                if raw.contains('\t') {
                    return Err(bad(line, "a weight without a phrase".into()));
                }
                continue;
            }
            match seen.get(&words) {
                Some(&(first, k)) => {
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
                    list.phrases.push(ContextPhrase { words, weight });
                }
            }
        }
        Ok(list)
    }

    /// Reads a context list file (see [`ContextList::parse`]).
    pub fn read(path: &Path, default_weight: f32, lowercase: bool) -> Result<Self> {
        let text = read_text(path)?;
        Self::parse(&text, path, default_weight, lowercase)
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
}

//! ARPA back-off n-gram language models: reader (plain or gzip), writer and queries.
//!
//! Probabilities stay in ARPA's log10 domain here; graph builders convert to the tropical (−ln)
//! semiring themselves. A word's probability given a history follows the ARPA back-off rule:
//! `p(w | h) = p(h w)` when the n-gram is listed, else `bo(h) · p(w | h')` with `h'` the history
//! without its oldest word, and a missing back-off weight counts as log10 1 = 0.

use crate::error::{CoreError, Result};
use crate::io::{open_read, write_atomic};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

/// Sentence-begin symbol.
pub const BOS: &str = "<s>";
/// Sentence-end symbol.
pub const EOS: &str = "</s>";
/// Unknown-word symbol.
pub const UNK: &str = "<unk>";

/// One listed n-gram: its words (ids into the LM vocabulary), log10 probability and back-off.
#[derive(Debug, Clone, PartialEq)]
pub struct NgramEntry {
    /// Word ids, oldest first.
    pub words: Vec<u32>,
    /// log10 p(last word | the others).
    pub log10_prob: f32,
    /// log10 back-off weight of this n-gram as a history (0 when absent).
    pub log10_backoff: f32,
}

/// A back-off n-gram LM as listed in an ARPA file.
#[derive(Debug, Clone, Default)]
pub struct ArpaLm {
    vocab: Vec<String>,
    word_ids: HashMap<String, u32>,
    /// `orders[n-1]` lists the n-grams in file order.
    orders: Vec<Vec<NgramEntry>>,
    /// `index[n-1]` maps an n-gram's words to its position in `orders[n-1]`.
    index: Vec<HashMap<Vec<u32>, u32>>,
}

/// Score of a word sequence under an [`ArpaLm`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SentenceScore {
    /// Total log10 probability.
    pub log10_prob: f64,
    /// Number of scored tokens (words, plus `</s>` when requested).
    pub tokens: usize,
    /// Number of words mapped to `<unk>`.
    pub oov: usize,
}

impl SentenceScore {
    /// Perplexity `10^(−log10 p / tokens)`.
    pub fn perplexity(&self) -> f64 {
        10f64.powf(-self.log10_prob / self.tokens.max(1) as f64)
    }
}

impl ArpaLm {
    /// Builds an LM from n-gram entries given as words; unigrams define the vocabulary, and every
    /// word of a higher-order n-gram must be among them.
    pub fn from_entries(orders: Vec<Vec<(Vec<String>, f32, f32)>>) -> Result<Self> {
        let mut lm = ArpaLm::default();
        for (n, entries) in orders.into_iter().enumerate() {
            lm.orders.push(Vec::with_capacity(entries.len()));
            lm.index.push(HashMap::with_capacity(entries.len()));
            for (words, p, bo) in entries {
                if words.len() != n + 1 {
                    return Err(CoreError::Invalid(format!(
                        "{}-gram entry {:?} has {} words",
                        n + 1,
                        words,
                        words.len()
                    )));
                }
                let ids = if n == 0 {
                    vec![lm.add_word(&words[0])?]
                } else {
                    lm.ids_of(&words)?
                };
                lm.push_entry(n, ids, p, bo)?;
            }
        }
        Ok(lm)
    }

    fn add_word(&mut self, w: &str) -> Result<u32> {
        if self.word_ids.contains_key(w) {
            return Err(CoreError::Invalid(format!("unigram {w:?} listed twice")));
        }
        let id = self.vocab.len() as u32;
        self.vocab.push(w.to_owned());
        self.word_ids.insert(w.to_owned(), id);
        Ok(id)
    }

    fn ids_of(&self, words: &[String]) -> Result<Vec<u32>> {
        words
            .iter()
            .map(|w| {
                self.word_ids.get(w.as_str()).copied().ok_or_else(|| {
                    CoreError::Invalid(format!("word {w:?} is not among the unigrams"))
                })
            })
            .collect()
    }

    fn push_entry(&mut self, n: usize, ids: Vec<u32>, p: f32, bo: f32) -> Result<()> {
        let pos = self.orders[n].len() as u32;
        if self.index[n].insert(ids.clone(), pos).is_some() {
            return Err(CoreError::Invalid(format!(
                "n-gram {:?} listed twice",
                ids.iter()
                    .map(|&i| self.vocab[i as usize].as_str())
                    .collect::<Vec<_>>()
            )));
        }
        self.orders[n].push(NgramEntry {
            words: ids,
            log10_prob: p,
            log10_backoff: bo,
        });
        Ok(())
    }

    /// Reads an ARPA file (gzip is detected). Checks the header counts against the sections, the
    /// presence of `\end\`, field counts and numbers, and that n-gram words are unigrams.
    pub fn read(path: &Path) -> Result<Self> {
        let reader = open_read(path)?;
        let mut lm = ArpaLm::default();
        let mut header_counts: Vec<(usize, usize)> = Vec::new(); // (count, header line)
        enum State {
            Preamble,
            Header,
            Section(usize, usize), // order n (1-based), line of its `\n-grams:` marker
            End,
        }
        let mut state = State::Preamble;
        let mut lineno = 0;
        for line in reader.lines() {
            lineno += 1;
            let line = line.map_err(|e| CoreError::io(path, e))?;
            let t = line.trim();
            match state {
                State::Preamble => {
                    if t == "\\data\\" {
                        state = State::Header;
                    }
                }
                State::Header => {
                    if t.is_empty() {
                        continue;
                    }
                    if let Some(rest) = t.strip_prefix("ngram ") {
                        let c = header_count(path, lineno, t, rest, header_counts.len() + 1)?;
                        header_counts.push((c, lineno));
                    } else if let Some(n) = section_marker(t) {
                        if header_counts.is_empty() {
                            return Err(CoreError::parse(path, lineno, "no `ngram N=count` lines"));
                        }
                        if n != 1 {
                            return Err(CoreError::parse(
                                path,
                                lineno,
                                format!("expected \\1-grams:, got {t:?}"),
                            ));
                        }
                        lm.orders.push(Vec::new());
                        lm.index.push(HashMap::new());
                        state = State::Section(1, lineno);
                    } else {
                        return Err(CoreError::parse(
                            path,
                            lineno,
                            format!("unexpected line in \\data\\ header: {t:?}"),
                        ));
                    }
                }
                State::Section(n, start) => {
                    if t.is_empty() {
                        continue;
                    }
                    if t == "\\end\\" {
                        close_section(path, &lm, n, start, &header_counts)?;
                        if n != header_counts.len() {
                            return Err(CoreError::parse(
                                path,
                                lineno,
                                format!(
                                    "\\end\\ after the {n}-grams, but the header announces order {}",
                                    header_counts.len()
                                ),
                            ));
                        }
                        state = State::End;
                        continue;
                    }
                    if let Some(m) = section_marker(t) {
                        close_section(path, &lm, n, start, &header_counts)?;
                        if m != n + 1 || m > header_counts.len() {
                            return Err(CoreError::parse(
                                path,
                                lineno,
                                format!("unexpected section {t:?} after the {n}-grams"),
                            ));
                        }
                        lm.orders.push(Vec::new());
                        lm.index.push(HashMap::new());
                        state = State::Section(m, lineno);
                        continue;
                    }
                    parse_ngram(&mut lm, path, lineno, t, n, header_counts.len())?;
                }
                State::End => {
                    if !t.is_empty() {
                        return Err(CoreError::parse(path, lineno, "text after \\end\\"));
                    }
                }
            }
        }
        match state {
            State::End => Ok(lm),
            State::Preamble => Err(CoreError::format(path, "no \\data\\ section: not an ARPA file")),
            State::Header => Err(CoreError::format(path, "truncated: the file ends inside the \\data\\ header")),
            State::Section(n, start) => Err(CoreError::format(
                path,
                format!(
                    "truncated: the file ends inside the {n}-grams section (begun at line {start}) without \\end\\; {} of {} {n}-grams read",
                    lm.orders[n - 1].len(),
                    header_counts[n - 1].0
                ),
            )),
        }
    }

    /// Writes the LM in ARPA form (gzip when the path ends with `.gz`), atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| self.write_to(w))
    }

    /// Writes the LM in ARPA form to any writer. Numbers are written in their shortest exact form,
    /// so reading the output back gives the same model.
    pub fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "\\data\\")?;
        for (n, entries) in self.orders.iter().enumerate() {
            writeln!(w, "ngram {}={}", n + 1, entries.len())?;
        }
        let top = self.orders.len();
        for (n, entries) in self.orders.iter().enumerate() {
            writeln!(w, "\n\\{}-grams:", n + 1)?;
            for e in entries {
                write!(w, "{}\t", e.log10_prob)?;
                for (k, &id) in e.words.iter().enumerate() {
                    if k > 0 {
                        w.write_all(b" ")?;
                    }
                    w.write_all(self.vocab[id as usize].as_bytes())?;
                }
                if n + 1 < top && e.log10_backoff != 0.0 {
                    write!(w, "\t{}", e.log10_backoff)?;
                }
                w.write_all(b"\n")?;
            }
        }
        writeln!(w, "\n\\end\\")
    }

    /// The model order (longest n-gram).
    pub fn order(&self) -> usize {
        self.orders.len()
    }

    /// Number of listed n-grams of order `n` (1-based).
    pub fn count(&self, n: usize) -> usize {
        self.orders.get(n.wrapping_sub(1)).map_or(0, Vec::len)
    }

    /// The n-grams of order `n` (1-based) in file order.
    pub fn entries(&self, n: usize) -> &[NgramEntry] {
        self.orders
            .get(n.wrapping_sub(1))
            .map_or(&[], Vec::as_slice)
    }

    /// The vocabulary (unigram words) in id order.
    pub fn vocab(&self) -> &[String] {
        &self.vocab
    }

    /// The id of `word`, if it is a unigram.
    pub fn word_id(&self, word: &str) -> Option<u32> {
        self.word_ids.get(word).copied()
    }

    /// The word with id `id`.
    pub fn word(&self, id: u32) -> Option<&str> {
        self.vocab.get(id as usize).map(String::as_str)
    }

    /// The entry for the n-gram `words`, if listed.
    pub fn entry(&self, words: &[u32]) -> Option<&NgramEntry> {
        let n = words.len();
        if n == 0 || n > self.orders.len() {
            return None;
        }
        self.index[n - 1]
            .get(words)
            .map(|&i| &self.orders[n - 1][i as usize])
    }

    /// log10 p(`word` | `history`), history oldest first (only its last `order − 1` words matter),
    /// following the back-off rule. Returns `None` only when `word` is not in the vocabulary.
    pub fn log10_prob(&self, history: &[u32], word: u32) -> Option<f32> {
        if word as usize >= self.vocab.len() {
            return None;
        }
        let max_hist = history.len().min(self.orders.len().saturating_sub(1));
        let mut acc = 0.0f32;
        let mut key: Vec<u32> = Vec::with_capacity(max_hist + 1);
        for k in (0..=max_hist).rev() {
            let hist = &history[history.len() - k..];
            key.clear();
            key.extend_from_slice(hist);
            key.push(word);
            if let Some(e) = self.entry(&key) {
                return Some(acc + e.log10_prob);
            }
            if let Some(h) = self.entry(hist) {
                acc += h.log10_backoff;
            }
        }
        // The unigram exists for every vocabulary word, so the loop always returns.
        None
    }

    /// Scores a sentence given as words. With `bos` the history starts with `<s>`; with `eos` the
    /// probability of `</s>` after the last word is added. Words outside the vocabulary are mapped to
    /// `<unk>` (counted in `oov`); when the LM has no `<unk>`, such a word is an error naming it.
    pub fn score_sentence<S: AsRef<str>>(
        &self,
        words: &[S],
        bos: bool,
        eos: bool,
    ) -> Result<SentenceScore> {
        let unk = self.word_id(UNK);
        let mut ids = Vec::with_capacity(words.len() + 2);
        let mut oov = 0;
        if bos {
            ids.push(self.word_id(BOS).ok_or_else(|| {
                CoreError::Invalid("the LM has no <s> but a sentence start was requested".into())
            })?);
        }
        let first = ids.len();
        for w in words {
            let w = w.as_ref();
            match self.word_id(w) {
                Some(id) => ids.push(id),
                None => {
                    oov += 1;
                    ids.push(unk.ok_or_else(|| {
                        CoreError::Invalid(format!(
                            "word {w:?} is not in the LM vocabulary and the LM has no <unk>"
                        ))
                    })?);
                }
            }
        }
        if eos {
            ids.push(self.word_id(EOS).ok_or_else(|| {
                CoreError::Invalid("the LM has no </s> but a sentence end was requested".into())
            })?);
        }
        let mut total = 0.0f64;
        for i in first..ids.len() {
            total += self
                .log10_prob(&ids[..i], ids[i])
                .expect("ids come from the vocabulary") as f64;
        }
        Ok(SentenceScore {
            log10_prob: total,
            tokens: ids.len() - first,
            oov,
        })
    }
}

/// The `n`-grams section begun at line `start` must list as many n-grams as the header
/// (`counts`: count and line per order) announced.
fn close_section(
    path: &Path,
    lm: &ArpaLm,
    n: usize,
    start: usize,
    counts: &[(usize, usize)],
) -> Result<()> {
    let have = lm.orders[n - 1].len();
    let (want, hline) = counts[n - 1];
    if have != want {
        Err(CoreError::parse(
            path,
            start,
            format!(
                "the header (line {hline}) announces {want} {n}-grams but the section lists {have}"
            ),
        ))
    } else {
        Ok(())
    }
}

/// Reads one line of the `n`-grams section (line `lineno` of `path`: probability, words, an
/// optional back-off) into `lm`, whose highest order is `top`.
fn parse_ngram(
    lm: &mut ArpaLm,
    path: &Path,
    lineno: usize,
    t: &str,
    n: usize,
    top: usize,
) -> Result<()> {
    let fields: Vec<&str> = t.split_whitespace().collect();
    let with_bo = match fields.len() {
        k if k == n + 1 => false,
        k if k == n + 2 => true,
        k => {
            return Err(CoreError::parse(
                path,
                lineno,
                format!(
                    "a {n}-gram line needs {} or {} fields, found {k}",
                    n + 1,
                    n + 2
                ),
            ))
        }
    };
    let p = parse_prob(fields[0]).map_err(|msg| CoreError::parse(path, lineno, msg))?;
    let bo = if with_bo {
        parse_log(fields[n + 1]).ok_or_else(|| {
            CoreError::parse(
                path,
                lineno,
                format!("bad back-off weight {:?}", fields[n + 1]),
            )
        })?
    } else {
        0.0
    };
    // No n-gram extends one of the highest order: its back-off would never be
    // read. A zero one is harmless (some tools write it); another is refused.
    if bo != 0.0 && n == top {
        return Err(CoreError::parse(
            path,
            lineno,
            format!(
                "a back-off weight ({bo}) on a {n}-gram of the LM's highest order, which no longer history uses"
            ),
        ));
    }
    let ids = if n == 1 {
        vec![lm
            .add_word(fields[1])
            .map_err(|e| CoreError::parse(path, lineno, e.to_string()))?]
    } else {
        let mut ids = Vec::with_capacity(n);
        for w in &fields[1..=n] {
            ids.push(*lm.word_ids.get(*w).ok_or_else(|| {
                CoreError::parse(path, lineno, format!("word {w:?} is not among the 1-grams"))
            })?);
        }
        ids
    };
    lm.push_entry(n - 1, ids, p, bo)
        .map_err(|e| CoreError::parse(path, lineno, e.to_string()))?;
    Ok(())
}

/// The count of an `ngram N=count` header line (`rest`: after `ngram `), which must announce
/// order `want` (the orders in turn).
fn header_count(path: &Path, lineno: usize, t: &str, rest: &str, want: usize) -> Result<usize> {
    let (n, c) = rest
        .split_once('=')
        .ok_or_else(|| CoreError::parse(path, lineno, format!("bad count line {t:?}")))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| CoreError::parse(path, lineno, format!("bad order in {t:?}")))?;
    let c: usize = c
        .trim()
        .parse()
        .map_err(|_| CoreError::parse(path, lineno, format!("bad count in {t:?}")))?;
    if n != want {
        return Err(CoreError::parse(
            path,
            lineno,
            format!("expected the count of {}-grams, got {t:?}", want),
        ));
    }
    Ok(c)
}

fn section_marker(t: &str) -> Option<usize> {
    t.strip_prefix('\\')?.strip_suffix("-grams:")?.parse().ok()
}

/// An n-gram's log10 probability: a number, and not above 0 (a
/// writer's rounding of log10 1 may leave a few millionths, so up to 1e-4 passes).
fn parse_prob(s: &str) -> std::result::Result<f32, String> {
    let p = parse_log(s).ok_or_else(|| format!("bad log10 probability {s:?}"))?;
    if p > 1e-4 {
        return Err(format!(
            "log10 probability {s} is above 0: a probability above 1"
        ));
    }
    Ok(p)
}

fn parse_log(s: &str) -> Option<f32> {
    let v: f32 = s.parse().ok()?;
    // ARPA files use -99 or -inf for impossible events; NaN or +inf is never valid.
    (!v.is_nan() && v != f32::INFINITY).then_some(v)
}

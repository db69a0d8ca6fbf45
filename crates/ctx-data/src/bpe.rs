//! Byte-pair encoding trained on LM text, for CTC tokens and token-level LMs (docs/design.md §5).
//!
//! SentencePiece-style pieces: each word starts with the boundary mark `▁`, so the piece
//! sequence of a sentence decodes back to its words. Training starts from the characters of
//! the text and repeatedly merges the most frequent adjacent pair (ties: the pair whose pieces
//! sort first), until the inventory has `vocab_size` pieces. Encoding applies the learned merges
//! in order of rank. Token id 0 is reserved for the CTC blank; pieces are ids 1..=V.

use crate::rng::Rng;
use ctx_core::io::{read_text, write_atomic};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The word-boundary mark.
pub const BOUNDARY: char = '▁';
/// Name of the CTC blank (token id 0).
pub const BLANK: &str = "<blk>";
/// Piece for characters the model has not seen.
pub const UNK: &str = "<unk>";

/// Errors of BPE training and loading.
#[derive(Debug, thiserror::Error)]
pub enum BpeError {
    /// File problem.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
    /// Bad settings or model file.
    #[error("{0}")]
    Invalid(String),
}

/// A trained BPE model.
#[derive(Debug, Clone, PartialEq)]
pub struct Bpe {
    /// Pieces in id order (id = index + 1; id 0 is the blank).
    pieces: Vec<String>,
    ids: HashMap<String, u32>,
    /// Merge rank of each pair.
    ranks: HashMap<(String, String), usize>,
    /// Merges in order.
    merges: Vec<(String, String)>,
}

impl Bpe {
    /// Trains on sentences until `vocab_size` pieces (characters + merges + `<unk>`).
    pub fn train<S: AsRef<str>>(sentences: &[S], vocab_size: usize) -> Result<Self, BpeError> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for s in sentences {
            for w in s.as_ref().split_whitespace() {
                *counts.entry(w.to_string()).or_default() += 1;
            }
        }
        if counts.is_empty() {
            return Err(BpeError::Invalid("BPE training text is empty".into()));
        }
        // Words as symbol sequences.
        let words: Vec<(Vec<String>, u64)> = counts
            .iter()
            .map(|(w, &c)| {
                let mut syms = vec![format!("{BOUNDARY}{}", w.chars().next().unwrap())];
                syms.extend(w.chars().skip(1).map(|c| c.to_string()));
                (syms, c)
            })
            .collect();
        let mut pieces: Vec<String> = vec![UNK.to_string()];
        let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        for (syms, _) in &words {
            for s in syms {
                seen.insert(s.clone());
            }
        }
        pieces.extend(seen.iter().cloned());
        if pieces.len() > vocab_size {
            return Err(BpeError::Invalid(format!(
                "vocabulary size {vocab_size} is smaller than the {} characters of the text",
                pieces.len()
            )));
        }
        // Symbols as ids into `pieces`; the pair counts are kept up to date as merges rewrite
        // the words that hold the merged pair (counting every pair of every word again per
        // merge took 12 s on the Earnings-22 text; this gives the same merges in well under 1 s).
        let id_of: HashMap<&str, u32> = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), i as u32))
            .collect();
        let mut words: Vec<(Vec<u32>, u64)> = words
            .iter()
            .map(|(syms, c)| (syms.iter().map(|s| id_of[s.as_str()]).collect(), *c))
            .collect();
        let mut pairs: HashMap<(u32, u32), u64> = HashMap::new();
        let mut holders: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        for (wi, (syms, c)) in words.iter().enumerate() {
            for p in syms.windows(2) {
                *pairs.entry((p[0], p[1])).or_default() += c;
                holders.entry((p[0], p[1])).or_default().push(wi as u32);
            }
        }
        let mut merges = Vec::new();
        while pieces.len() < vocab_size {
            // The most frequent pair; ties: the pair whose pieces sort first.
            let mut best: Option<((u32, u32), u64)> = None;
            for (&(a, b), &c) in &pairs {
                let better = match best {
                    None => true,
                    Some(((ba, bb), bc)) => {
                        c > bc
                            || (c == bc
                                && (pieces[a as usize].as_str(), pieces[b as usize].as_str())
                                    < (pieces[ba as usize].as_str(), pieces[bb as usize].as_str()))
                    }
                };
                if better {
                    best = Some(((a, b), c));
                }
            }
            let Some(((a, b), _)) = best else {
                break; // every word is a single piece
            };
            let merged_id = pieces.len() as u32;
            pieces.push(format!("{}{}", pieces[a as usize], pieces[b as usize]));
            merges.push((pieces[a as usize].clone(), pieces[b as usize].clone()));
            let mut held = holders.remove(&(a, b)).unwrap_or_default();
            held.sort_unstable();
            held.dedup();
            for wi in held {
                let (syms, c) = &mut words[wi as usize];
                let c = *c;
                if !syms.windows(2).any(|p| p[0] == a && p[1] == b) {
                    continue;
                }
                for p in syms.windows(2) {
                    let k = (p[0], p[1]);
                    if let Some(n) = pairs.get_mut(&k) {
                        *n -= c;
                        if *n == 0 {
                            pairs.remove(&k);
                        }
                    }
                }
                let mut i = 0;
                while i + 1 < syms.len() {
                    if syms[i] == a && syms[i + 1] == b {
                        syms[i] = merged_id;
                        syms.remove(i + 1);
                    }
                    i += 1;
                }
                for p in syms.windows(2) {
                    let k = (p[0], p[1]);
                    *pairs.entry(k).or_default() += c;
                    if p[0] == merged_id || p[1] == merged_id {
                        holders.entry(k).or_default().push(wi);
                    }
                }
            }
        }
        Ok(Self::from_parts(pieces, merges))
    }

    fn from_parts(pieces: Vec<String>, merges: Vec<(String, String)>) -> Self {
        let ids = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as u32 + 1))
            .collect();
        let ranks = merges
            .iter()
            .enumerate()
            .map(|(i, m)| (m.clone(), i))
            .collect();
        Self {
            pieces,
            ids,
            ranks,
            merges,
        }
    }

    /// Number of pieces (without the blank).
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether the model has no pieces.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The pieces in id order (id = index + 1).
    pub fn pieces(&self) -> &[String] {
        &self.pieces
    }

    /// The token id of a piece.
    pub fn id(&self, piece: &str) -> Option<u32> {
        self.ids.get(piece).copied()
    }

    /// The pieces of one word (unknown characters become `<unk>`).
    pub fn encode_word(&self, word: &str) -> Vec<String> {
        let mut syms = self.characters(word);
        loop {
            let best = syms
                .windows(2)
                .enumerate()
                .filter_map(|(i, p)| {
                    self.ranks
                        .get(&(p[0].clone(), p[1].clone()))
                        .map(|&r| (r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let merged = format!("{}{}", syms[i], syms[i + 1]);
            syms[i] = merged;
            syms.remove(i + 1);
        }
        syms
    }

    /// The pieces of one word with BPE-dropout (Provilkov et al., 2020): at each merge step
    /// every applicable merge is left out with probability `p` and the best-ranked of the rest
    /// is made; the word stops merging when none is left. `p` = 0 is [`Self::encode_word`]; a
    /// seeded `rng` makes the sample reproducible. NeMo samples a boosting tree's alternative
    /// tokenisations of a phrase so (its `use_bpe_dropout`, `bpe_alpha`).
    ///
    /// ```
    /// use ctx_data::bpe::Bpe;
    /// use ctx_data::rng::Rng;
    /// let bpe = Bpe::train(&["low lower lowest", "slow slower"], 40).unwrap();
    /// let whole = bpe.encode_word("lower");
    /// assert_eq!(bpe.encode_word_dropout("lower", 0.0, &mut Rng::new(1)), whole);
    /// // p = 1: no merge at all, one piece per character.
    /// assert_eq!(bpe.encode_word_dropout("lower", 1.0, &mut Rng::new(1)).len(), 5);
    /// ```
    pub fn encode_word_dropout(&self, word: &str, p: f64, rng: &mut Rng) -> Vec<String> {
        let mut syms = self.characters(word);
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (i, w) in syms.windows(2).enumerate() {
                if let Some(&r) = self.ranks.get(&(w[0].clone(), w[1].clone())) {
                    if !rng.chance(p) && best.is_none_or(|b| (r, i) < b) {
                        best = Some((r, i));
                    }
                }
            }
            let Some((_, i)) = best else { break };
            let merged = format!("{}{}", syms[i], syms[i + 1]);
            syms[i] = merged;
            syms.remove(i + 1);
        }
        syms
    }

    /// Up to `n` tokenisations of `words` other than their own ([`Self::encode_word`]), each a
    /// distinct BPE-dropout sample at probability `p`, as piece ids: at most 5·(n + 1) draws
    /// from a generator seeded by `seed` and the words' text (NeMo's alternative
    /// transcriptions of a boosting tree's phrase), a sample with a piece the model lacks left
    /// out.
    ///
    /// ```
    /// use ctx_data::bpe::Bpe;
    /// let bpe = Bpe::train(&["low lower lowest", "slow slower newer"], 40).unwrap();
    /// let words = ["lower".to_string(), "newer".to_string()];
    /// let s = bpe.dropout_samples(&words, 4, 0.3, 7);
    /// assert!(!s.is_empty() && s.len() <= 4);
    /// assert_eq!(s, bpe.dropout_samples(&words, 4, 0.3, 7)); // seeded
    /// for t in &s {
    ///     assert_eq!(bpe.decode(t), "lower newer");
    /// }
    /// assert!(bpe.dropout_samples(&words, 0, 0.3, 7).is_empty());
    /// ```
    pub fn dropout_samples(&self, words: &[String], n: usize, p: f64, seed: u64) -> Vec<Vec<u32>> {
        let ids = |pieces: Vec<String>| -> Option<Vec<u32>> {
            pieces.iter().map(|x| self.id(x)).collect()
        };
        let own = ids(words.iter().flat_map(|w| self.encode_word(w)).collect());
        let mut rng = Rng::for_key(seed, &words.join(" "));
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut draws = 0;
        while out.len() < n && draws < 5 * (n + 1) {
            draws += 1;
            let pieces = words
                .iter()
                .flat_map(|w| self.encode_word_dropout(w, p, &mut rng))
                .collect();
            if let Some(s) = ids(pieces).filter(|s| Some(s) != own.as_ref() && !out.contains(s)) {
                out.push(s);
            }
        }
        out
    }

    /// A word's characters as pieces, the first with the word-boundary mark (`<unk>` for a
    /// character the model lacks).
    fn characters(&self, word: &str) -> Vec<String> {
        word.chars()
            .enumerate()
            .map(|(i, c)| {
                let s = if i == 0 {
                    format!("{BOUNDARY}{c}")
                } else {
                    c.to_string()
                };
                if self.ids.contains_key(&s) {
                    s
                } else {
                    UNK.to_string()
                }
            })
            .collect()
    }

    /// Token ids of a sentence.
    pub fn encode(&self, sentence: &str) -> Vec<u32> {
        sentence
            .split_whitespace()
            .flat_map(|w| self.encode_word(w))
            .map(|p| self.ids[&p])
            .collect()
    }

    /// The sentence of a token-id sequence (blank and unknown ids skipped).
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut s = String::new();
        for &i in ids {
            if let Some(p) = i.checked_sub(1).and_then(|k| self.pieces.get(k as usize)) {
                s.push_str(p);
            }
        }
        s.replace(BOUNDARY, " ").trim().to_string()
    }

    /// Writes the model: a header, the pieces, then the merges.
    pub fn write(&self, path: &Path) -> Result<(), BpeError> {
        write_atomic(path, |w| {
            writeln!(
                w,
                "ctxbench-bpe 1 {} {}",
                self.pieces.len(),
                self.merges.len()
            )?;
            for p in &self.pieces {
                writeln!(w, "{p}")?;
            }
            for (a, b) in &self.merges {
                writeln!(w, "{a} {b}")?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Reads a model written by [`Bpe::write`].
    pub fn read(path: &Path) -> Result<Self, BpeError> {
        let text = read_text(path)?;
        let mut lines = text.lines();
        let bad = |line: usize, m: &str| BpeError::Core(ctx_core::CoreError::parse(path, line, m));
        let header: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
        let (np, nm) = match header.as_slice() {
            ["ctxbench-bpe", "1", p, m] => (
                p.parse::<usize>().map_err(|_| bad(1, "bad piece count"))?,
                m.parse::<usize>().map_err(|_| bad(1, "bad merge count"))?,
            ),
            _ => return Err(bad(1, "not a ctxbench BPE model")),
        };
        let pieces: Vec<String> = lines.by_ref().take(np).map(str::to_string).collect();
        let mut merges = Vec::with_capacity(nm);
        for (i, l) in lines.enumerate() {
            let (a, b) = l
                .split_once(' ')
                .ok_or_else(|| bad(np + i + 2, "expected two pieces"))?;
            merges.push((a.to_string(), b.to_string()));
        }
        if pieces.len() != np || merges.len() != nm {
            return Err(bad(0, "truncated model"));
        }
        Ok(Self::from_parts(pieces, merges))
    }
}

/// Encodes sentences into piece strings, e.g. to estimate a token-level n-gram LM (NGPU-LM works on
/// BPE tokens) with the same Kneser-Ney estimator as word LMs.
pub fn encode_sentences<S: AsRef<str>>(bpe: &Bpe, sentences: &[S]) -> Vec<Vec<String>> {
    sentences
        .iter()
        .map(|s| {
            s.as_ref()
                .split_whitespace()
                .flat_map(|w| bpe.encode_word(w))
                .collect::<Vec<String>>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain algorithm (every pair of every word counted again per merge), the reference
    /// the incremental training must equal merge for merge.
    fn naive_merges(sentences: &[String], vocab_size: usize) -> Vec<(String, String)> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for s in sentences {
            for w in s.split_whitespace() {
                *counts.entry(w.to_string()).or_default() += 1;
            }
        }
        let mut words: Vec<(Vec<String>, u64)> = counts
            .iter()
            .map(|(w, &c)| {
                let mut syms = vec![format!("{BOUNDARY}{}", w.chars().next().unwrap())];
                syms.extend(w.chars().skip(1).map(|c| c.to_string()));
                (syms, c)
            })
            .collect();
        let chars: std::collections::BTreeSet<String> =
            words.iter().flat_map(|(s, _)| s.iter().cloned()).collect();
        let mut n = chars.len() + 1;
        let mut merges = Vec::new();
        while n < vocab_size {
            let mut pairs: HashMap<(&str, &str), u64> = HashMap::new();
            for (syms, c) in &words {
                for p in syms.windows(2) {
                    *pairs.entry((p[0].as_str(), p[1].as_str())).or_default() += c;
                }
            }
            let Some(((a, b), _)) = pairs
                .into_iter()
                .max_by(|(p1, c1), (p2, c2)| c1.cmp(c2).then_with(|| p2.cmp(p1)))
            else {
                break;
            };
            let (a, b) = (a.to_string(), b.to_string());
            let merged = format!("{a}{b}");
            for (syms, _) in &mut words {
                let mut i = 0;
                while i + 1 < syms.len() {
                    if syms[i] == a && syms[i + 1] == b {
                        syms[i] = merged.clone();
                        syms.remove(i + 1);
                    }
                    i += 1;
                }
            }
            merges.push((a, b));
            n += 1;
        }
        merges
    }

    #[test]
    fn incremental_training_equals_the_plain_algorithm() {
        // Seeded pseudo-words over a small alphabet: many repeated letters ("aaa": a pair
        // overlapping itself) and many tied counts, until every word is one piece.
        let mut x: u64 = 7;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        let text: Vec<String> = (0..300)
            .map(|_| {
                (0..1 + next() % 6)
                    .map(|_| {
                        (0..1 + next() % 7)
                            .map(|_| ['a', 'b', 'c', 'a', 'a', 'd'][next() % 6])
                            .collect::<String>()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        for vocab in [12, 40, 150, 2000] {
            let bpe = Bpe::train(&text, vocab).unwrap();
            assert_eq!(bpe.merges, naive_merges(&text, vocab), "vocab {vocab}");
        }
        let all = Bpe::train(&text, 100_000).unwrap();
        assert!(
            all.len() < 100_000,
            "training stops when every word is one piece"
        );
    }

    #[test]
    fn merges_follow_pair_counts_and_round_trip() {
        // "▁l o" and "o w" both occur 5 times (low ×3, lower, lowest); "o w" sorts first
        // ('▁' is U+2581), then "▁l ow" (5) — by hand.
        let text = ["low lower lowest", "low low newer", "wider"];
        let alphabet = {
            let b = Bpe::train(&text, 1).unwrap_err().to_string();
            assert!(b.contains("smaller"), "{b}");
            // characters: ▁l ▁n ▁w o w e r s t i d + <unk>
            12
        };
        let bpe = Bpe::train(&text, alphabet + 2).unwrap();
        assert_eq!(bpe.merges[0], ("o".to_string(), "w".to_string()));
        assert_eq!(bpe.merges[1], ("▁l".to_string(), "ow".to_string()));
        assert_eq!(bpe.encode_word("lowest"), ["▁low", "e", "s", "t"]);
        let ids = bpe.encode("low newer");
        assert_eq!(bpe.decode(&ids), "low newer");
        assert!(!ids.contains(&0), "0 is the blank");
        assert_eq!(bpe.encode_word("lox"), ["▁l", "o", UNK]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bpe.model");
        bpe.write(&p).unwrap();
        assert_eq!(Bpe::read(&p).unwrap(), bpe);
    }
}

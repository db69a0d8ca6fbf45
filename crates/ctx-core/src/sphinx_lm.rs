//! Pocketsphinx's binary LM (`.lm.bin`, "Trie Language Model": `en-us.lm.bin` of pocketsphinx
//! 5) read into an [`ArpaLm`]: pocketsphinx's own converters crash on en-us.lm.bin's
//! trigrams, so its general-English rows could only use a bigram.
//!
//! The format (pocketsphinx `src/lm/ngram_model_trie.c`, `lm_trie.c`, `lm_trie_quant.c`: KenLM's
//! reversed trie with 16-bit quantisation), little-endian:
//!
//! - the header `Trie Language Model` (19 bytes), the order (u8), the n-gram counts (u32 each);
//! - for order > 1: an i32 (once the quantisation type), then the quantisation tables, f32:
//!   for each middle order a 2^16-entry probability table and a 2^16-entry back-off table, then
//!   the highest order's 2^16-entry probability table;
//! - the unigrams, `count₁ + 1` records (f32 prob, f32 back-off, u32 first child), the last one
//!   a sentinel;
//! - the n-gram arrays, bit-packed: per middle order (2 … N−1) entries of (word, back-off code,
//!   probability code, first child), per highest order (word, probability code); word fields
//!   `bits(count₁)` wide, child fields `bits(count of the next order)` wide, codes 16 bits; each
//!   array one entry longer (its sentinel child pointer) and 8 bytes of padding;
//! - the words: a u32 byte count and `count₁` NUL-terminated strings (word id = position).
//!
//! The trie is reversed: a unigram's children are the bigrams ending in it, keyed by the word
//! before it, and so on — the entry reached from unigram `w` through words `h₁`, `h₂` is the
//! n-gram `h₂ h₁ w`, holding p(w | h₂ h₁) and its own back-off. Values are in pocketsphinx's
//! logmath units (log base `log_base`, 1.0001 by default, the base the models were written with);
//! the file does not record the base.
//!
//! ```no_run
//! let lm = ctx_core::sphinx_lm::read_sphinx_bin(std::path::Path::new("en-us.lm.bin"), 1.0001).unwrap();
//! println!("{} unigrams, {} trigrams", lm.count(1), lm.count(3));
//! ```

use crate::arpa::ArpaLm;
use crate::error::{CoreError, Result};
use std::path::Path;

/// The file's first bytes.
pub const MAGIC: &[u8] = b"Trie Language Model";
/// Quantisation bits of a probability or back-off.
const QUANT_BITS: u32 = 16;
/// Entries of one quantisation table.
const TABLE: usize = 1 << QUANT_BITS;
/// The highest order the format's builder supports (pocketsphinx's NGRAM_MAX_ORDER).
const MAX_ORDER: usize = 6;

/// Bits to hold `max` (pocketsphinx's `bitarr_required_bits`: 0 for 0).
fn required_bits(max: u32) -> u32 {
    32 - max.leading_zeros()
}

/// A cursor over the file's bytes; errors name the file and what was being read.
struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bad(&self, msg: impl Into<String>) -> CoreError {
        CoreError::Format {
            path: self.path.to_path_buf(),
            msg: msg.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.bad(format!(
                "truncated: {what} needs {n} bytes at offset {}, the file has {}",
                self.at,
                self.bytes.len()
            )));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>> {
        let b = self.take(n * 4, what)?;
        Ok(b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// One bit-packed array: entries of `total` bits, the word in the low `word` bits.
struct Packed<'a> {
    mem: &'a [u8],
    total: u32,
    word: u32,
}

impl Packed<'_> {
    /// `len` bits at bit offset `off` (at most 25, as pocketsphinx's `bitarr_read_int25`; the
    /// array's padding keeps the 4-byte read inside it).
    fn bits(&self, off: u64, len: u32) -> u32 {
        let i = (off >> 3) as usize;
        let b = &self.mem[i..i + 4];
        let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        (v >> (off & 7)) & ((1u64 << len) - 1) as u32
    }

    /// Entry `k`'s field of `len` bits at `from` bits past its word.
    fn field(&self, k: u32, from: u32, len: u32) -> u32 {
        self.bits(
            k as u64 * self.total as u64 + (self.word + from) as u64,
            len,
        )
    }

    /// Entry `k`'s word.
    fn word_of(&self, k: u32) -> u32 {
        self.bits(k as u64 * self.total as u64, self.word)
    }
}

/// An n-gram while walking the trie: its words, last word first, and where its children are.
struct Node {
    rev: Vec<u32>,
    children: std::ops::Range<u32>,
}

/// Reads a pocketsphinx binary trie LM (plain or gzip) whose values are in logmath units of
/// `log_base` (1.0001 for pocketsphinx's models). Damaged files — a wrong header, an order
/// out of range, sizes that do not add up to the file's, child pointers out of order or range,
/// word ids beyond the vocabulary, non-finite values — are errors naming the file.
pub fn read_sphinx_bin(path: &Path, log_base: f64) -> Result<ArpaLm> {
    if !(log_base.is_finite() && log_base > 1.0) {
        return Err(CoreError::Invalid(format!(
            "log base {log_base}: pocketsphinx's logmath base is a number above 1 (1.0001)"
        )));
    }
    let bytes = crate::io::read_bytes(path)?;
    let mut c = Cursor {
        path,
        bytes: &bytes,
        at: 0,
    };
    if !bytes.starts_with(MAGIC) {
        return Err(c.bad(
            "not a pocketsphinx binary trie LM (no \"Trie Language Model\" header; the older DMP \
             format is not read, and an ARPA file needs no conversion)",
        ));
    }
    c.take(MAGIC.len(), "the header")?;
    let order = c.take(1, "the order")?[0] as usize;
    if !(1..=MAX_ORDER).contains(&order) {
        return Err(c.bad(format!("order {order} is out of range 1..={MAX_ORDER}")));
    }
    let counts: Vec<u32> = (0..order)
        .map(|n| c.u32(&format!("the {}-gram count", n + 1)))
        .collect::<Result<_>>()?;
    if counts[0] == 0 {
        return Err(c.bad("no unigrams"));
    }
    // Quantisation tables: per middle order (prob, back-off), then the highest order's prob.
    let (mut middle_tables, mut longest_table) = (Vec::new(), Vec::new());
    if order > 1 {
        c.u32("the quantisation type")?;
        for n in 2..order {
            let p = c.f32s(TABLE, &format!("the {n}-gram probability table"))?;
            let b = c.f32s(TABLE, &format!("the {n}-gram back-off table"))?;
            middle_tables.push((p, b));
        }
        longest_table = c.f32s(TABLE, &format!("the {order}-gram probability table"))?;
    }
    let ug_count = counts[0] as usize;
    let ug_bytes = c.take((ug_count + 1) * 12, "the unigrams")?;
    let unigrams: Vec<(f32, f32, u32)> = ug_bytes
        .chunks_exact(12)
        .map(|r| {
            let f = |i: usize| f32::from_le_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]);
            (f(0), f(4), u32::from_le_bytes([r[8], r[9], r[10], r[11]]))
        })
        .collect();
    // The bit-packed arrays of orders 2..=N, as pocketsphinx lays them out.
    let word_bits = required_bits(counts[0]);
    let mut arrays: Vec<(Packed, u32)> = Vec::new(); // (array, child pointer bits)
    for n in 2..=order {
        let entries = counts[n - 1] as u64;
        let (next_bits, quant) = if n < order {
            (required_bits(counts[n]), 2 * QUANT_BITS)
        } else {
            (0, QUANT_BITS)
        };
        let total = word_bits + quant + next_bits;
        let size = ((1 + entries) * total as u64).div_ceil(8) + 8;
        let mem = c.take(size as usize, &format!("the {n}-gram array"))?;
        arrays.push((
            Packed {
                mem,
                total,
                word: word_bits,
            },
            next_bits,
        ));
    }
    let k = c.u32("the word strings' size")? as usize;
    let text = c.take(k, "the word strings")?;
    if c.at != bytes.len() {
        return Err(c.bad(format!(
            "{} bytes after the word strings: not the layout its header's counts {counts:?} give",
            bytes.len() - c.at
        )));
    }
    let words: Vec<String> = text
        .split(|&b| b == 0)
        .take(ug_count + 1)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if text.last() != Some(&0) || words.len() != ug_count + 1 || !words[ug_count].is_empty() {
        return Err(c.bad(format!(
            "the word strings do not hold {ug_count} NUL-terminated words"
        )));
    }
    let scale = log_base.log10() as f32;
    let log10 = |v: f32, what: &dyn Fn() -> String| -> Result<f32> {
        let x = v * scale;
        if x.is_finite() {
            Ok(x)
        } else {
            Err(c.bad(format!("{}: value {v} is not finite", what())))
        }
    };
    // Child ranges: non-decreasing and within the next level.
    let check_range = |r: &std::ops::Range<u32>, max: u32, what: &dyn Fn() -> String| {
        if r.start > r.end || r.end > max {
            Err(c.bad(format!(
                "{}: children {}..{} out of order or beyond the {max} entries of the next order",
                what(),
                r.start,
                r.end
            )))
        } else {
            Ok(())
        }
    };
    // Each level's child ranges tile its next level from entry 0, in order.
    let tiles = |ranges: &mut dyn Iterator<Item = std::ops::Range<u32>>, n: usize| -> Result<()> {
        let mut at = 0;
        for r in ranges {
            if r.start != at {
                return Err(c.bad(format!(
                    "the {n}-gram children do not follow each other (entry {} after {at})",
                    r.start
                )));
            }
            at = r.end;
        }
        Ok(())
    };
    let mut orders: Vec<Vec<(Vec<String>, f32, f32)>> = vec![Vec::new(); order];
    let mut level: Vec<Node> = Vec::with_capacity(ug_count);
    for (w, win) in unigrams.windows(2).enumerate() {
        let what = || format!("unigram {w} ({})", words[w]);
        orders[0].push((
            vec![words[w].clone()],
            log10(win[0].0, &what)?,
            log10(win[0].1, &what)?,
        ));
        let r = win[0].2..win[1].2;
        if order > 1 {
            check_range(&r, counts[1], &what)?;
        }
        level.push(Node {
            rev: vec![w as u32],
            children: r,
        });
    }
    for n in 2..=order {
        tiles(&mut level.iter().map(|l| l.children.clone()), n)?;
        let (arr, next_bits) = &arrays[n - 2];
        let mut next_level = Vec::new();
        for node in &level {
            for k in node.children.clone() {
                let w = arr.word_of(k);
                let mut rev = node.rev.clone();
                rev.push(w);
                let name = || {
                    let ws: Vec<&str> = rev
                        .iter()
                        .rev()
                        .map(|&i| words.get(i as usize).map_or("?", |s| s.as_str()))
                        .collect();
                    format!("{n}-gram {k} ({})", ws.join(" "))
                };
                if w as usize >= ug_count {
                    return Err(c.bad(format!(
                        "{}: word id {w} beyond the {ug_count} words",
                        name()
                    )));
                }
                let (prob, bo) = if n < order {
                    let (pt, bt) = &middle_tables[n - 2];
                    let bo = bt[arr.field(k, 0, QUANT_BITS) as usize];
                    let p = pt[arr.field(k, QUANT_BITS, QUANT_BITS) as usize];
                    let r = arr.field(k, 2 * QUANT_BITS, *next_bits)
                        ..arr.field(k + 1, 2 * QUANT_BITS, *next_bits);
                    check_range(&r, counts[n], &name)?;
                    next_level.push(Node {
                        rev: rev.clone(),
                        children: r,
                    });
                    (log10(p, &name)?, log10(bo, &name)?)
                } else {
                    (
                        log10(longest_table[arr.field(k, 0, QUANT_BITS) as usize], &name)?,
                        0.0,
                    )
                };
                let ws: Vec<String> = rev
                    .iter()
                    .rev()
                    .map(|&i| words[i as usize].clone())
                    .collect();
                orders[n - 1].push((ws, prob, bo));
            }
        }
        // The header's count is the array's allocation: pocketsphinx's builder may leave its
        // last entries unused (en-us.lm.bin: 6 of 2,051,547 bigrams), never more.
        let reached = orders[n - 1].len();
        if reached > counts[n - 1] as usize {
            return Err(c.bad(format!(
                "the trie reaches {reached} {n}-grams, the header counts {}",
                counts[n - 1]
            )));
        }
        level = next_level;
    }
    ArpaLm::from_entries(orders).map_err(|e| c.bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::required_bits;

    #[test]
    fn required_bits_is_pocketsphinxs() {
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 72547].map(required_bits),
            [0, 1, 2, 2, 3, 3, 4, 17]
        );
    }
}

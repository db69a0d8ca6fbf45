//! Score matrices (frames × classes) and their file formats: NumPy `.npy` and Kaldi float-matrix
//! archives (text `utt [ ... ]` and binary `\0B` + `FM`/`DM`).
//!
//! A score matrix holds per-frame log-likelihoods over pdf-ids (hybrid models) or log-probabilities
//! over tokens including blank (CTC). Every reader checks that all values are finite and names the
//! utterance and frame of the first bad one, because a NaN silently poisons a Viterbi search.

use crate::error::{CoreError, Result};
use crate::io::{open_read, read_bytes, write_atomic};
use std::io::{BufRead, Read, Write};
use std::path::Path;

/// A dense row-major matrix of f32 scores: one row per frame, one column per class. Its values
/// are its own, or a buffer shared with their owner ([`ScoreMatrix::shared`]: a numpy array
/// lent by the Python package), read in place and copied only when written.
#[derive(Clone)]
pub struct ScoreMatrix {
    rows: usize,
    cols: usize,
    data: Values,
}

/// Row-major values lent by their owner for as long as a matrix holds them (read only).
pub trait SharedValues: Send + Sync {
    /// The values, row-major.
    fn values(&self) -> &[f32];
}

/// A matrix's values: owned, or shared with the owner of a buffer.
#[derive(Clone)]
enum Values {
    Owned(Vec<f32>),
    Shared(std::sync::Arc<dyn SharedValues>),
}

impl std::fmt::Debug for ScoreMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScoreMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("shared", &matches!(self.data, Values::Shared(_)))
            .field("data", &self.data())
            .finish()
    }
}

impl PartialEq for ScoreMatrix {
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows && self.cols == other.cols && self.data() == other.data()
    }
}

impl ScoreMatrix {
    /// Wraps row-major `data`; its length must be `rows * cols`.
    pub fn new(rows: usize, cols: usize, data: Vec<f32>) -> Result<Self> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(CoreError::Invalid(format!(
                "a {rows}×{cols} matrix needs {} values, got {}",
                rows.checked_mul(cols)
                    .map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
                data.len()
            )));
        }
        Ok(Self {
            rows,
            cols,
            data: Values::Owned(data),
        })
    }

    /// A matrix over values shared with their owner, read in place (no copy); a write copies
    /// them first. `values.values()` must hold `rows * cols` values.
    ///
    /// ```
    /// use ctx_core::scores::{ScoreMatrix, SharedValues};
    /// use std::sync::Arc;
    /// struct Lent(Vec<f32>);
    /// impl SharedValues for Lent {
    ///     fn values(&self) -> &[f32] {
    ///         &self.0
    ///     }
    /// }
    /// let lent = Arc::new(Lent(vec![0.0, -1.0, -2.0, 0.0]));
    /// let mut m = ScoreMatrix::shared(2, 2, lent.clone()).unwrap();
    /// assert!(m.is_shared() && std::ptr::eq(m.data(), lent.values()));
    /// m.row_mut(0)[0] = -5.0; // copied on write: the owner's values are untouched
    /// assert!(!m.is_shared() && lent.0[0] == 0.0 && m.row(0) == &[-5.0, -1.0]);
    /// ```
    pub fn shared(
        rows: usize,
        cols: usize,
        values: std::sync::Arc<dyn SharedValues>,
    ) -> Result<Self> {
        let n = values.values().len();
        if rows.checked_mul(cols) != Some(n) {
            return Err(CoreError::Invalid(format!(
                "a {rows}×{cols} matrix needs {} values, got {n}",
                rows.checked_mul(cols)
                    .map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
            )));
        }
        Ok(Self {
            rows,
            cols,
            data: Values::Shared(values),
        })
    }

    /// Whether the values are still shared with their owner (not yet written).
    pub fn is_shared(&self) -> bool {
        matches!(self.data, Values::Shared(_))
    }

    /// The values, owned (copied out of a shared buffer on first write).
    fn owned(&mut self) -> &mut Vec<f32> {
        if let Values::Shared(v) = &self.data {
            self.data = Values::Owned(v.values().to_vec());
        }
        match &mut self.data {
            Values::Owned(v) => v,
            Values::Shared(_) => unreachable!("made owned above"),
        }
    }

    /// A matrix of zeros.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: Values::Owned(vec![0.0; rows * cols]),
        }
    }

    /// Number of frames.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of classes (pdf-ids or tokens).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Frame `t` as a slice.
    pub fn row(&self, t: usize) -> &[f32] {
        &self.data()[t * self.cols..(t + 1) * self.cols]
    }

    /// Frame `t` as a mutable slice (a shared matrix copies its values first).
    pub fn row_mut(&mut self, t: usize) -> &mut [f32] {
        let cols = self.cols;
        &mut self.owned()[t * cols..(t + 1) * cols]
    }

    /// A copy of rows `range` (a chunk for online decoding).
    pub fn slice_rows(&self, range: std::ops::Range<usize>) -> ScoreMatrix {
        let end = range.end.min(self.rows);
        let start = range.start.min(end);
        ScoreMatrix {
            rows: end - start,
            cols: self.cols,
            data: Values::Owned(self.data()[start * self.cols..end * self.cols].to_vec()),
        }
    }

    /// The largest acoustic cost magnitude a path through these scores can accumulate at
    /// `scale`: Σ over frames of the frame's largest |scale × score|. Path costs are f32: past
    /// ~2^20 their spacing exceeds the graph's costs, paths tie, and the lattice explodes.
    pub fn cost_span(&self, scale: f32) -> f64 {
        (0..self.rows)
            .map(|t| {
                self.row(t)
                    .iter()
                    .fold(0f64, |m, &v| m.max((v as f64 * scale as f64).abs()))
            })
            .sum()
    }

    /// Subtracts each frame's largest score from that frame (a constant per frame: every path
    /// pays it, so no path's rank, lattice or posterior changes, only absolute costs).
    ///
    /// ```
    /// use ctx_core::scores::ScoreMatrix;
    /// let mut m = ScoreMatrix::new(2, 2, vec![1e6, 1e6 - 2.0, -3.0, -1.0]).unwrap();
    /// m.shift_rows_to_max_zero();
    /// assert_eq!(m.data(), &[0.0, -2.0, -2.0, 0.0]);
    /// ```
    pub fn shift_rows_to_max_zero(&mut self) {
        for t in 0..self.rows {
            let r = self.row_mut(t);
            let mx = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            r.iter_mut().for_each(|v| *v -= mx);
        }
    }

    /// All values, row-major.
    pub fn data(&self) -> &[f32] {
        match &self.data {
            Values::Owned(v) => v,
            Values::Shared(v) => v.values(),
        }
    }

    /// Checks that every value is finite; the error names `utt`, the frame and the column.
    pub fn check_finite(&self, utt: &str) -> Result<()> {
        let data = self.data();
        if all_finite(data) {
            return Ok(());
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            let (t, c) = (i / self.cols.max(1), i % self.cols.max(1));
            return Err(CoreError::utt(
                utt,
                format!("frame {t}, column {c}: non-finite score {}", data[i]),
            ));
        }
        Ok(())
    }
}

/// Whether every value is finite (no NaN, no ±∞), in one branch-free pass the compiler
/// vectorises: a value is not finite when its exponent bits are all ones. Score checks run on
/// every frame of every utterance, so the early-exit search is kept for the error path only.
pub fn all_finite(values: &[f32]) -> bool {
    const EXP: u32 = 0x7f80_0000;
    let mut bad = 0u32;
    for c in values.chunks(64) {
        let mut acc = 0u32;
        for v in c {
            acc |= ((v.to_bits() & EXP) == EXP) as u32;
        }
        bad |= acc;
    }
    bad == 0
}

// ---------------------------------------------------------------------------------------------
// NumPy .npy

/// Reads a 2-D `.npy` array of little-endian f32, f16 or f64 (read as f32). C order is the norm;
/// a Fortran-order array is transposed into row-major. The whole array must be finite.
pub fn read_npy(path: &Path) -> Result<ScoreMatrix> {
    let bytes = read_bytes(path)?;
    let bad = |msg: String| CoreError::format(path, msg);
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (missing \\x93NUMPY magic)".into()));
    }
    let major = bytes[6];
    let (hlen, hstart) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated .npy header".into()));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(bad(format!("unsupported .npy format version {v}"))),
    };
    let header = bytes
        .get(hstart..hstart + hlen)
        .ok_or_else(|| bad("truncated .npy header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text".into()))?;
    let descr = dict_value(header, "descr")
        .ok_or_else(|| bad(format!("no 'descr' in header {header:?}")))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let fortran = dict_value(header, "fortran_order")
        .ok_or_else(|| bad(format!("no 'fortran_order' in header {header:?}")))?
        .starts_with("True");
    let shape_txt = dict_value(header, "shape")
        .ok_or_else(|| bad(format!("no 'shape' in header {header:?}")))?;
    let shape: Vec<usize> = shape_txt
        .trim_start_matches('(')
        .split(')')
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad(format!("bad shape {shape_txt:?}")))?;
    if shape.len() != 2 {
        return Err(bad(format!(
            "expected a 2-D array (frames × classes), got shape {shape:?}"
        )));
    }
    let (rows, cols) = (shape[0], shape[1]);
    let width = match descr {
        "<f4" => 4,
        "<f2" => 2,
        "<f8" => 8,
        other => {
            return Err(bad(format!(
                "unsupported dtype {other:?}: expected little-endian float ('<f4', '<f2' or '<f8')"
            )))
        }
    };
    let body = &bytes[hstart + hlen..];
    // Checked: a shape whose size overflows (2^62 × 4) is an error, never a wrapped small
    // number that would pass the size check.
    let need = rows.checked_mul(cols).and_then(|n| n.checked_mul(width));
    let Some(need) = need.filter(|&b| b == body.len()) else {
        return Err(bad(format!(
            "shape {rows}×{cols} of {descr} needs {} data bytes, the file has {}",
            need.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
            body.len()
        )));
    };
    debug_assert_eq!(need, rows * cols * width);
    let n = rows * cols;
    let mut data: Vec<f32> = match width {
        4 => body
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        2 => body
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => body
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
            .collect(),
    };
    if fortran {
        let mut t = vec![0.0f32; n];
        for r in 0..rows {
            for c in 0..cols {
                t[r * cols + c] = data[c * rows + r];
            }
        }
        data = t;
    }
    let m = ScoreMatrix {
        rows,
        cols,
        data: Values::Owned(data),
    };
    // A scores folder names each utterance by its file's stem (the error also names the file).
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    m.check_finite(&name).map_err(|e| bad(e.to_string()))?;
    Ok(m)
}

fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat1 = format!("'{key}'");
    let pat2 = format!("\"{key}\"");
    let at = header.find(&pat1).or_else(|| header.find(&pat2))? + pat1.len();
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    if rest.starts_with('(') {
        let end = rest.find(')')?;
        Some(&rest[..=end])
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim())
    }
}

/// Writes a matrix as a version-1 `.npy` file of little-endian f32 in C order, atomically.
pub fn write_npy(path: &Path, m: &ScoreMatrix) -> Result<()> {
    write_atomic(path, |w| write_npy_to(w, m))
}

/// Writes a matrix in `.npy` form to any writer.
pub fn write_npy_to(w: &mut dyn Write, m: &ScoreMatrix) -> std::io::Result<()> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
        m.rows, m.cols
    );
    // Pad so that magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    w.write_all(b"\x93NUMPY\x01\x00")?;
    w.write_all(&(header.len() as u16).to_le_bytes())?;
    w.write_all(header.as_bytes())?;
    for v in m.data() {
        w.write_all(&v.to_le_bytes())?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Kaldi archives

/// Streams `(utterance id, matrix)` pairs from a Kaldi archive of float matrices, text or binary
/// (detected per entry), plain or gzip. Each matrix is checked for shape and finite values.
pub struct ArkReader {
    path: std::path::PathBuf,
    reader: Counting,
    done: bool,
    /// The last entry read and where its key started (named when the next key is garbage: the
    /// usual cause is that entry's data being longer or shorter than its header says).
    prev: Option<(String, u64)>,
}

/// A reader that counts the bytes taken from it (entry offsets for an archive index).
struct Counting {
    inner: Box<dyn BufRead>,
    taken: u64,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

impl BufRead for Counting {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.taken += amt as u64;
        self.inner.consume(amt)
    }
}

impl ArkReader {
    /// Opens an archive.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            reader: Counting {
                inner: open_read(path)?,
                taken: 0,
            },
            done: false,
            prev: None,
        })
    }

    /// Reads the one matrix at byte `offset` of an uncompressed file (a Kaldi `scp` entry
    /// `utt file:offset`, or offset 0 of a file holding a single matrix without a key).
    pub fn read_at(path: &Path, offset: u64, utt: &str) -> Result<ScoreMatrix> {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::File::open(path).map_err(|e| CoreError::io(path, e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| CoreError::io(path, e))?;
        let mut r = Self {
            path: path.to_path_buf(),
            reader: Counting {
                inner: Box::new(std::io::BufReader::new(f)),
                taken: 0,
            },
            done: false,
            prev: None,
        };
        r.read_value(utt).map_err(|e| {
            CoreError::format(
                path,
                format!(
                    "utterance {utt} at byte offset {offset} (from the scp): {} (is the offset \
                     the start of the matrix, as `copy-feats ark,scp:` writes it?)",
                    e.without_path()
                ),
            )
        })
    }

    /// The next entry with the byte offset of its matrix (what a Kaldi `scp` stores).
    pub fn next_with_offset(&mut self) -> Result<Option<(String, u64, ScoreMatrix)>> {
        let Some(utt) = self.read_key()? else {
            return Ok(None);
        };
        let at = self.reader.taken;
        let m = self.read_value(&utt)?;
        Ok(Some((utt, at, m)))
    }

    fn err(&self, utt: &str, msg: impl Into<String>) -> CoreError {
        CoreError::format(&self.path, format!("utterance {utt}: {}", msg.into()))
    }

    fn peek(&mut self) -> Result<Option<u8>> {
        let buf = self
            .reader
            .fill_buf()
            .map_err(|e| CoreError::io(&self.path, e))?;
        Ok(buf.first().copied())
    }

    fn next_byte(&mut self) -> Result<Option<u8>> {
        let b = self.peek()?;
        if b.is_some() {
            self.reader.consume(1);
        }
        Ok(b)
    }

    fn read_exact(&mut self, buf: &mut [u8], utt: &str) -> Result<()> {
        self.reader
            .read_exact(buf)
            .map_err(|_| self.err(utt, "truncated binary matrix"))
    }

    fn read_entry(&mut self) -> Result<Option<(String, ScoreMatrix)>> {
        let Some(utt) = self.read_key()? else {
            return Ok(None);
        };
        self.read_value(&utt).map(|m| Some((utt, m)))
    }

    fn read_key(&mut self) -> Result<Option<String>> {
        // Skip whitespace between entries.
        while let Some(b) = self.peek()? {
            if b.is_ascii_whitespace() {
                self.reader.consume(1);
            } else {
                break;
            }
        }
        let at = self.reader.taken;
        let mut key = Vec::new();
        // A key is printable text; anything else means the reader is not at a key: the entry
        // before ran longer or shorter than its header or brackets said.
        let not_a_key = |s: &Self, what: &str| {
            CoreError::format(
                &s.path,
                format!(
                    "byte offset {at}: expected an utterance key, found {what}{}",
                    match &s.prev {
                        Some((u, p)) => format!(
                            " (the entry before, utterance {u} at byte {p}, holds more or fewer \
                             values than its header or brackets say?)"
                        ),
                        None => String::new(),
                    }
                ),
            )
        };
        loop {
            match self.next_byte()? {
                None if key.is_empty() => return Ok(None),
                None => {
                    let k = String::from_utf8_lossy(&key).into_owned();
                    return Err(self.err(&k, "archive ends after the key"));
                }
                Some(b' ') | Some(b'\t') => break,
                Some(b'\n') => {
                    let k = String::from_utf8_lossy(&key).into_owned();
                    if k.chars().any(|c| c.is_control()) || k.parse::<f64>().is_ok() {
                        return Err(not_a_key(self, &format!("{k:?}")));
                    }
                    return Err(self.err(&k, "no matrix after the key"));
                }
                Some(b) if b < 0x20 || b == 0x7f => {
                    return Err(not_a_key(self, &format!("the control byte 0x{b:02x}")));
                }
                Some(b) => key.push(b),
            }
        }
        let utt =
            String::from_utf8(key).map_err(|_| not_a_key(self, "bytes that are not UTF-8"))?;
        if utt.parse::<f64>().is_ok() || utt == "]" || utt == "[" {
            return Err(not_a_key(self, &format!("{utt:?}")));
        }
        self.prev = Some((utt.clone(), at));
        while self.peek()? == Some(b' ') {
            self.reader.consume(1);
        }
        Ok(Some(utt))
    }

    fn read_value(&mut self, utt: &str) -> Result<ScoreMatrix> {
        match self.peek()? {
            Some(0) => {
                self.reader.consume(1);
                if self.next_byte()? != Some(b'B') {
                    return Err(self.err(utt, "expected binary marker \\0B"));
                }
                self.read_binary(utt)
            }
            None => Err(self.err(utt, "no matrix (the file ends here)")),
            _ => self.read_text(utt),
        }
    }

    fn read_binary(&mut self, utt: &str) -> Result<ScoreMatrix> {
        let mut tok = [0u8; 3];
        self.read_exact(&mut tok, utt)?;
        let double = match &tok {
            b"FM " => false,
            b"DM " => true,
            b"CM " | b"CM2" | b"CM3" => return Err(self.err(
                utt,
                "compressed matrices are not supported; write with --compress=false or copy-feats",
            )),
            other => {
                return Err(self.err(
                    utt,
                    format!(
                        "expected a float matrix (FM or DM), got {:?}",
                        String::from_utf8_lossy(other)
                    ),
                ))
            }
        };
        let mut dims = [0usize; 2];
        for d in &mut dims {
            let mut b = [0u8; 5];
            self.read_exact(&mut b, utt)?;
            if b[0] != 4 {
                return Err(self.err(utt, format!("bad integer size byte {}", b[0])));
            }
            let v = i32::from_le_bytes([b[1], b[2], b[3], b[4]]);
            if v < 0 {
                return Err(self.err(utt, format!("negative dimension {v}")));
            }
            *d = v as usize;
        }
        let (rows, cols) = (dims[0], dims[1]);
        let width = if double { 8 } else { 4 };
        // The declared size is checked before anything is allocated, and the data is read as
        // it comes (a header claiming 2^31 × 2^31 values meets the end of the file, not an
        // allocation of that size).
        let need = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(width))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                self.err(
                    utt,
                    format!("matrix header declares {rows}×{cols} values: more than memory holds"),
                )
            })?;
        let mut raw = Vec::with_capacity(need.min(1 << 24));
        let got = (&mut self.reader)
            .take(need as u64)
            .read_to_end(&mut raw)
            .map_err(|e| CoreError::io(&self.path, e))?;
        if got != need {
            return Err(self.err(
                utt,
                format!(
                    "truncated binary matrix: its header declares {rows}×{cols} values \
                     ({need} bytes), the file holds {got} more"
                ),
            ));
        }
        let data: Vec<f32> = if double {
            raw.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
                .collect()
        } else {
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let m = ScoreMatrix {
            rows,
            cols,
            data: Values::Owned(data),
        };
        m.check_finite(utt)
            .map_err(|e| CoreError::format(&self.path, e.to_string()))?;
        Ok(m)
    }

    fn read_text(&mut self, utt: &str) -> Result<ScoreMatrix> {
        let mut line = String::new();
        let mut first = true;
        let mut data: Vec<f32> = Vec::new();
        let mut cols: Option<usize> = None;
        let mut rows = 0usize;
        loop {
            line.clear();
            let n = self
                .reader
                .read_line(&mut line)
                .map_err(|e| CoreError::io(&self.path, e))?;
            if n == 0 {
                return Err(self.err(utt, "archive ends inside a text matrix (no closing ])"));
            }
            let mut toks = line.split_whitespace().peekable();
            if first {
                if toks.next() != Some("[") {
                    return Err(self.err(utt, "expected [ after the key"));
                }
                first = false;
            }
            let mut row: Vec<f32> = Vec::new();
            let mut closed = false;
            for t in toks {
                if t == "]" {
                    closed = true;
                    break;
                }
                let v: f32 = t
                    .parse()
                    .map_err(|_| self.err(utt, format!("row {rows}: {t:?} is not a number")))?;
                row.push(v);
            }
            if !row.is_empty() {
                match cols {
                    None => cols = Some(row.len()),
                    Some(c) if c != row.len() => {
                        return Err(self.err(
                            utt,
                            format!(
                                "ragged matrix: row {rows} has {} values, row 0 has {c}",
                                row.len()
                            ),
                        ))
                    }
                    _ => {}
                }
                data.extend_from_slice(&row);
                rows += 1;
            }
            if closed {
                break;
            }
        }
        let m = ScoreMatrix {
            rows,
            cols: cols.unwrap_or(0),
            data: Values::Owned(data),
        };
        m.check_finite(utt)
            .map_err(|e| CoreError::format(&self.path, e.to_string()))?;
        Ok(m)
    }
}

impl Iterator for ArkReader {
    type Item = Result<(String, ScoreMatrix)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads a whole archive into memory, refusing duplicate utterance ids.
pub fn read_ark(path: &Path) -> Result<Vec<(String, ScoreMatrix)>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in ArkReader::open(path)? {
        let (utt, m) = entry?;
        if !seen.insert(utt.clone()) {
            return Err(CoreError::format(
                path,
                format!("utterance {utt} appears twice"),
            ));
        }
        out.push((utt, m));
    }
    Ok(out)
}

/// Writes `(utterance id, matrix)` pairs as a Kaldi archive, binary (`FM`) or text, atomically.
pub fn write_ark<'a, I>(path: &Path, entries: I, binary: bool) -> Result<()>
where
    I: IntoIterator<Item = (&'a str, &'a ScoreMatrix)>,
{
    write_atomic(path, |w| {
        for (utt, m) in entries {
            write_ark_entry(w, utt, m, binary)?;
        }
        Ok(())
    })
}

/// Writes one archive entry to any writer.
pub fn write_ark_entry(
    w: &mut dyn Write,
    utt: &str,
    m: &ScoreMatrix,
    binary: bool,
) -> std::io::Result<()> {
    if binary {
        write!(w, "{utt} \0BFM ")?;
        w.write_all(&[4])?;
        w.write_all(&(m.rows as i32).to_le_bytes())?;
        w.write_all(&[4])?;
        w.write_all(&(m.cols as i32).to_le_bytes())?;
        for v in m.data() {
            w.write_all(&v.to_le_bytes())?;
        }
    } else {
        write!(w, "{utt}  [")?;
        if m.rows == 0 {
            writeln!(w, " ]")?;
        }
        for t in 0..m.rows {
            w.write_all(b"\n ")?;
            for v in m.row(t) {
                write!(w, " {v}")?;
            }
            if t + 1 == m.rows {
                w.write_all(b" ]\n")?;
            }
        }
    }
    Ok(())
}

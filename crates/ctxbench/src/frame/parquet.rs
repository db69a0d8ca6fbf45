//! Apache Parquet, the part points.parquet needs: one row group, one uncompressed data page (v1)
//! per column, PLAIN values, every column OPTIONAL (definition levels of bit width 1, bit-packed)
//! with the physical types BYTE_ARRAY (UTF8), DOUBLE, INT64 and BOOLEAN. The footer is the
//! format's Thrift `FileMetaData` in the compact protocol. Readers such as pyarrow take it
//! (the Python package's tests read one with pyarrow).

use super::table::{Cells, Frame};

/// Parquet's physical types (parquet.thrift `Type`).
const BOOLEAN: i32 = 0;
const INT64: i32 = 2;
const DOUBLE: i32 = 5;
const BYTE_ARRAY: i32 = 6;
/// `ConvertedType.UTF8`: the bytes are text.
const UTF8: i32 = 0;
/// `FieldRepetitionType.OPTIONAL`.
const OPTIONAL: i32 = 1;
/// `Encoding.PLAIN` and `Encoding.RLE` (the hybrid RLE/bit-packing of levels).
const PLAIN: i32 = 0;
const RLE: i32 = 3;

/// The frame as the bytes of a Parquet file.
///
/// ```
/// use ctxbench::frame::{Cells, Column, Frame};
/// let f = Frame::new(vec![Column { name: "wer".into(), cells: Cells::F64(vec![Some(1.5), None]) }]).unwrap();
/// let b = ctxbench::frame::parquet::write(&f);
/// assert_eq!((&b[..4], &b[b.len() - 4..]), (&b"PAR1"[..], &b"PAR1"[..]));
/// ```
pub fn write(f: &Frame) -> Vec<u8> {
    let mut out = b"PAR1".to_vec();
    let mut chunks = Vec::new();
    for c in f.columns() {
        let page = page_body(&c.cells);
        let mut header = Thrift::default();
        header.i32(1, 0); // type: DATA_PAGE
        header.i32(2, page.len() as i32); // uncompressed_page_size
        header.i32(3, page.len() as i32); // compressed_page_size
        header.begin(5); // data_page_header
        header.i32(1, f.height() as i32); // num_values, nulls included
        header.i32(2, PLAIN);
        header.i32(3, RLE); // definition_level_encoding
        header.i32(4, RLE); // repetition_level_encoding
        header.end();
        header.stop();
        let offset = out.len() as i64;
        out.extend_from_slice(&header.buf);
        out.extend_from_slice(&page);
        let size = out.len() as i64 - offset;
        chunks.push((physical(&c.cells), c.name.as_str(), offset, size));
    }
    let mut m = Thrift::default();
    m.i32(1, 1); // version
    m.list(2, 12, f.columns().len() + 1); // schema: the root, then one leaf per column
    m.binary(4, b"schema");
    m.i32(5, f.columns().len() as i32); // num_children
    m.stop();
    for c in f.columns() {
        m.i32(1, physical(&c.cells));
        m.i32(3, OPTIONAL);
        m.binary(4, c.name.as_bytes());
        if matches!(c.cells, Cells::Str(_)) {
            m.i32(6, UTF8);
        }
        m.stop();
    }
    m.end_list();
    m.i64(3, f.height() as i64); // num_rows
    m.list(4, 12, 1); // row_groups
    m.list(1, 12, chunks.len()); // columns
    let mut total = 0;
    for &(ty, name, offset, size) in &chunks {
        m.i64(2, offset); // file_offset
        m.begin(3); // meta_data
        m.i32(1, ty);
        m.list(2, 5, 2); // encodings
        m.int(PLAIN as i64);
        m.int(RLE as i64);
        m.list(3, 8, 1); // path_in_schema
        m.bytes(name.as_bytes());
        m.i32(4, 0); // codec: UNCOMPRESSED
        m.i64(5, f.height() as i64); // num_values
        m.i64(6, size); // total_uncompressed_size
        m.i64(7, size); // total_compressed_size
        m.i64(9, offset); // data_page_offset
        m.end();
        m.stop();
        total += size;
    }
    m.end_list();
    m.i64(2, total); // total_byte_size
    m.i64(3, f.height() as i64); // num_rows
    m.stop();
    m.end_list();
    m.binary(6, b"ctxbench"); // created_by
    m.stop();
    out.extend_from_slice(&m.buf);
    out.extend_from_slice(&(m.buf.len() as u32).to_le_bytes());
    out.extend_from_slice(b"PAR1");
    out
}

fn physical(c: &Cells) -> i32 {
    match c {
        Cells::Str(_) => BYTE_ARRAY,
        Cells::F64(_) => DOUBLE,
        Cells::I64(_) => INT64,
        Cells::Bool(_) => BOOLEAN,
    }
}

/// A data page v1's body: the definition levels (4-byte length, then one bit-packed run, 1 for
/// a value, 0 for a null), then the present values, PLAIN.
fn page_body(c: &Cells) -> Vec<u8> {
    let n = c.len();
    let levels = bits((0..n).map(|i| !c.is_null(i)));
    let mut run = Vec::new();
    varint(&mut run, ((levels.len() as u64) << 1) | 1); // groups of 8, bit-packed
    run.extend_from_slice(&levels);
    let mut out = (run.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&run);
    match c {
        Cells::Str(v) => {
            for s in v.iter().flatten() {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        Cells::F64(v) => v
            .iter()
            .flatten()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Cells::I64(v) => v
            .iter()
            .flatten()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Cells::Bool(v) => out.extend_from_slice(&bits(v.iter().flatten().copied())),
    }
    out
}

/// Booleans packed eight to a byte, the first in the lowest bit; the last byte zero-padded.
fn bits(v: impl Iterator<Item = bool>) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, b) in v.enumerate() {
        if i % 8 == 0 {
            out.push(0);
        }
        if b {
            *out.last_mut().unwrap() |= 1 << (i % 8);
        }
    }
    out
}

fn varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Thrift's compact protocol, writing only: structs (fields by increasing id), i32, i64,
/// binary and lists. `last` holds each open struct's last field id (field headers are deltas).
#[derive(Default)]
struct Thrift {
    buf: Vec<u8>,
    last: Vec<i16>,
    current: i16,
}

impl Thrift {
    fn field(&mut self, id: i16, ty: u8) {
        let delta = id - self.current;
        if (1..=15).contains(&delta) {
            self.buf.push(((delta as u8) << 4) | ty);
        } else {
            self.buf.push(ty);
            self.int(id as i64);
        }
        self.current = id;
    }
    /// A zigzag varint (i16, i32 and i64 alike).
    fn int(&mut self, x: i64) {
        varint(&mut self.buf, ((x << 1) ^ (x >> 63)) as u64);
    }
    fn i32(&mut self, id: i16, x: i32) {
        self.field(id, 5);
        self.int(x as i64);
    }
    fn i64(&mut self, id: i16, x: i64) {
        self.field(id, 6);
        self.int(x);
    }
    fn bytes(&mut self, b: &[u8]) {
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    fn binary(&mut self, id: i16, b: &[u8]) {
        self.field(id, 8);
        self.bytes(b);
    }
    /// A list field of `n` elements of type `elem` (12 = struct, 5 = i32, 8 = binary); struct
    /// elements follow, each closed by [`Thrift::stop`].
    fn list(&mut self, id: i16, elem: u8, n: usize) {
        self.field(id, 9);
        if n < 15 {
            self.buf.push(((n as u8) << 4) | elem);
        } else {
            self.buf.push(0xf0 | elem);
            varint(&mut self.buf, n as u64);
        }
        if elem == 12 {
            // Struct elements number their fields from 0; `end_list` returns to the parent.
            self.last.push(self.current);
            self.current = 0;
        }
    }
    /// Closes a list of structs.
    fn end_list(&mut self) {
        self.current = self.last.pop().unwrap_or(0);
    }
    /// A struct field: its fields follow until [`Thrift::end`].
    fn begin(&mut self, id: i16) {
        self.field(id, 12);
        self.last.push(self.current);
        self.current = 0;
    }
    fn end(&mut self) {
        self.buf.push(0);
        self.current = self.last.pop().unwrap_or(0);
    }
    /// Ends a struct: a list element (the next element numbers from 0 again) or the message.
    fn stop(&mut self) {
        self.buf.push(0);
        self.current = 0;
    }
}

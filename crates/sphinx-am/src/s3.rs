//! The "s3" header of SphinxTrain's binary parameter files (means, variances, transition
//! matrices): the line `s3`, then `name value` lines up to `endhdr`, then the 32-bit byte-order
//! magic 0x11223344 (SphinxBase's bio.c). A `chksum0` entry means a checksum of the values
//! follows them.

use crate::bytes::{checksum_u32, Cursor};
use crate::error::Result;

/// The byte-order magic after the header.
const MAGIC: u32 = 0x1122_3344;

/// A parsed header: its `name value` pairs in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct S3Header {
    /// The header's entries.
    pub entries: Vec<(String, String)>,
}

impl S3Header {
    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the values are followed by a checksum.
    pub fn has_checksum(&self) -> bool {
        self.get("chksum0").is_some()
    }
}

/// Reads the header and the magic, setting the cursor's byte order from the magic.
pub fn read_header(c: &mut Cursor<'_>) -> Result<S3Header> {
    let first = line(c)?;
    if first != "s3" {
        return Err(c.error(format!(
            "not an s3 parameter file: first line is '{}', expected 's3'",
            first.chars().take(40).collect::<String>()
        )));
    }
    let mut header = S3Header::default();
    loop {
        let l = line(c)?;
        let mut parts = l.split_whitespace();
        let Some(name) = parts.next() else {
            return Err(c.error(format!("empty header line before byte {}", c.pos())));
        };
        if name == "endhdr" {
            break;
        }
        if name.starts_with('#') {
            continue;
        }
        let Some(value) = parts.next() else {
            return Err(c.error(format!("header entry '{name}' has no value")));
        };
        header.entries.push((name.to_string(), value.to_string()));
    }
    let at = c.pos();
    let magic = c.u32("byte-order magic")?;
    if magic == MAGIC.swap_bytes() {
        c.set_swap(true);
    } else if magic != MAGIC {
        return Err(c.error(format!(
            "bad byte-order magic {magic:#010x} at byte {at} (expected {MAGIC:#010x})"
        )));
    }
    Ok(header)
}

/// Reads the checksum after the values (when the header announces one) and checks it against
/// `sum`, then that nothing follows.
pub fn finish(c: &mut Cursor<'_>, header: &S3Header, sum: u32) -> Result<()> {
    if header.has_checksum() {
        let stored = c.u32("checksum")?;
        if stored != sum {
            return Err(c.error(format!(
                "checksum mismatch: the file says {stored:08x}, its values give {sum:08x}"
            )));
        }
    }
    if c.remaining() > 0 {
        return Err(c.error(format!(
            "{} unexpected bytes after the data at byte {}",
            c.remaining(),
            c.pos()
        )));
    }
    Ok(())
}

/// Adds 32-bit integers to a running checksum (the header counts are summed too).
pub fn sum_i32(sum: u32, v: &[i32]) -> u32 {
    v.iter().fold(sum, |s, &x| checksum_u32(s, x as u32))
}

/// The next `\n`-terminated header line.
fn line(c: &mut Cursor<'_>) -> Result<String> {
    let mut out = Vec::new();
    loop {
        if c.remaining() == 0 || out.len() > 16_384 {
            return Err(c.error(format!(
                "truncated header: no 'endhdr' line before byte {}",
                c.pos()
            )));
        }
        let b = c.bytes(1, "header")?[0];
        if b == b'\n' {
            break;
        }
        out.push(b);
    }
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

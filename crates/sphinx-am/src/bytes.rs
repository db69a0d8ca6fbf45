//! Reading a model file: the whole file (or its `.gz`), then a cursor whose every read that runs
//! past the end is a named error with the offset, never a panic.

use crate::error::{Result, SphinxError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The bytes of `path`, or of `path.gz` when `path` is absent (the project ships large model
/// files gzip'd). The returned path is the one read, for error messages.
pub fn read_model_file(path: &Path) -> Result<(PathBuf, Vec<u8>)> {
    let io = |p: &Path, err| SphinxError::Io {
        path: p.to_path_buf(),
        err,
    };
    if path.exists() {
        let data = std::fs::read(path).map_err(|e| io(path, e))?;
        return Ok((path.to_path_buf(), data));
    }
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    let gz = PathBuf::from(gz);
    if !gz.exists() {
        return Err(io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("neither it nor {} exists", gz.display()),
            ),
        ));
    }
    let file = std::fs::File::open(&gz).map_err(|e| io(&gz, e))?;
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut data)
        .map_err(|e| io(&gz, e))?;
    Ok((gz, data))
}

/// A little-endian cursor over a file's bytes (or big-endian after [`Cursor::set_swap`]).
pub struct Cursor<'a> {
    path: &'a Path,
    data: &'a [u8],
    pos: usize,
    swap: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`, which was read from `path`.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Self {
        Self {
            path,
            data,
            pos: 0,
            swap: false,
        }
    }

    /// Reads multi-byte values big-endian from now on (a file written on the other byte order).
    pub fn set_swap(&mut self, swap: bool) {
        self.swap = swap;
    }

    /// The offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to `pos` (an offset inside the file).
    pub fn seek(&mut self, pos: usize, what: &str) -> Result<()> {
        if pos > self.data.len() {
            return Err(self.error(format!(
                "{what} at byte {pos} lies past the end ({} bytes)",
                self.data.len()
            )));
        }
        self.pos = pos;
        Ok(())
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// A format error naming this file.
    pub fn error(&self, what: String) -> SphinxError {
        SphinxError::Format {
            path: self.path.to_path_buf(),
            what,
        }
    }

    /// The next `n` bytes, `what` naming them in the error when the file ends first.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "truncated: {what} needs {n} bytes at byte {}, the file holds {} more",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A 32-bit unsigned integer.
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        let b: [u8; 4] = self.bytes(4, what)?.try_into().expect("4 bytes");
        Ok(if self.swap {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    /// A 32-bit signed integer.
    pub fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(self.u32(what)? as i32)
    }

    /// A 32-bit count, refused when negative or larger than `max` (a garbage header must not
    /// allocate the machine's memory).
    pub fn count(&mut self, what: &str, max: usize) -> Result<usize> {
        let at = self.pos;
        let v = self.i32(what)?;
        if v < 0 || v as usize > max {
            return Err(self.error(format!("{what} at byte {at} is {v}, outside 0..={max}")));
        }
        Ok(v as usize)
    }

    /// A 16-bit signed integer.
    pub fn i16(&mut self, what: &str) -> Result<i16> {
        let b: [u8; 2] = self.bytes(2, what)?.try_into().expect("2 bytes");
        Ok(if self.swap {
            i16::from_be_bytes(b)
        } else {
            i16::from_le_bytes(b)
        })
    }

    /// `n` 16-bit unsigned integers.
    pub fn u16s(&mut self, n: usize, what: &str) -> Result<Vec<u16>> {
        let b = self.bytes(n.checked_mul(2).ok_or_else(|| self.overflow(what))?, what)?;
        Ok(b.chunks_exact(2)
            .map(|c| {
                let c = [c[0], c[1]];
                if self.swap {
                    u16::from_be_bytes(c)
                } else {
                    u16::from_le_bytes(c)
                }
            })
            .collect())
    }

    /// `n` 32-bit floats, and their bit patterns' running s3 checksum from `sum`.
    pub fn f32s(&mut self, n: usize, what: &str, sum: &mut u32) -> Result<Vec<f32>> {
        let b = self.bytes(n.checked_mul(4).ok_or_else(|| self.overflow(what))?, what)?;
        Ok(b.chunks_exact(4)
            .map(|c| {
                let c = [c[0], c[1], c[2], c[3]];
                let bits = if self.swap {
                    u32::from_be_bytes(c)
                } else {
                    u32::from_le_bytes(c)
                };
                *sum = checksum_u32(*sum, bits);
                f32::from_bits(bits)
            })
            .collect())
    }

    /// A NUL-terminated string.
    pub fn cstr(&mut self, what: &str) -> Result<String> {
        let rest = &self.data[self.pos..];
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            self.error(format!(
                "truncated: {what} at byte {} has no terminating NUL",
                self.pos
            ))
        })?;
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }

    fn overflow(&self, what: &str) -> SphinxError {
        self.error(format!("{what}: size overflows"))
    }
}

/// One step of Sphinx's checksum over 32-bit values (`chksum_accum` in SphinxBase's bio.c):
/// rotate left by 20, add.
pub fn checksum_u32(sum: u32, v: u32) -> u32 {
    sum.rotate_left(20).wrapping_add(v)
}

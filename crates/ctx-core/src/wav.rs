//! Opening a WAV file as RIFF defines it. `hound` skips a chunk it does not know by its declared
//! size and forgets the pad byte RIFF adds after an odd-sized chunk, so a valid file with, say,
//! an odd-sized `LIST` chunk before its data is refused ("Failed to read enough bytes") where
//! sox and pocketsphinx read it. [`open`] walks the chunks itself, pad bytes
//! included, and hands `hound` the `fmt ` and `data` chunks alone.

use std::io::Cursor;
use std::path::Path;

/// A WAV reader over the file's bytes in memory.
pub type Reader = hound::WavReader<Cursor<Vec<u8>>>;

/// Opens `path`: read as it is when `hound` reads it, otherwise rebuilt from its `fmt ` and
/// `data` chunks with RIFF's padding respected. Errors are `hound`'s, or an I/O error.
///
/// ```
/// // RIFF, then a 3-byte LIST chunk and its pad byte, then fmt and 2 samples of data.
/// let mut w: Vec<u8> = b"RIFF\0\0\0\0WAVE".to_vec();
/// w.extend(b"LIST\x03\0\0\0abc\0");
/// w.extend(b"fmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0\0\x7d\0\0\x02\0\x10\0");
/// w.extend(b"data\x04\0\0\0\x01\0\xff\xff");
/// let n = (w.len() - 8) as u32;
/// w[4..8].copy_from_slice(&n.to_le_bytes());
/// let path = std::env::temp_dir().join(format!("ctx-core-wav-doc-{}.wav", std::process::id()));
/// std::fs::write(&path, &w).unwrap();
/// let mut r = ctx_core::wav::open(&path).unwrap();
/// let s: Vec<i16> = r.samples::<i16>().map(|x| x.unwrap()).collect();
/// assert_eq!(s, [1, -1]);
/// std::fs::remove_file(&path).unwrap();
/// ```
pub fn open(path: &Path) -> Result<Reader, hound::Error> {
    let bytes = std::fs::read(path)?;
    match hound::WavReader::new(Cursor::new(bytes.clone())) {
        Ok(r) => Ok(r),
        Err(e) => match canonical(&bytes) {
            Some(c) => hound::WavReader::new(Cursor::new(c)),
            None => Err(e),
        },
    }
}

/// The file's `fmt ` and `data` chunks in a fresh RIFF/WAVE container, or `None` when its
/// chunks do not parse (then `hound`'s own error stands).
fn canonical(b: &[u8]) -> Option<Vec<u8>> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return None;
    }
    let (mut fmt, mut data): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let mut at = 12usize;
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let size = u32::from_le_bytes(b[at + 4..at + 8].try_into().ok()?) as usize;
        let body = b.get(at + 8..at + 8 + size)?;
        match id {
            b"fmt " => fmt = Some(body),
            b"data" => data = Some(body),
            _ => {}
        }
        // Chunks start on even offsets: an odd-sized chunk is followed by a pad byte.
        at += 8 + size + (size & 1);
    }
    let (fmt, data) = (fmt?, data?);
    let mut out = Vec::with_capacity(fmt.len() + data.len() + 28);
    out.extend(b"RIFF");
    let riff = 4 + 8 + fmt.len() + (fmt.len() & 1) + 8 + data.len() + (data.len() & 1);
    out.extend((riff as u32).to_le_bytes());
    out.extend(b"WAVE");
    for (id, body) in [(b"fmt ", fmt), (b"data", data)] {
        out.extend(id);
        out.extend((body.len() as u32).to_le_bytes());
        out.extend(body);
        if body.len() & 1 == 1 {
            out.push(0);
        }
    }
    Some(out)
}

//! File helpers shared by the readers: transparent gzip on input and output, and atomic writes.
//!
//! Any reader in this crate accepts a gzip-compressed file (detected by its magic bytes, whatever its
//! name), so compact derived data can be committed compressed. Writers compress when the path ends in
//! `.gz`, and write through a temporary file renamed into place, so a crash never leaves half a file.

use crate::error::{CoreError, Result};
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Opens `path` for buffered reading, decompressing it when it starts with the gzip magic bytes.
pub fn open_read(path: &Path) -> Result<Box<dyn BufRead>> {
    let file = File::open(path).map_err(|e| CoreError::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(|e| CoreError::io(path, e))?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// Reads a whole (possibly gzipped) file into bytes.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    open_read(path)?
        .read_to_end(&mut out)
        .map_err(|e| CoreError::io(path, e))?;
    Ok(out)
}

/// Reads a whole (possibly gzipped) UTF-8 text file.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|e| {
        CoreError::format(
            path,
            format!("not valid UTF-8 (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Finds `path`, or `path` with `.gz` appended, whichever exists first.
pub fn find_maybe_gz(path: &Path) -> Option<PathBuf> {
    if path.exists() {
        return Some(path.to_path_buf());
    }
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    let gz = PathBuf::from(gz);
    gz.exists().then_some(gz)
}

/// The file name of `path` with a trailing `.gz` removed (for matching files by name).
pub fn name_without_gz(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".gz").map(str::to_owned).unwrap_or(name)
}

/// Line `i` (0-based) of a text file without the UTF-8 byte-order mark an editor may have put at
/// the start of the file (else it becomes part of the first id).
///
/// ```
/// assert_eq!(ctx_core::io::without_bom(0, "\u{feff}utt1 a b"), "utt1 a b");
/// assert_eq!(ctx_core::io::without_bom(1, "\u{feff}x"), "\u{feff}x");
/// ```
pub fn without_bom(i: usize, line: &str) -> &str {
    if i == 0 {
        line.strip_prefix('\u{feff}').unwrap_or(line)
    } else {
        line
    }
}

/// Reads a Kaldi-style keyed table: per non-blank line an id, then the rest of the line (after a
/// tab, or failing that the first run of whitespace). Returns `(line number, id, rest)`; a repeated
/// id is an error naming its line.
pub fn read_keyed_lines(path: &Path) -> Result<Vec<(usize, String, String)>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in open_read(path)?.lines().enumerate() {
        let line = line.map_err(|e| CoreError::io(path, e))?;
        let line = without_bom(i, line.trim_end_matches(['\r', '\n']));
        if line.trim().is_empty() {
            continue;
        }
        let (id, rest) = match line.split_once('\t') {
            Some((u, r)) => (u.trim(), r),
            None => match line.trim_start().split_once(char::is_whitespace) {
                Some((u, r)) => (u, r),
                None => (line.trim(), ""),
            },
        };
        if !seen.insert(id.to_owned()) {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("utterance {id} listed twice"),
            ));
        }
        out.push((i + 1, id.to_owned(), rest.to_owned()));
    }
    Ok(out)
}

/// Writes a file atomically: `write` fills a temporary sibling file, which is renamed onto `path`
/// only once everything was written and flushed. Gzip-compresses when `path` ends with `.gz`.
pub fn write_atomic<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut dyn Write) -> std::io::Result<()>,
{
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| CoreError::Invalid(format!("{}: not a file path", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| -> std::io::Result<()> {
        let file = File::create(&tmp)?;
        let mut buf = BufWriter::with_capacity(1 << 16, file);
        if path.extension().is_some_and(|e| e == "gz") {
            let mut gz = GzEncoder::new(&mut buf, flate2::Compression::default());
            write(&mut gz)?;
            gz.finish()?;
        } else {
            write(&mut buf)?;
        }
        buf.flush()?;
        buf.get_ref().sync_all()?;
        Ok(())
    })();
    match result {
        Ok(()) => std::fs::rename(&tmp, path).map_err(|e| CoreError::io(path, e)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(CoreError::io(path, e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trip_is_transparent() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.txt");
        let gz = dir.path().join("a.txt.gz");
        for p in [&plain, &gz] {
            write_atomic(p, |w| w.write_all(b"hello\nworld\n")).unwrap();
        }
        let raw = std::fs::read(&gz).unwrap();
        assert_eq!(&raw[..2], &[0x1f, 0x8b], "the .gz file is compressed");
        assert_eq!(read_text(&plain).unwrap(), "hello\nworld\n");
        assert_eq!(read_text(&gz).unwrap(), "hello\nworld\n");
        assert_eq!(find_maybe_gz(&dir.path().join("a.txt")).unwrap(), plain);
        std::fs::remove_file(&plain).unwrap();
        assert_eq!(find_maybe_gz(&dir.path().join("a.txt")).unwrap(), gz);
        assert_eq!(name_without_gz(&gz), "a.txt");
    }

    #[test]
    fn failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        let err = write_atomic(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("boom"))
        });
        assert!(err.is_err());
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

//! Score tables: a researcher's per-utterance score matrices, found by utterance id, from a Kaldi
//! archive (`.ark`, text or binary), a Kaldi script file (`.scp`, `utt file:offset`), or a folder
//! of NumPy files named `<utt>.npy`.
//!
//! Matrices are read when asked for, not all at once: an uncompressed archive is indexed once
//! (key → byte offset, as an `scp` would hold) and each matrix is read back by seeking. A gzipped
//! archive cannot be seeked and is held in memory. Duplicate ids are an error naming the file.

use crate::error::{CoreError, Result};
use crate::scores::{read_npy, ArkReader, ScoreMatrix};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

enum Entry {
    Npy(PathBuf),
    Ark(PathBuf, u64, Option<Ranges>),
    Loaded(ScoreMatrix),
}

/// Kaldi's `[r1:r2]` or `[r1:r2,c1:c2]` after an scp location (`ReadScriptFile`): the rows and
/// columns kept, inclusive, first to last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ranges {
    rows: (usize, usize),
    cols: Option<(usize, usize)>,
}

impl Ranges {
    /// Parses the text between the brackets.
    fn parse(s: &str) -> std::result::Result<Self, String> {
        let pair = |p: &str| -> std::result::Result<(usize, usize), String> {
            let (a, b) = p
                .split_once(':')
                .ok_or_else(|| format!("range {p:?} is not first:last"))?;
            let num = |x: &str| {
                x.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("range {p:?}: {x:?} is not a whole number ≥ 0"))
            };
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(format!("range {p:?}: the last index is before the first"));
            }
            Ok((a, b))
        };
        match s.split_once(',') {
            None => Ok(Self {
                rows: pair(s)?,
                cols: None,
            }),
            Some((r, c)) => Ok(Self {
                rows: pair(r)?,
                cols: Some(pair(c)?),
            }),
        }
    }

    /// The sub-matrix; a range past the matrix is an error naming the utterance.
    fn apply(&self, m: &ScoreMatrix, utt: &str, path: &Path) -> Result<ScoreMatrix> {
        let (r1, r2) = self.rows;
        let (c1, c2) = self.cols.unwrap_or((0, m.cols().saturating_sub(1)));
        if r2 >= m.rows() || c2 >= m.cols() {
            return Err(CoreError::format(
                path,
                format!(
                    "utterance {utt}: the scp's range [{r1}:{r2},{c1}:{c2}] is past its {}×{} matrix",
                    m.rows(),
                    m.cols()
                ),
            ));
        }
        let mut data = Vec::with_capacity((r2 - r1 + 1) * (c2 - c1 + 1));
        for t in r1..=r2 {
            data.extend_from_slice(&m.row(t)[c1..=c2]);
        }
        ScoreMatrix::new(r2 - r1 + 1, c2 - c1 + 1, data)
    }
}

/// Per-utterance score matrices from files.
pub struct ScoreTable {
    path: PathBuf,
    order: Vec<String>,
    entries: HashMap<String, Entry>,
}

fn is_gzip(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| CoreError::io(path, e))?;
    let mut b = [0u8; 2];
    let n = f.read(&mut b).map_err(|e| CoreError::io(path, e))?;
    Ok(n == 2 && b == [0x1f, 0x8b])
}

impl ScoreTable {
    /// Opens a table: a folder of `.npy` files, an `.scp`, or an archive (anything else).
    pub fn open(path: &Path) -> Result<Self> {
        let mut t = Self {
            path: path.to_path_buf(),
            order: Vec::new(),
            entries: HashMap::new(),
        };
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| CoreError::io(path, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "npy"))
                .collect();
            files.sort();
            for f in files {
                let id = f
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .ok_or_else(|| CoreError::format(&f, "file name is not UTF-8"))?
                    .to_string();
                t.add(id, Entry::Npy(f), None)?;
            }
            if t.order.is_empty() {
                return Err(CoreError::format(
                    path,
                    "no <utterance>.npy files in this folder",
                ));
            }
        } else if path.extension().is_some_and(|x| x == "scp") {
            let text = crate::io::read_text(path)?;
            let base = path.parent().unwrap_or(Path::new("."));
            for (i, line) in text.lines().enumerate() {
                let mut f = line.split_whitespace();
                let (Some(utt), Some(loc), None) = (f.next(), f.next(), f.next()) else {
                    if line.trim().is_empty() {
                        continue;
                    }
                    return Err(CoreError::parse(
                        path,
                        i + 1,
                        format!("expected `utterance file[:offset]`, got {line:?}"),
                    ));
                };
                let bad = |msg: String| CoreError::parse(path, i + 1, msg);
                // Kaldi's row and column ranges: `file:offset[r1:r2]`, `[r1:r2,c1:c2]`.
                let (loc, ranges) = match loc.strip_suffix(']').and_then(|l| l.rsplit_once('[')) {
                    Some((l, r)) => (
                        l,
                        Some(Ranges::parse(r).map_err(|e| bad(format!("{loc}: {e}")))?),
                    ),
                    None => (loc, None),
                };
                let (file, offset) = match loc.rsplit_once(':') {
                    Some((f, o)) if o.bytes().all(|b| b.is_ascii_digit()) && !o.is_empty() => {
                        (f, o.parse::<u64>().ok())
                    }
                    Some((_, o))
                        if o.starts_with('-')
                            && o[1..].bytes().all(|b| b.is_ascii_digit())
                            && o.len() > 1 =>
                    {
                        return Err(bad(format!("{loc}: byte offset {o} is negative")));
                    }
                    _ => (loc, None),
                };
                let mut fp = PathBuf::from(file);
                if fp.is_relative() && !fp.exists() {
                    fp = base.join(file);
                }
                let entry = if fp.extension().is_some_and(|x| x == "npy") {
                    if ranges.is_some() {
                        return Err(bad(format!(
                            "{loc}: a row/column range on an .npy file (Kaldi's ranges are for \
                             archive entries)"
                        )));
                    }
                    Entry::Npy(fp)
                } else {
                    Entry::Ark(fp, offset.unwrap_or(0), ranges)
                };
                t.add(utt.to_string(), entry, Some(i + 1))?;
            }
        } else if is_gzip(path)? {
            let mut r = ArkReader::open(path)?;
            while let Some((utt, _, m)) = r.next_with_offset()? {
                t.add(utt, Entry::Loaded(m), None)?;
            }
        } else {
            let mut r = ArkReader::open(path)?;
            while let Some((utt, at, _)) = r.next_with_offset()? {
                t.add(utt, Entry::Ark(path.to_path_buf(), at, None), None)?;
            }
        }
        if t.order.is_empty() {
            return Err(CoreError::format(path, "no score matrices"));
        }
        Ok(t)
    }

    fn add(&mut self, id: String, e: Entry, line: Option<usize>) -> Result<()> {
        if self.entries.contains_key(&id) {
            let msg = format!("utterance {id} appears twice");
            return Err(match line {
                Some(l) => CoreError::parse(&self.path, l, msg),
                None => CoreError::format(&self.path, msg),
            });
        }
        self.order.push(id.clone());
        self.entries.insert(id, e);
        Ok(())
    }

    /// Where the table was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Utterance ids in file order.
    pub fn ids(&self) -> &[String] {
        &self.order
    }

    /// Whether the table has scores for `utt`.
    pub fn contains(&self, utt: &str) -> bool {
        self.entries.contains_key(utt)
    }

    /// The score matrix of `utt` (`None` when the table has none), checked for finite values.
    pub fn get(&self, utt: &str) -> Result<Option<ScoreMatrix>> {
        let Some(e) = self.entries.get(utt) else {
            return Ok(None);
        };
        let m = match e {
            Entry::Npy(p) => {
                let m = read_npy(p)?;
                m.check_finite(utt)?;
                m
            }
            Entry::Ark(p, at, None) => ArkReader::read_at(p, *at, utt)?,
            Entry::Ark(p, at, Some(r)) => {
                r.apply(&ArkReader::read_at(p, *at, utt)?, utt, &self.path)?
            }
            Entry::Loaded(m) => m.clone(),
        };
        Ok(Some(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scores::{write_ark, write_npy};

    fn mat(rows: usize, cols: usize, seed: f32) -> ScoreMatrix {
        let data = (0..rows * cols).map(|i| seed + i as f32 * 0.25).collect();
        ScoreMatrix::new(rows, cols, data).unwrap()
    }

    #[test]
    fn ark_scp_npy_and_gzip_give_the_same_matrices() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ms = [
            ("u1", mat(3, 4, 0.5)),
            ("u2", mat(5, 4, -1.0)),
            ("u3", mat(1, 4, 2.0)),
        ];
        let entries = || ms.iter().map(|(u, m)| (*u, m));
        write_ark(&d.join("b.ark"), entries(), true).unwrap();
        write_ark(&d.join("t.ark"), entries(), false).unwrap();
        write_ark(&d.join("g.ark.gz"), entries(), true).unwrap();
        std::fs::create_dir_all(d.join("npy")).unwrap();
        for (u, m) in &ms {
            write_npy(&d.join("npy").join(format!("{u}.npy")), m).unwrap();
        }
        // An scp with the offsets an index finds, one relative path, one absolute.
        let mut r = ArkReader::open(&d.join("b.ark")).unwrap();
        let mut scp = String::new();
        while let Some((u, at, _)) = r.next_with_offset().unwrap() {
            if u == "u2" {
                scp.push_str(&format!("{u} {}:{at}\n", d.join("b.ark").display()));
            } else {
                scp.push_str(&format!("{u} b.ark:{at}\n"));
            }
        }
        std::fs::write(d.join("s.scp"), scp).unwrap();
        for src in ["b.ark", "t.ark", "g.ark.gz", "npy", "s.scp"] {
            let t = ScoreTable::open(&d.join(src)).unwrap();
            assert_eq!(t.ids(), &["u1", "u2", "u3"], "{src}");
            for (u, m) in &ms {
                assert_eq!(&t.get(u).unwrap().unwrap(), m, "{src} {u}");
            }
            assert!(t.get("nope").unwrap().is_none());
        }
    }

    /// Kaldi's scp ranges, not part of the file name: `[r1:r2]` keeps rows r1..=r2,
    /// `[r1:r2,c1:c2]` columns too; a range past the matrix, a reversed one and a negative
    /// offset are errors naming the line or the utterance.
    #[test]
    fn scp_row_and_column_ranges_follow_kaldi() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let m = mat(5, 4, 1.0);
        write_ark(&d.join("b.ark"), [("u", &m)], true).unwrap();
        let at = ArkReader::open(&d.join("b.ark"))
            .unwrap()
            .next_with_offset()
            .unwrap()
            .unwrap()
            .1;
        std::fs::write(
            d.join("s.scp"),
            format!("rows b.ark:{at}[1:3]\nboth b.ark:{at}[0:1,2:3]\npast b.ark:{at}[2:5]\n"),
        )
        .unwrap();
        let t = ScoreTable::open(&d.join("s.scp")).unwrap();
        let rows = t.get("rows").unwrap().unwrap();
        assert_eq!((rows.rows(), rows.cols()), (3, 4));
        assert_eq!(rows.row(0), m.row(1));
        assert_eq!(rows.row(2), m.row(3));
        let both = t.get("both").unwrap().unwrap();
        assert_eq!((both.rows(), both.cols()), (2, 2));
        assert_eq!(both.row(1), &m.row(1)[2..4]);
        let e = t.get("past").unwrap_err().to_string();
        assert!(
            e.contains("utterance past") && e.contains("[2:5,0:3]") && e.contains("5×4"),
            "{e}"
        );
        for (line, want) in [
            (format!("u b.ark:{at}[3:1]\n"), "before the first"),
            (format!("u b.ark:{at}[a:2]\n"), "not a whole number"),
            ("u b.ark:-40\n".to_string(), "byte offset -40 is negative"),
        ] {
            std::fs::write(d.join("bad.scp"), line).unwrap();
            let e = ScoreTable::open(&d.join("bad.scp"))
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("bad.scp") && e.contains(":1") && e.contains(want),
                "{e}"
            );
        }
    }

    #[test]
    fn bad_tables_name_the_file_and_utterance() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let m = mat(2, 3, 0.0);
        write_ark(&d.join("a.ark"), [("u1", &m), ("u2", &m)], true).unwrap();
        let b = std::fs::read(d.join("a.ark")).unwrap();
        std::fs::write(d.join("cut.ark"), &b[..b.len() - 5]).unwrap();
        let e = ScoreTable::open(&d.join("cut.ark"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("cut.ark") && e.contains("u2") && e.contains("truncated"),
            "{e}"
        );
        write_ark(&d.join("dup.ark"), [("u1", &m), ("u1", &m)], false).unwrap();
        let e = ScoreTable::open(&d.join("dup.ark"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("u1 appears twice"), "{e}");
        std::fs::write(d.join("x.scp"), "u1\n").unwrap();
        let e = ScoreTable::open(&d.join("x.scp"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("x.scp:1"), "{e}");
    }
}

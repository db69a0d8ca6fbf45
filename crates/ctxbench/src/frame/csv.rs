//! CSV as points.csv has it (RFC 4180): a header line, `,` between fields, `\n` after each row;
//! a field is quoted (quotes doubled) when it holds `,`, `"`, a line break, or is an empty
//! string, so that an empty string (`""`) and a missing value (nothing) stay apart. Floats are
//! written shortest-round-trip with `.0` on whole numbers; `true`/`false` for booleans.

use super::table::{Cells, Frame};

/// The frame as CSV text.
pub fn write(f: &Frame) -> String {
    let mut out = String::new();
    let names: Vec<String> = f.columns().iter().map(|c| quote(&c.name)).collect();
    out.push_str(&names.join(","));
    out.push('\n');
    for i in 0..f.height() {
        for (j, c) in f.columns().iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            match &c.cells {
                Cells::Str(v) => {
                    if let Some(s) = &v[i] {
                        out.push_str(&quote(s));
                    }
                }
                Cells::F64(v) => {
                    if let Some(x) = v[i] {
                        out.push_str(&float(x));
                    }
                }
                Cells::I64(v) => {
                    if let Some(x) = v[i] {
                        out.push_str(&x.to_string());
                    }
                }
                Cells::Bool(v) => {
                    if let Some(x) = v[i] {
                        out.push_str(if x { "true" } else { "false" });
                    }
                }
            }
        }
        out.push('\n');
    }
    out
}

/// A float as points.csv writes it: `14.0`, `2.5`, `NaN`, `inf`.
pub fn float(x: f64) -> String {
    let s = x.to_string();
    if x.is_finite() && !s.contains(['.', 'e']) {
        s + ".0"
    } else {
        s
    }
}

fn quote(s: &str) -> String {
    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV text that is not well formed: where, and what.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct CsvError {
    /// The 1-based line the problem is on.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// Header and rows of CSV text, every field as text.
pub type Table = (Vec<String>, Vec<Vec<Option<String>>>);

/// Parses CSV text: an unquoted empty field is `None`, a quoted one `Some("")`; every row must
/// have the header's number of fields.
///
/// ```
/// let (h, rows) = ctxbench::frame::csv::read("a,b\n\"x, \"\"y\"\"\",\n").unwrap();
/// assert_eq!(h, ["a", "b"]);
/// assert_eq!(rows, [vec![Some("x, \"y\"".to_string()), None]]);
/// ```
pub fn read(text: &str) -> Result<Table, CsvError> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut rec: Vec<Option<String>> = Vec::new();
        loop {
            let mut field = String::new();
            let mut quoted = false;
            if chars.peek() == Some(&'"') {
                quoted = true;
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            line += usize::from(c == '\n');
                            field.push(c);
                        }
                        None => {
                            return Err(CsvError {
                                line: start,
                                what: "a quoted field is not closed".into(),
                            })
                        }
                    }
                }
            }
            while let Some(&c) = chars.peek() {
                if c == ',' || c == '\n' || c == '\r' {
                    break;
                }
                if quoted {
                    return Err(CsvError {
                        line,
                        what: format!("'{c}' after a quoted field"),
                    });
                }
                field.push(c);
                chars.next();
            }
            rec.push((quoted || !field.is_empty()).then_some(field));
            match chars.next() {
                Some(',') => continue,
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                }
                _ => {}
            }
            line += 1;
            break;
        }
        records.push((start, rec));
    }
    let mut it = records.into_iter();
    let Some((_, header)) = it.next() else {
        return Err(CsvError {
            line: 1,
            what: "no header".into(),
        });
    };
    let header: Vec<String> = header.into_iter().map(Option::unwrap_or_default).collect();
    let mut rows = Vec::new();
    for (l, r) in it {
        if r.len() != header.len() {
            return Err(CsvError {
                line: l,
                what: format!("{} fields where the header has {}", r.len(), header.len()),
            });
        }
        rows.push(r);
    }
    Ok((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::table::Column;

    #[test]
    fn written_text_reads_back_cell_for_cell() {
        let f = Frame::new(vec![
            Column {
                name: "s".into(),
                cells: Cells::Str(vec![
                    Some("".into()),
                    None,
                    Some("a\"b,\nc".into()),
                    Some("plain".into()),
                ]),
            },
            Column {
                name: "x".into(),
                cells: Cells::F64(vec![Some(15.0), Some(-0.0001), None, Some(1e21)]),
            },
            Column {
                name: "n".into(),
                cells: Cells::I64(vec![Some(-3), None, Some(7000), Some(0)]),
            },
            Column {
                name: "b".into(),
                cells: Cells::Bool(vec![Some(true), Some(false), None, Some(true)]),
            },
        ])
        .unwrap();
        let text = write(&f);
        assert!(text.starts_with("s,x,n,b\n\"\",15.0,-3,true\n,-0.0001,,false\n"));
        let (h, rows) = read(&text).unwrap();
        assert_eq!(h, ["s", "x", "n", "b"]);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0][0].as_deref(), Some(""));
        assert_eq!(rows[1][0], None);
        assert_eq!(rows[2][0].as_deref(), Some("a\"b,\nc"));
        assert_eq!(rows[3][1].as_deref(), Some("1000000000000000000000.0"));
        assert_eq!(rows[2][1], None);
    }

    /// Every committed points.csv of `ctxbench run` (written by polars before this writer) reads
    /// and writes back byte for byte, and each of its decimals is what [`float`] writes for its
    /// value. (Scripts' tables of the same name, such as chen18-table2's, are read only.)
    #[test]
    fn committed_points_files_round_trip() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results");
        let mut files = 0;
        let mut decimals = 0;
        for e in std::fs::read_dir(&root).unwrap().flatten() {
            let p = e.path().join("points.csv");
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let (h, rows) = read(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            if h[0] != "experiment" {
                continue;
            }
            let cols = (0..h.len())
                .map(|j| Column {
                    name: h[j].clone(),
                    cells: Cells::Str(rows.iter().map(|r| r[j].clone()).collect()),
                })
                .collect();
            assert_eq!(write(&Frame::new(cols).unwrap()), text, "{}", p.display());
            for cell in rows.iter().flatten().flatten() {
                if let (true, Ok(x)) = (cell.contains('.'), cell.parse::<f64>()) {
                    assert_eq!(&float(x), cell, "{}", p.display());
                    decimals += 1;
                }
            }
            files += 1;
        }
        assert!(
            files > 30 && decimals > 10_000,
            "{files} files, {decimals} decimals"
        );
    }

    #[test]
    fn ragged_and_unclosed_rows_name_their_line() {
        let e = read("a,b\n1,2\n3\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3: 1 fields where the header has 2");
        let e = read("a\n\"x\ny\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2: a quoted field is not closed");
        let e = read("a\n\"x\"y\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2: 'y' after a quoted field");
    }
}

//! OpenFst text symbol tables (`words.txt`, `phones.txt`, `tokens.txt`): one `symbol id` pair per line.

use crate::error::{CoreError, Result};
use crate::io::{open_read, write_atomic};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::Path;

/// A bidirectional map between symbols and integer ids, as OpenFst and Kaldi use them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolTable {
    by_symbol: HashMap<String, u32>,
    by_id: BTreeMap<u32, String>,
}

impl SymbolTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// A table with `<eps>` at id 0, the OpenFst convention for graph symbol tables.
    pub fn with_epsilon() -> Self {
        let mut t = Self::new();
        t.insert("<eps>", 0).expect("fresh table");
        t
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when the table holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Adds `symbol` with the next free id (one past the largest) unless it is present; returns its id.
    pub fn add(&mut self, symbol: &str) -> u32 {
        if let Some(&id) = self.by_symbol.get(symbol) {
            return id;
        }
        let id = self.by_id.keys().next_back().map_or(0, |&m| m + 1);
        self.by_symbol.insert(symbol.to_owned(), id);
        self.by_id.insert(id, symbol.to_owned());
        id
    }

    /// Adds `symbol` with an explicit id; refuses a symbol or id that is already taken.
    pub fn insert(&mut self, symbol: &str, id: u32) -> Result<()> {
        if let Some(&old) = self.by_symbol.get(symbol) {
            return Err(CoreError::Invalid(format!(
                "symbol {symbol:?} already has id {old}"
            )));
        }
        if let Some(old) = self.by_id.get(&id) {
            return Err(CoreError::Invalid(format!(
                "id {id} already belongs to symbol {old:?}"
            )));
        }
        self.by_symbol.insert(symbol.to_owned(), id);
        self.by_id.insert(id, symbol.to_owned());
        Ok(())
    }

    /// The id of `symbol`, if present.
    pub fn id(&self, symbol: &str) -> Option<u32> {
        self.by_symbol.get(symbol).copied()
    }

    /// The symbol with `id`, if present.
    pub fn symbol(&self, id: u32) -> Option<&str> {
        self.by_id.get(&id).map(String::as_str)
    }

    /// True when `symbol` is in the table.
    pub fn contains(&self, symbol: &str) -> bool {
        self.by_symbol.contains_key(symbol)
    }

    /// The largest id, if any.
    pub fn max_id(&self) -> Option<u32> {
        self.by_id.keys().next_back().copied()
    }

    /// `(id, symbol)` pairs in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> {
        self.by_id.iter().map(|(&id, s)| (id, s.as_str()))
    }

    /// Reads an OpenFst text symbol table (whitespace-separated `symbol id`, blank lines ignored).
    pub fn read(path: &Path) -> Result<Self> {
        let mut table = Self::new();
        for (i, line) in open_read(path)?.lines().enumerate() {
            let line = line.map_err(|e| CoreError::io(path, e))?;
            let lineno = i + 1;
            let mut fields = line.split_whitespace();
            let (sym, id) = match (fields.next(), fields.next(), fields.next()) {
                (None, _, _) => continue,
                (Some(s), Some(id), None) => (s, id),
                _ => {
                    return Err(CoreError::parse(
                        path,
                        lineno,
                        format!("expected `symbol id`, got {line:?}"),
                    ))
                }
            };
            let id: u32 = id.parse().map_err(|_| {
                CoreError::parse(
                    path,
                    lineno,
                    format!("id {id:?} is not a non-negative integer"),
                )
            })?;
            table
                .insert(sym, id)
                .map_err(|e| CoreError::parse(path, lineno, e.to_string()))?;
        }
        Ok(table)
    }

    /// Writes the table in OpenFst text form (`symbol<TAB>id`, increasing id), atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, |w| self.write_to(w))
    }

    /// Writes the table in OpenFst text form to any writer.
    pub fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()> {
        for (id, sym) in self.iter() {
            writeln!(w, "{sym}\t{id}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_ids_and_order() {
        let mut t = SymbolTable::with_epsilon();
        assert_eq!(t.add("hello"), 1);
        assert_eq!(t.add("world"), 2);
        assert_eq!(t.add("hello"), 1);
        t.insert("#0", 10).unwrap();
        assert_eq!(t.add("after"), 11);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("words.txt");
        t.write(&p).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "<eps>\t0\nhello\t1\nworld\t2\n#0\t10\nafter\t11\n"
        );
        let back = SymbolTable::read(&p).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.symbol(10), Some("#0"));
        assert_eq!(back.id("world"), Some(2));
        assert_eq!(back.max_id(), Some(11));
    }

    #[test]
    fn bad_lines_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.txt");
        std::fs::write(&p, "<eps> 0\na 1\nb x\n").unwrap();
        let e = SymbolTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("bad.txt:3"), "{e}");
        std::fs::write(&p, "<eps> 0\na 1\nb 1\n").unwrap();
        let e = SymbolTable::read(&p).unwrap_err().to_string();
        assert!(e.contains(":3") && e.contains("already belongs"), "{e}");
        std::fs::write(&p, "a 1 2\n").unwrap();
        assert!(SymbolTable::read(&p)
            .unwrap_err()
            .to_string()
            .contains(":1"));
    }
}

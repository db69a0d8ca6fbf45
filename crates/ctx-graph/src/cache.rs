//! An on-disk cache of compiled graphs keyed by a hash of everything they were built from.
//!
//! A cache entry is a folder `<dir>/<kind>-<key>/` holding `graph.fst` (OpenFst binary, readable by
//! OpenFst, pynini and kaldifst), `words.txt`, `units.txt` and `meta.txt` (kind, score columns and
//! the build steps with sizes and seconds). Entries are written to a temporary folder and renamed,
//! so an interrupted build never leaves a half entry.

use crate::compile::{BuildStep, Graph, GraphKind};
use crate::error::{GraphError, Result};
use crate::lexicon_fst::LangSymbols;
use crate::StdFst;
use ctx_core::symbols::SymbolTable;
use rustfst::prelude::*;
use std::path::{Path, PathBuf};

/// Bumped whenever graph building changes what it produces, so old entries are not reused.
pub const GRAPH_CODE_VERSION: &str = "ctx-graph/1";

/// A 128-bit FNV-1a hash over named parts (stable across runs and platforms).
#[derive(Debug, Clone)]
pub struct CacheKey {
    a: u64,
    b: u64,
}

impl Default for CacheKey {
    fn default() -> Self {
        let mut k = CacheKey {
            a: ctx_core::hash::OFFSET,
            b: 0x6c62_272e_07bb_0142,
        };
        k.add("code", GRAPH_CODE_VERSION.as_bytes());
        k
    }
}

impl CacheKey {
    /// A key that already covers the graph code version.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mixes in a named part (the name and length are hashed too, so parts cannot run together).
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> &mut Self {
        let mut eat = |data: &[u8]| {
            for &x in data {
                self.a = (self.a ^ x as u64).wrapping_mul(ctx_core::hash::PRIME);
                self.b = (self.b ^ x as u64)
                    .wrapping_mul(ctx_core::hash::PRIME)
                    .rotate_left(5);
            }
        };
        eat(name.as_bytes());
        eat(&(bytes.len() as u64).to_le_bytes());
        eat(bytes);
        self
    }

    /// The key as 32 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.a, self.b)
    }
}

/// A folder of cached graphs.
#[derive(Debug, Clone)]
pub struct GraphCache {
    dir: PathBuf,
}

impl GraphCache {
    /// A cache rooted at `dir` (created on first store).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The entry folder for a kind and key.
    pub fn entry(&self, kind: GraphKind, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}-{}", kind.name(), key.hex()))
    }

    /// Loads a cached graph, or `None` when there is no entry.
    pub fn load(&self, kind: GraphKind, key: &CacheKey) -> Result<Option<Graph>> {
        let dir = self.entry(kind, key);
        if !dir.join("meta.txt").exists() {
            return Ok(None);
        }
        read_graph_dir(&dir).map(Some)
    }

    /// Stores a graph under `key`; returns the entry folder.
    pub fn store(&self, key: &CacheKey, graph: &Graph) -> Result<PathBuf> {
        let dir = self.entry(graph.kind, key);
        let tmp = self
            .dir
            .join(format!(".tmp-{}-{}", key.hex(), std::process::id()));
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |err| GraphError::Io { path: p, err }
        };
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        write_graph_dir(&tmp, graph)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::rename(&tmp, &dir).map_err(io(&dir))?;
        Ok(dir)
    }
}

/// Writes a graph folder (graph.fst, words.txt, units.txt, meta.txt).
pub fn write_graph_dir(dir: &Path, graph: &Graph) -> Result<()> {
    graph
        .fst
        .write(dir.join("graph.fst"))
        .map_err(|e| GraphError::fst(&format!("write {}", dir.join("graph.fst").display()), e))?;
    graph.symbols.words.write(&dir.join("words.txt"))?;
    graph.symbols.units.write(&dir.join("units.txt"))?;
    let mut meta = format!(
        "kind\t{}\nnum_columns\t{}\n",
        graph.kind.name(),
        graph.num_columns
    );
    for s in &graph.steps {
        meta.push_str(&format!(
            "step\t{}\t{}\t{}\t{:.3}\n",
            s.name, s.states, s.arcs, s.seconds
        ));
    }
    ctx_core::io::write_atomic(&dir.join("meta.txt"), |w| w.write_all(meta.as_bytes()))?;
    Ok(())
}

/// Reads a graph folder written by [`write_graph_dir`].
pub fn read_graph_dir(dir: &Path) -> Result<Graph> {
    let meta_path = dir.join("meta.txt");
    let meta = ctx_core::io::read_text(&meta_path)?;
    let mut kind = None;
    let mut num_columns = None;
    let mut steps = Vec::new();
    for (i, line) in meta.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || {
            GraphError::Core(ctx_core::CoreError::parse(
                &meta_path,
                i + 1,
                "malformed line",
            ))
        };
        match f.as_slice() {
            ["kind", k] => kind = Some(GraphKind::parse(k).ok_or_else(bad)?),
            ["num_columns", n] => num_columns = Some(n.parse::<u32>().map_err(|_| bad())?),
            ["step", name, s, a, t] => steps.push(BuildStep {
                name: name.to_string(),
                states: s.parse().map_err(|_| bad())?,
                arcs: a.parse().map_err(|_| bad())?,
                seconds: t.parse().map_err(|_| bad())?,
            }),
            _ => return Err(bad()),
        }
    }
    let missing = |what: &str| GraphError::Invalid(format!("{}: no {what}", meta_path.display()));
    let fst_path = dir.join("graph.fst");
    let fst = StdFst::read(&fst_path)
        .map_err(|e| GraphError::fst(&format!("read {}", fst_path.display()), e))?;
    let words = SymbolTable::read(&dir.join("words.txt"))?;
    let units = SymbolTable::read(&dir.join("units.txt"))?;
    Ok(Graph {
        kind: kind.ok_or_else(|| missing("kind"))?,
        fst,
        symbols: LangSymbols::from_tables(words, units)?,
        num_columns: num_columns.ok_or_else(|| missing("num_columns"))?,
        steps,
    })
}

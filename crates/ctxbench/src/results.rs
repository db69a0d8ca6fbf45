//! The results contract (docs/design.md §8): one JSON file per finished point (the resumable store),
//! `points.csv` / `points.parquet` ([`crate::frame`]) with one row per point, and `run.json`.

use crate::experiment::{Catalog, Point, Type, Value};
use crate::frame::{Cells, Column, Frame};
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::experiment::MEASURES;
use crate::settings::Common;

/// Label columns that come first in points.csv.
pub const LABELS: &[&str] = &[
    "experiment",
    crate::key!(Common, dataset),
    "section",
    "row",
    "method",
    crate::key!(Common, backend),
    "device",
];

/// What a finished point measured; stored as `points/<key>.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    /// The point's key (hash of its resolved config, dataset version and code version).
    pub key: String,
    /// The point's label when it ran (for people reading the file).
    pub label: String,
    /// Measures by name (see [`MEASURES`]); absent = not defined for this point.
    pub measures: BTreeMap<String, f64>,
    /// The resolved settings as strings (for people and `merge`).
    pub settings: BTreeMap<String, String>,
    /// The code version it ran with.
    pub code_version: String,
    /// The dataset version it ran on.
    pub dataset_version: String,
    /// The device that decoded, for the cuda and shim backends ("" on the CPU).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device: String,
}

/// The per-point store of one experiment: `<dir>/points/<key>.json`.
#[derive(Debug, Clone)]
pub struct Store {
    /// `results/<experiment-id>`.
    pub dir: PathBuf,
}

impl Store {
    /// The store of an experiment under a results root.
    pub fn new(root: &Path, id: &str) -> Self {
        Self { dir: root.join(id) }
    }

    fn point_path(&self, key: &str) -> PathBuf {
        self.dir.join("points").join(format!("{key}.json"))
    }

    /// The stored record of a key, if any (a corrupt file is an error naming it).
    pub fn get(&self, key: &str) -> Result<Option<PointRecord>> {
        let p = self.point_path(key);
        if !p.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let r: PointRecord =
            serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", p.display()))?;
        if r.key != key {
            bail!("{}: holds key {} (file renamed?)", p.display(), r.key);
        }
        Ok(Some(r))
    }

    /// Stores a record atomically (temp file + rename).
    pub fn put(&self, r: &PointRecord) -> Result<()> {
        let p = self.point_path(&r.key);
        std::fs::create_dir_all(p.parent().unwrap())?;
        let text = serde_json::to_string_pretty(r)?;
        ctx_core::io::write_atomic(&p, |w| w.write_all(text.as_bytes()))?;
        Ok(())
    }

    /// Copies every point file of another store (a shard's folder) into this one.
    pub fn absorb(&self, other: &Path) -> Result<usize> {
        let dir = other.join("points");
        let mut n = 0;
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for e in entries {
            let p = e?.path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&p)?;
            let r: PointRecord =
                serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", p.display()))?;
            self.put(&r)?;
            n += 1;
        }
        Ok(n)
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Writes a points frame as CSV at `path` (atomically): points.csv's format, anywhere.
pub fn write_csv(path: &Path, df: &Frame) -> Result<()> {
    let csv = crate::frame::csv::write(df);
    ctx_core::io::write_atomic(path, |w| w.write_all(csv.as_bytes()))?;
    Ok(())
}

/// Builds the points frame: labels, every setting (typed columns), the measures and the key.
pub fn frame(cat: &Catalog, experiment: &str, rows: &[(&Point, &PointRecord)]) -> Result<Frame> {
    let mut cols: Vec<Column> = Vec::new();
    let text_col = |name: &str, f: &dyn Fn(&Point, &PointRecord) -> Option<String>| {
        let v: Vec<Option<String>> = rows.iter().map(|(p, r)| f(p, r)).collect();
        column(name, Cells::Str(v))
    };
    cols.push(text_col("experiment", &|_, _| Some(experiment.to_string())));
    let (dataset, backend) = (LABELS[1], LABELS[5]);
    cols.push(text_col(dataset, &|p, _| Some(p.get(dataset))));
    cols.push(text_col("section", &|p, _| Some(p.section.clone())));
    cols.push(text_col("row", &|p, _| Some(p.row.clone())));
    cols.push(text_col("method", &|p, _| Some(p.method.to_string())));
    cols.push(text_col(backend, &|p, _| Some(p.get(backend))));
    cols.push(text_col("device", &|_, r| {
        (!r.device.is_empty()).then(|| r.device.clone())
    }));
    for s in cat.settings() {
        if s.name == dataset || s.name == backend {
            continue;
        }
        fn get<'a>(p: &'a Point, k: &str) -> Option<&'a Value> {
            p.settings.get(k)
        }
        let col = match s.ty {
            Type::Str => {
                let v: Vec<Option<String>> = rows
                    .iter()
                    .map(|(p, _)| get(p, s.name).map(|v| v.to_string()))
                    .collect();
                Cells::Str(v)
            }
            Type::Float => {
                let v: Vec<Option<f64>> = rows
                    .iter()
                    .map(|(p, _)| get(p, s.name).and_then(Value::as_f64))
                    .collect();
                Cells::F64(v)
            }
            Type::Int => {
                let v: Vec<Option<i64>> = rows
                    .iter()
                    .map(|(p, _)| match get(p, s.name) {
                        Some(Value::Int(i)) => Some(*i),
                        _ => None,
                    })
                    .collect();
                Cells::I64(v)
            }
            Type::Bool => {
                let v: Vec<Option<bool>> = rows
                    .iter()
                    .map(|(p, _)| get(p, s.name).and_then(Value::as_bool))
                    .collect();
                Cells::Bool(v)
            }
        };
        cols.push(column(s.name, col));
    }
    for m in MEASURES {
        let v: Vec<Option<f64>> = rows
            .iter()
            .map(|(_, r)| r.measures.get(*m).copied().map(round4))
            .collect();
        cols.push(column(m, Cells::F64(v)));
    }
    cols.push(text_col("key", &|_, r| Some(r.key.clone())));
    Ok(Frame::new(cols)?)
}

fn column(name: &str, cells: Cells) -> Column {
    Column {
        name: name.to_string(),
        cells,
    }
}

/// Writes `points.csv` and `points.parquet` into `dir`, each atomically.
pub fn write_frame(dir: &Path, df: &Frame) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    write_csv(&dir.join("points.csv"), df)?;
    let pq = crate::frame::parquet::write(df);
    ctx_core::io::write_atomic(&dir.join("points.parquet"), |w| w.write_all(&pq))?;
    Ok(())
}

/// points.csv read back as strings: what tables, plots and the regression check work on.
#[derive(Debug, Clone)]
pub struct Points {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of cells (`None` = empty).
    pub rows: Vec<Vec<Option<String>>>,
}

impl Points {
    /// Reads `<dir>/points.csv` (every column as text).
    pub fn read(dir: &Path) -> Result<Self> {
        Self::read_csv(&dir.join("points.csv"))
    }

    /// Reads any CSV with a header the same way (every column as text).
    pub fn read_csv(path: &Path) -> Result<Self> {
        let path = path.to_path_buf();
        if !path.exists() {
            bail!(
                "{}: no results yet (run `ctxbench run` first)",
                path.display()
            );
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let (columns, rows) =
            crate::frame::csv::read(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        Ok(Self { columns, rows })
    }

    /// The column index of a name.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// A cell as text.
    pub fn text(&self, row: usize, name: &str) -> Option<&str> {
        self.col(name).and_then(|c| self.rows[row][c].as_deref())
    }

    /// A cell as a number.
    pub fn num(&self, row: usize, name: &str) -> Option<f64> {
        self.text(row, name).and_then(|s| s.parse().ok())
    }

    /// Rows whose cells equal every selector value (`column → text`; numbers compared as
    /// numbers, so "-2" selects "-2.0").
    pub fn select(&self, sel: &BTreeMap<String, String>) -> Vec<usize> {
        (0..self.rows.len())
            .filter(|&i| {
                sel.iter().all(|(k, v)| {
                    let cell = self.text(i, k).unwrap_or("");
                    cell == v
                        || matches!((cell.parse::<f64>(), v.parse::<f64>()), (Ok(a), Ok(b)) if a == b)
                })
            })
            .collect()
    }
}

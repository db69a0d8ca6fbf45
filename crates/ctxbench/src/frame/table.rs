//! The frame: named columns of typed, nullable cells, one length.

/// One column's cells; `None` is a missing value (an empty CSV field, a Parquet null).
#[derive(Debug, Clone, PartialEq)]
pub enum Cells {
    /// UTF-8 text.
    Str(Vec<Option<String>>),
    /// 64-bit floats.
    F64(Vec<Option<f64>>),
    /// 64-bit integers.
    I64(Vec<Option<i64>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
}

impl Cells {
    /// The number of cells.
    pub fn len(&self) -> usize {
        match self {
            Cells::Str(v) => v.len(),
            Cells::F64(v) => v.len(),
            Cells::I64(v) => v.len(),
            Cells::Bool(v) => v.len(),
        }
    }

    /// Whether the column has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether cell `i` is missing.
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Cells::Str(v) => v[i].is_none(),
            Cells::F64(v) => v[i].is_none(),
            Cells::I64(v) => v[i].is_none(),
            Cells::Bool(v) => v[i].is_none(),
        }
    }
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The header.
    pub name: String,
    /// The cells, one per row.
    pub cells: Cells,
}

/// Columns of one length, in order.
///
/// ```
/// use ctxbench::frame::{csv, Cells, Column, Frame};
/// let f = Frame::new(vec![
///     Column { name: "row".into(), cells: Cells::Str(vec![Some("a, b".into()), None]) },
///     Column { name: "wer".into(), cells: Cells::F64(vec![Some(14.0), Some(2.5)]) },
/// ]).unwrap();
/// assert_eq!(csv::write(&f), "row,wer\n\"a, b\",14.0\n,2.5\n");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    columns: Vec<Column>,
    height: usize,
}

/// A frame whose columns disagree in length or repeat a name.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A column of another length than the first.
    #[error("column '{name}' has {got} cells where the frame has {want} rows")]
    Length {
        /// The column.
        name: String,
        /// Its cells.
        got: usize,
        /// The first column's.
        want: usize,
    },
    /// The same header twice.
    #[error("column '{0}' appears twice")]
    Duplicate(String),
}

impl Frame {
    /// A frame of `columns`, which must have one length and distinct names.
    pub fn new(columns: Vec<Column>) -> Result<Self, FrameError> {
        let height = columns.first().map_or(0, |c| c.cells.len());
        let mut seen = std::collections::HashSet::new();
        for c in &columns {
            if c.cells.len() != height {
                return Err(FrameError::Length {
                    name: c.name.clone(),
                    got: c.cells.len(),
                    want: height,
                });
            }
            if !seen.insert(c.name.as_str()) {
                return Err(FrameError::Duplicate(c.name.clone()));
            }
        }
        Ok(Self { columns, height })
    }

    /// The columns, in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The number of rows.
    pub fn height(&self) -> usize {
        self.height
    }
}

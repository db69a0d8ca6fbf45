//! Mixture weights as pocketsphinx ships them (`sendump`): per stream and Gaussian, one byte
//! per senone, the weight's negated log (base 1.0001) shifted right by 10 (`read_sendump` in
//! pocketsphinx's ptm_mgau.c). Only the unclustered 8-bit layout en-us uses is read.

use crate::bytes::{read_model_file, Cursor};
use crate::error::Result;
use std::path::Path;

/// Quantised mixture weights.
#[derive(Debug, Clone, PartialEq)]
pub struct MixtureWeights {
    /// Feature streams.
    pub n_stream: usize,
    /// Gaussians per codebook and stream.
    pub n_density: usize,
    /// Senones.
    pub n_senone: usize,
    /// `[stream][gaussian][senone]`, flattened: −log₁.₀₀₀₁(w) >> 10 (larger = lighter).
    pub data: Vec<u8>,
}

impl MixtureWeights {
    /// Reads a `sendump` (or its `.gz`).
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// let w = sphinx_am::MixtureWeights::read(&dir.join("sendump")).unwrap();
    /// assert_eq!((w.n_stream, w.n_density, w.n_senone), (3, 128, 5126));
    /// ```
    pub fn read(path: &Path) -> Result<Self> {
        let (path, data) = read_model_file(path)?;
        let mut c = Cursor::new(&path, &data);
        let mut n = c.i32("title length")?;
        if !(1..=999).contains(&n) {
            let swapped = n.swap_bytes();
            if !(1..=999).contains(&swapped) {
                return Err(c.error(format!(
                    "title length {n} at byte 0 is out of range: not a sendump file"
                )));
            }
            c.set_swap(true);
            n = swapped;
        }
        c.bytes(n as usize, "title")?;
        let (mut n_stream, mut n_density, mut n_senone) = (0usize, 0usize, 0usize);
        let (mut n_clust, mut n_bits) = (0usize, 8usize);
        loop {
            let len = c.count("header string length", 1 << 16)?;
            if len == 0 {
                break;
            }
            let b = c.bytes(len, "header string")?;
            let s = String::from_utf8_lossy(b.strip_suffix(&[0]).unwrap_or(b)).into_owned();
            let mut parts = s.split_whitespace();
            let (key, val) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let parse = |c: &Cursor<'_>| -> Result<usize> {
                val.parse()
                    .map_err(|_| c.error(format!("header '{s}': '{val}' is not a count")))
            };
            match key {
                "feature_count" => n_stream = parse(&c)?,
                "mixture_count" => n_density = parse(&c)?,
                "model_count" => n_senone = parse(&c)?,
                "cluster_count" => n_clust = parse(&c)?,
                "cluster_bits" => n_bits = parse(&c)?,
                _ => {}
            }
        }
        if n_clust != 0 || n_bits != 8 {
            return Err(c.error(format!(
                "clustered or {n_bits}-bit mixture weights (cluster_count {n_clust}) are not \
                 supported: only the unclustered 8-bit layout"
            )));
        }
        let rows = c.count("number of rows", 1 << 20)?;
        let cols = c.count("number of columns", 1 << 24)?;
        if (n_density != 0 && rows != n_density) || (n_senone != 0 && cols != n_senone) {
            return Err(c.error(format!(
                "{rows} rows × {cols} columns, but the header says {n_density} Gaussians × \
                 {n_senone} senones"
            )));
        }
        // The stream count is rarely in the header: the rest of the file holds whole
        // rows × columns tables, one per stream.
        let table = rows * cols;
        if table == 0 || !c.remaining().is_multiple_of(table) {
            return Err(c.error(format!(
                "{} bytes of weights after the header are not whole {rows} × {cols} tables",
                c.remaining()
            )));
        }
        let streams = c.remaining() / table;
        if n_stream != 0 && n_stream != streams {
            return Err(c.error(format!(
                "the header says {n_stream} streams, the file holds {streams} tables"
            )));
        }
        let data = c.bytes(streams * table, "mixture weights")?.to_vec();
        let (n_stream, n_density, n_senone) = (streams, rows, cols);
        Ok(Self {
            n_stream,
            n_density,
            n_senone,
            data,
        })
    }

    /// The quantised weight of Gaussian `g` of `stream` in senone `s`.
    pub fn get(&self, stream: usize, g: usize, s: usize) -> u8 {
        self.data[(stream * self.n_density + g) * self.n_senone + s]
    }
}

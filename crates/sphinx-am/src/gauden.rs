//! Gaussian codebooks (`means`, `variances`): per codebook, per feature stream, `n_density`
//! vectors of the stream's length (SphinxBase's `gauden_param_read`).

use crate::bytes::{read_model_file, Cursor};
use crate::error::Result;
use crate::s3;
use std::path::Path;

/// One parameter file of Gaussian codebooks: means or variances.
#[derive(Debug, Clone, PartialEq)]
pub struct Gaussians {
    /// Codebooks (42 in en-us: one per base phone).
    pub n_codebook: usize,
    /// Feature streams (3: cepstra, deltas, double deltas).
    pub n_stream: usize,
    /// Gaussians per codebook and stream (128).
    pub n_density: usize,
    /// Length of each stream's vectors (13 each).
    pub veclen: Vec<usize>,
    /// All values, codebook-major, then stream, then Gaussian, then dimension.
    pub data: Vec<f32>,
    offsets: Vec<usize>,
}

/// Upper bound on any count in a header (a garbage file must not allocate gigabytes).
const MAX_COUNT: usize = 1 << 24;

impl Gaussians {
    /// Reads a means or variances file (or its `.gz`).
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// let means = sphinx_am::Gaussians::read(&dir.join("means")).unwrap();
    /// assert_eq!((means.n_codebook, means.n_stream, means.n_density), (42, 3, 128));
    /// assert_eq!(means.vector(0, 2, 127).len(), 13);
    /// ```
    pub fn read(path: &Path) -> Result<Self> {
        let (path, data) = read_model_file(path)?;
        let mut c = Cursor::new(&path, &data);
        let header = s3::read_header(&mut c)?;
        let n_codebook = c.count("number of codebooks", MAX_COUNT)?;
        let n_stream = c.count("number of feature streams", 64)?;
        let n_density = c.count("number of Gaussians per codebook", MAX_COUNT)?;
        let mut veclen = Vec::with_capacity(n_stream);
        for s in 0..n_stream {
            veclen.push(c.count(&format!("length of stream {s}"), 4096)?);
        }
        let n = c.count("number of values", usize::MAX >> 1)?;
        let block: usize = veclen.iter().sum();
        let expect = n_codebook
            .checked_mul(n_density)
            .and_then(|x| x.checked_mul(block));
        if expect != Some(n) {
            return Err(c.error(format!(
                "holds {n} values, but {n_codebook} codebooks × {n_density} Gaussians × {block} \
                 dimensions make {}",
                expect.map_or("more than memory holds".to_string(), |e| e.to_string())
            )));
        }
        let mut sum = s3::sum_i32(0, &[n_codebook as i32, n_stream as i32, n_density as i32]);
        sum = s3::sum_i32(sum, &veclen.iter().map(|&v| v as i32).collect::<Vec<_>>());
        sum = s3::sum_i32(sum, &[n as i32]);
        let values = c.f32s(n, "Gaussian parameters", &mut sum)?;
        s3::finish(&mut c, &header, sum)?;
        let mut offsets = Vec::with_capacity(n_stream);
        let mut o = 0;
        for &l in &veclen {
            offsets.push(o);
            o += l * n_density;
        }
        Ok(Self {
            n_codebook,
            n_stream,
            n_density,
            veclen,
            data: values,
            offsets,
        })
    }

    /// The vector of Gaussian `g` of `stream` in `codebook`.
    pub fn vector(&self, codebook: usize, stream: usize, g: usize) -> &[f32] {
        let block: usize = self.veclen.iter().sum::<usize>() * self.n_density;
        let start = codebook * block + self.offsets[stream] + g * self.veclen[stream];
        &self.data[start..start + self.veclen[stream]]
    }
}

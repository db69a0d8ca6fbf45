//! Reading speech for the model: 16-bit PCM WAV at the model's rate, one channel. Another
//! rate, more channels or another sample format is refused with an error naming the file and
//! what it holds (no silent resampling: a resampler would change the features pocketsphinx
//! computes, and the reference dumps are made at 16 kHz).

use crate::error::{Result, SphinxError};
use std::path::Path;

/// The samples of a 16 kHz mono 16-bit WAV.
///
/// ```
/// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/pocketsphinx-test/cards");
/// let s = sphinx_am::audio::read_wav(&dir.join("001.wav"), 16_000).unwrap();
/// assert_eq!(s.len(), 17_526);
/// ```
pub fn read_wav(path: &Path, rate: u32) -> Result<Vec<i16>> {
    let bad = |what: String| SphinxError::Format {
        path: path.to_path_buf(),
        what,
    };
    // RIFF's pad bytes respected (ctx_core::wav): hound alone refuses an odd-sized chunk.
    let mut r = ctx_core::wav::open(path).map_err(|e| match e {
        hound::Error::IoError(e) => SphinxError::Io {
            path: path.to_path_buf(),
            err: e,
        },
        e => bad(format!("not a WAV file: {e}")),
    })?;
    let spec = r.spec();
    if spec.sample_rate != rate
        || spec.channels != 1
        || spec.bits_per_sample != 16
        || spec.sample_format != hound::SampleFormat::Int
    {
        return Err(bad(format!(
            "{} Hz, {} channel(s), {}-bit {:?}: the model needs {rate} Hz, 1 channel, 16-bit \
             integer PCM (convert it first, e.g. `sox in.wav -r {rate} -c 1 -b 16 out.wav`)",
            spec.sample_rate, spec.channels, spec.bits_per_sample, spec.sample_format
        )));
    }
    r.samples::<i16>()
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("unreadable samples: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid WAV whose odd-sized `LIST` chunk (with RIFF's pad byte) comes before its data
    /// reads as the same file without it (hound alone refuses it).
    #[test]
    fn an_odd_sized_chunk_before_the_data_is_read() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/pocketsphinx-test/cards");
        let plain = std::fs::read(dir.join("001.wav")).unwrap();
        let want = read_wav(&dir.join("001.wav"), 16_000).unwrap();
        // RIFF header, the LIST chunk (5 bytes + pad), then the original chunks.
        let mut w = plain[..12].to_vec();
        w.extend(b"LIST\x05\0\0\0INFOx\0");
        w.extend(&plain[12..]);
        let n = (w.len() - 8) as u32;
        w[4..8].copy_from_slice(&n.to_le_bytes());
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("list.wav");
        std::fs::write(&p, &w).unwrap();
        assert!(
            hound::WavReader::open(&p).is_err(),
            "hound alone reads it now"
        );
        assert_eq!(read_wav(&p, 16_000).unwrap(), want);
    }
}

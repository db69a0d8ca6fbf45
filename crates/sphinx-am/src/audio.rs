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
    let mut r = hound::WavReader::open(path).map_err(|e| match e {
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

//! A VHF radio link between a speaker and a recorder, as air-traffic speech reaches ATCO2's
//! recordings: the transmitter's band-pass and its compressor/clipper, in-band noise at a chosen
//! signal-to-noise ratio, the receiver's band-pass. Applied to clean recordings (Festival
//! speech) so that a real acoustic model meets them at the papers' difficulty. Deterministic:
//! the noise of a recording is drawn from the channel's seed and a key alone (the recording's
//! file name, where ctxbench applies it).
//!
//! ```
//! use ctx_data::radio::RadioChannel;
//! let ch = RadioChannel { snr_db: 10.0, ..RadioChannel::default() };
//! ch.check().unwrap();
//! let clean: Vec<i16> = (0..16_000)
//!     .map(|i| (8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * 440.0 / 16_000.0).sin()) as i16)
//!     .collect();
//! let a = ch.apply("utt1", &clean, 16_000);
//! assert_eq!(a, ch.apply("utt1", &clean, 16_000));
//! assert_ne!(a, ch.apply("utt2", &clean, 16_000));
//! ```

use crate::rng::Rng;
use serde::Deserialize;
use std::f64::consts::PI;

/// The settings of a radio channel (`[<dataset>.channel]` of an audio entry).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioChannel {
    /// Speech power over noise power in the received band (dB), over the whole utterance.
    pub snr_db: f64,
    /// Lower edge of the pass band (Hz): 4th-order Butterworth high-pass, at both ends.
    #[serde(default = "default_low_hz")]
    pub low_hz: f64,
    /// Upper edge of the pass band (Hz): 4th-order Butterworth low-pass, at both ends.
    #[serde(default = "default_high_hz")]
    pub high_hz: f64,
    /// The transmitter's compressor: samples over the utterance's peak go through
    /// `tanh(drive·x) / tanh(drive)`; 0 leaves the signal linear.
    #[serde(default = "default_drive")]
    pub drive: f64,
    /// The transmitter's clipper: the compressed signal is cut at this fraction of its peak
    /// (1: no clipping).
    #[serde(default = "default_clip")]
    pub clip: f64,
    /// Seed of the noise (with each recording's key).
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_low_hz() -> f64 {
    300.0
}
fn default_high_hz() -> f64 {
    3400.0
}
fn default_drive() -> f64 {
    3.0
}
fn default_clip() -> f64 {
    0.8
}
fn default_seed() -> u64 {
    1
}

impl Default for RadioChannel {
    /// The telephone band, a 3× compressor, clipping at 0.8 of the peak, 20 dB SNR.
    fn default() -> Self {
        Self {
            snr_db: 20.0,
            low_hz: default_low_hz(),
            high_hz: default_high_hz(),
            drive: default_drive(),
            clip: default_clip(),
            seed: default_seed(),
        }
    }
}

/// A channel setting out of range; the message names it.
#[derive(Debug, thiserror::Error)]
#[error("radio channel: {0}")]
pub struct ChannelError(String);

/// Where a received utterance peaks, as a fraction of 16-bit full scale (the recorder's gain).
const OUTPUT_PEAK: f64 = 0.7;

impl RadioChannel {
    /// Checks the settings (the pass band must fit a 16 kHz recording's Nyquist rate; the
    /// sample rate itself is checked by [`Self::apply`]'s caller, the model).
    pub fn check(&self) -> Result<(), ChannelError> {
        if !self.snr_db.is_finite() {
            return Err(ChannelError(format!(
                "snr_db {} must be finite",
                self.snr_db
            )));
        }
        if !(self.low_hz > 0.0 && self.low_hz < self.high_hz && self.high_hz < 8000.0) {
            return Err(ChannelError(format!(
                "pass band {}–{} Hz: need 0 < low_hz < high_hz < 8000",
                self.low_hz, self.high_hz
            )));
        }
        if !(self.drive >= 0.0 && self.drive <= 20.0) {
            return Err(ChannelError(format!(
                "drive {} must be in [0, 20]",
                self.drive
            )));
        }
        if !(self.clip > 0.0 && self.clip <= 1.0) {
            return Err(ChannelError(format!(
                "clip {} must be in (0, 1]",
                self.clip
            )));
        }
        Ok(())
    }

    /// The same channel at another SNR (a calibration sweep).
    pub fn with_snr(&self, snr_db: f64) -> Self {
        Self {
            snr_db,
            ..self.clone()
        }
    }

    /// `samples` (16-bit, `rate` Hz) as the recorder receives them through this channel, the
    /// noise drawn for `key` (a recording's name).
    pub fn apply(&self, key: &str, samples: &[i16], rate: u32) -> Vec<i16> {
        let (speech, noise) = self.received(key, samples, rate);
        let y: Vec<f64> = speech.iter().zip(&noise).map(|(s, n)| s + n).collect();
        let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let gain = if peak > 0.0 {
            OUTPUT_PEAK * i16::MAX as f64 / peak
        } else {
            0.0
        };
        y.iter()
            .map(|v| (v * gain).round().clamp(i16::MIN as f64, i16::MAX as f64) as i16)
            .collect()
    }

    /// The received speech and the received noise apart (the recorder hears their sum), at the
    /// transmitter's scale (its peak is 1 before the receiver's filter).
    pub fn received(&self, key: &str, samples: &[i16], rate: u32) -> (Vec<f64>, Vec<f64>) {
        let rate = rate as f64;
        let mean = samples.iter().map(|&s| s as f64).sum::<f64>() / samples.len().max(1) as f64;
        let x: Vec<f64> = samples.iter().map(|&s| s as f64 - mean).collect();
        let tx = self.transmit(&self.band_pass(&x, rate));
        let speech = self.band_pass(&tx, rate);
        let mut rng = Rng::for_key(self.seed, key);
        let white: Vec<f64> = (0..x.len()).map(|_| rng.normal()).collect();
        let mut noise = self.band_pass(&white, rate);
        let (ps, pn) = (power(&speech), power(&noise));
        let scale = if pn > 0.0 && ps > 0.0 {
            (ps / pn / 10f64.powf(self.snr_db / 10.0)).sqrt()
        } else {
            0.0
        };
        noise.iter_mut().for_each(|n| *n *= scale);
        (speech, noise)
    }

    /// The transmitter's compressor and clipper, on a signal scaled to its peak.
    fn transmit(&self, x: &[f64]) -> Vec<f64> {
        let peak = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if peak == 0.0 {
            return x.to_vec();
        }
        let squash = |v: f64| {
            if self.drive > 0.0 {
                (self.drive * v).tanh() / self.drive.tanh()
            } else {
                v
            }
        };
        x.iter()
            .map(|&v| squash(v / peak).clamp(-self.clip, self.clip))
            .collect()
    }

    /// The pass band: a 4th-order Butterworth high-pass at `low_hz` and low-pass at `high_hz`.
    pub fn band_pass(&self, x: &[f64], rate: f64) -> Vec<f64> {
        // A 4th-order Butterworth filter is two biquads with these Q's.
        const QS: [f64; 2] = [0.541_196_1, 1.306_563];
        let mut y = x.to_vec();
        for q in QS {
            y = Biquad::high_pass(self.low_hz, q, rate).run(&y);
            y = Biquad::low_pass(self.high_hz, q, rate).run(&y);
        }
        y
    }
}

/// Mean square of a signal.
fn power(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>() / x.len().max(1) as f64
}

/// A second-order IIR section (the audio EQ cookbook's forms, normalised by a0).
struct Biquad {
    b: [f64; 3],
    a: [f64; 2],
}

impl Biquad {
    fn low_pass(f: f64, q: f64, rate: f64) -> Self {
        let (cos, alpha) = Self::angle(f, q, rate);
        Self::normalised(
            [(1.0 - cos) / 2.0, 1.0 - cos, (1.0 - cos) / 2.0],
            cos,
            alpha,
        )
    }

    fn high_pass(f: f64, q: f64, rate: f64) -> Self {
        let (cos, alpha) = Self::angle(f, q, rate);
        Self::normalised(
            [(1.0 + cos) / 2.0, -(1.0 + cos), (1.0 + cos) / 2.0],
            cos,
            alpha,
        )
    }

    fn angle(f: f64, q: f64, rate: f64) -> (f64, f64) {
        let w = 2.0 * PI * f / rate;
        (w.cos(), w.sin() / (2.0 * q))
    }

    fn normalised(b: [f64; 3], cos: f64, alpha: f64) -> Self {
        let a0 = 1.0 + alpha;
        Self {
            b: [b[0] / a0, b[1] / a0, b[2] / a0],
            a: [-2.0 * cos / a0, (1.0 - alpha) / a0],
        }
    }

    /// The section over a signal from rest (direct form I).
    fn run(&self, x: &[f64]) -> Vec<f64> {
        let (mut x1, mut x2, mut y1, mut y2) = (0.0, 0.0, 0.0, 0.0);
        x.iter()
            .map(|&x0| {
                let y0 = self.b[0] * x0 + self.b[1] * x1 + self.b[2] * x2
                    - self.a[0] * y1
                    - self.a[1] * y2;
                (x2, x1, y2, y1) = (x1, x0, y1, y0);
                y0
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(hz: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (2.0 * PI * hz * i as f64 / 16_000.0).sin())
            .collect()
    }

    /// Power of the second half (past the filters' transient), in dB against a unit sine's.
    fn gain_db(ch: &RadioChannel, hz: f64) -> f64 {
        let x = sine(hz, 16_000);
        let y = ch.band_pass(&x, 16_000.0);
        10.0 * (power(&y[8000..]) / power(&x[8000..])).log10()
    }

    #[test]
    fn the_pass_band_passes_and_the_rest_is_cut() {
        let ch = RadioChannel::default();
        assert!(gain_db(&ch, 1000.0).abs() < 0.5, "{}", gain_db(&ch, 1000.0));
        // Butterworth: −3 dB at each edge, −24 dB an octave beyond (two passes of 4th order
        // would be −48; this is one pass).
        assert!(
            (gain_db(&ch, 300.0) + 3.0).abs() < 0.6,
            "{}",
            gain_db(&ch, 300.0)
        );
        assert!((gain_db(&ch, 3400.0) + 3.0).abs() < 0.6);
        assert!(gain_db(&ch, 100.0) < -30.0, "{}", gain_db(&ch, 100.0));
        assert!(gain_db(&ch, 7000.0) < -25.0, "{}", gain_db(&ch, 7000.0));
    }

    #[test]
    fn the_noise_is_at_the_asked_snr_in_band() {
        let x: Vec<i16> = sine(500.0, 16_000)
            .iter()
            .zip(sine(1300.0, 16_000))
            .map(|(a, b)| (6000.0 * (a + 0.5 * b)) as i16)
            .collect();
        for snr in [0.0, 7.5, 20.0] {
            let ch = RadioChannel {
                snr_db: snr,
                ..RadioChannel::default()
            };
            let (s, n) = ch.received("u", &x, 16_000);
            let got = 10.0 * (power(&s) / power(&n)).log10();
            assert!((got - snr).abs() < 1e-6, "{snr}: {got}");
        }
    }

    #[test]
    fn the_clipper_bounds_the_transmitted_signal() {
        let ch = RadioChannel {
            clip: 0.5,
            drive: 0.0,
            ..RadioChannel::default()
        };
        let y = ch.transmit(&sine(440.0, 1600));
        let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!((peak - 0.5).abs() < 1e-12);
        // |sin| is over 0.5 for two thirds of each period: flat there.
        let flat = y.iter().filter(|v| v.abs() == 0.5).count() as f64 / y.len() as f64;
        assert!((flat - 2.0 / 3.0).abs() < 0.02, "{flat}");
    }

    #[test]
    fn the_output_is_deterministic_by_id_and_peaks_at_the_recorder_level() {
        let ch = RadioChannel::default();
        let x: Vec<i16> = sine(700.0, 8000)
            .iter()
            .map(|v| (9000.0 * v) as i16)
            .collect();
        let a = ch.apply("a", &x, 16_000);
        assert_eq!(a, ch.apply("a", &x, 16_000));
        assert_ne!(a, ch.apply("b", &x, 16_000));
        let peak = a.iter().map(|v| v.unsigned_abs()).max().unwrap();
        assert_eq!(peak, (OUTPUT_PEAK * i16::MAX as f64).round() as u16);
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let bad = [
            RadioChannel {
                snr_db: f64::NAN,
                ..RadioChannel::default()
            },
            RadioChannel {
                low_hz: 4000.0,
                ..RadioChannel::default()
            },
            RadioChannel {
                clip: 0.0,
                ..RadioChannel::default()
            },
        ];
        let msgs: Vec<String> = bad
            .iter()
            .map(|c| c.check().unwrap_err().to_string())
            .collect();
        assert!(msgs[0].contains("snr_db"), "{}", msgs[0]);
        assert!(msgs[1].contains("pass band"), "{}", msgs[1]);
        assert!(msgs[2].contains("clip"), "{}", msgs[2]);
    }
}

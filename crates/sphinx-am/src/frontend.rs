//! pocketsphinx's MFCC front end, reproduced operation by operation (fe_sigproc.c,
//! fe_noise.c, fe_interface.c of pocketsphinx 5): frames of `wlen` seconds every 1/`frate`,
//! pre-emphasis carried across frames, a Hamming window, a real FFT's power spectrum, mel
//! filters with pocketsphinx's rounding and unit area, its noise removal (smoothed power, a
//! lower envelope as noise, temporal masking, gain smoothing), log, DCT-II and liftering; the
//! final partial frame zero-padded as `fe_end_utt` does. Values keep pocketsphinx's types
//! (filters, cosines and cepstra in `f32`, spectra in `f64`) so the cepstra agree to ~1e-5.

use crate::error::{Result, SphinxError};
use crate::FeatParams;
use std::f64::consts::PI;

/// Number of cepstra per frame.
pub const NCEP: usize = 13;

/// Front-end settings, from a model's `feat.params` over pocketsphinx's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontendConfig {
    /// Sample rate (Hz).
    pub samprate: f32,
    /// Frames per second.
    pub frate: i32,
    /// Window length (s).
    pub wlen: f32,
    /// Pre-emphasis factor.
    pub alpha: f32,
    /// Mel filters.
    pub nfilt: usize,
    /// Lowest and highest filter edge (Hz).
    pub lowerf: f32,
    /// Highest filter edge (Hz).
    pub upperf: f32,
    /// Liftering parameter (0: none).
    pub lifter: i32,
    /// pocketsphinx's noise removal.
    pub remove_noise: bool,
}

impl Default for FrontendConfig {
    fn default() -> Self {
        Self {
            samprate: 16_000.0,
            frate: 100,
            wlen: 0.025625,
            alpha: 0.97,
            nfilt: 40,
            lowerf: 133.333_34,
            upperf: 6_855.497_6,
            lifter: 0,
            remove_noise: false,
        }
    }
}

impl FrontendConfig {
    /// pocketsphinx's defaults overridden by `feat.params`; a setting this front end does not
    /// implement (another transform, dithering, DC removal, …) is an error, never ignored.
    pub fn from_params(p: &FeatParams) -> Result<Self> {
        let mut c = Self::default();
        let bad = |what: String| SphinxError::Format {
            path: "feat.params".into(),
            what,
        };
        for (k, v) in &p.entries {
            let num = |v: &str| -> Result<f64> {
                v.parse()
                    .map_err(|_| bad(format!("-{k} {v}: not a number")))
            };
            match k.as_str() {
                "samprate" => c.samprate = num(v)? as f32,
                "frate" => c.frate = num(v)? as i32,
                "wlen" => c.wlen = num(v)? as f32,
                "alpha" => c.alpha = num(v)? as f32,
                "nfilt" => c.nfilt = num(v)? as usize,
                "lowerf" => c.lowerf = num(v)? as f32,
                "upperf" => c.upperf = num(v)? as f32,
                "lifter" => c.lifter = num(v)? as i32,
                "remove_noise" => c.remove_noise = v == "yes",
                "ncep" if v != "13" => return Err(bad(format!("-ncep {v}: only 13"))),
                "transform" if v != "dct" => {
                    return Err(bad(format!("-transform {v}: only dct is implemented")))
                }
                "dither" | "remove_dc" | "logspec" | "smoothspec" | "doublebw" if v != "no" => {
                    return Err(bad(format!("-{k} {v}: not implemented")))
                }
                _ => {}
            }
        }
        if c.nfilt == 0 || c.frate <= 0 || c.samprate <= 0.0 {
            return Err(bad("nfilt, frate and samprate must be positive".into()));
        }
        Ok(c)
    }
}

/// The front end: precomputed window, filters and cosines.
#[derive(Debug, Clone)]
pub struct Frontend {
    cfg: FrontendConfig,
    frame_size: usize,
    frame_shift: usize,
    fft_size: usize,
    hamming: Vec<f64>,
    /// Per filter: first FFT bin and its coefficients.
    filters: Vec<(usize, Vec<f32>)>,
    cosine: Vec<Vec<f32>>,
    sqrt_inv_n: f32,
    sqrt_inv_2n: f32,
    lifter: Vec<f32>,
}

impl Frontend {
    /// A front end for `cfg`.
    ///
    /// ```
    /// use sphinx_am::frontend::{Frontend, FrontendConfig};
    /// let fe = Frontend::new(FrontendConfig::default()).unwrap();
    /// // 1 s at 16 kHz: 98 full frames of 410 samples every 160, plus the zero-padded tail.
    /// assert_eq!(fe.cepstra(&vec![0i16; 16_000]).len(), 99);
    /// assert_eq!(fe.cepstra(&vec![0i16; 409]).len(), 0);
    /// ```
    pub fn new(cfg: FrontendConfig) -> Result<Self> {
        let frame_size = (cfg.wlen * cfg.samprate + 0.5) as usize;
        let frame_shift = (cfg.samprate / cfg.frate as f32 + 0.5) as usize;
        let mut fft_size = 1;
        while fft_size < frame_size {
            fft_size <<= 1;
        }
        let hamming = (0..frame_size / 2)
            .map(|i| 0.54 - 0.46 * (2.0 * PI * i as f64 / (frame_size as f64 - 1.0)).cos())
            .collect();
        let filters = mel_filters(&cfg, fft_size)?;
        let n = cfg.nfilt;
        let freqstep = PI / n as f64;
        let cosine = (0..NCEP)
            .map(|i| {
                (0..n)
                    .map(|j| (freqstep * i as f64 * (j as f64 + 0.5)).cos() as f32)
                    .collect()
            })
            .collect();
        let lifter = (0..NCEP)
            .map(|i| {
                if cfg.lifter == 0 {
                    1.0
                } else {
                    (1.0 + (cfg.lifter / 2) as f64 * (i as f64 * PI / cfg.lifter as f64).sin())
                        as f32
                }
            })
            .collect();
        Ok(Self {
            sqrt_inv_n: (1.0 / n as f64).sqrt() as f32,
            sqrt_inv_2n: (2.0 / n as f64).sqrt() as f32,
            cfg,
            frame_size,
            frame_shift,
            fft_size,
            hamming,
            filters,
            cosine,
            lifter,
        })
    }

    /// Samples per frame and between frames.
    pub fn frame_size_and_shift(&self) -> (usize, usize) {
        (self.frame_size, self.frame_shift)
    }

    /// The cepstra of one utterance of 16-bit samples, as pocketsphinx computes them before
    /// CMN (`mfclogdir`): full frames every shift, then one zero-padded frame of what is left
    /// (none when the audio is shorter than a frame). Noise-removal state starts fresh.
    pub fn cepstra(&self, samples: &[i16]) -> Vec<[f32; NCEP]> {
        let mut out = Vec::new();
        if samples.len() < self.frame_size {
            return out;
        }
        let mut noise = self
            .cfg
            .remove_noise
            .then(|| NoiseStats::new(self.cfg.nfilt));
        let full = 1 + (samples.len() - self.frame_size) / self.frame_shift;
        let mut prior = 0i16;
        for k in 0..=full {
            let start = k * self.frame_shift;
            let end = if k < full {
                start + self.frame_size
            } else {
                // What fe_end_utt holds: the overlap of the next frame plus the leftover.
                samples.len().min(start + self.frame_size)
            };
            let chunk = &samples[start..end];
            out.push(self.frame(chunk, prior, noise.as_mut()));
            prior = if chunk.len() >= self.frame_shift {
                chunk[self.frame_shift - 1]
            } else {
                chunk[chunk.len() - 1]
            };
        }
        out
    }

    /// One frame of `chunk` samples (zero-padded to the FFT size).
    fn frame(&self, chunk: &[i16], prior: i16, noise: Option<&mut NoiseStats>) -> [f32; NCEP] {
        let alpha = self.cfg.alpha as f64;
        let mut re = vec![0f64; self.fft_size];
        for (i, &x) in chunk.iter().enumerate() {
            let before = if i == 0 { prior } else { chunk[i - 1] };
            re[i] = x as f64 - before as f64 * alpha;
        }
        let n = self.frame_size;
        for i in 0..n / 2 {
            re[i] *= self.hamming[i];
            re[n - 1 - i] *= self.hamming[i];
        }
        let mut im = vec![0f64; self.fft_size];
        fft(&mut re, &mut im);
        let spec: Vec<f64> = (0..=self.fft_size / 2)
            .map(|j| re[j] * re[j] + im[j] * im[j])
            .collect();
        let mut mfspec: Vec<f64> = self
            .filters
            .iter()
            .map(|(start, coeffs)| {
                coeffs
                    .iter()
                    .enumerate()
                    .fold(0.0, |acc, (i, &c)| acc + spec[start + i] * c as f64)
            })
            .collect();
        if let Some(ns) = noise {
            ns.remove_noise(&mut mfspec);
        }
        for x in mfspec.iter_mut() {
            *x = (*x + 1e-4).ln();
        }
        let mut cep = [0f32; NCEP];
        let mut c0 = mfspec[0] as f32;
        for &x in &mfspec[1..] {
            c0 = (c0 as f64 + x) as f32;
        }
        cep[0] = c0 * self.sqrt_inv_n;
        for (i, c) in cep.iter_mut().enumerate().skip(1) {
            let mut acc = 0f32;
            for (j, &x) in mfspec.iter().enumerate() {
                acc = (acc as f64 + x * self.cosine[i][j] as f64) as f32;
            }
            *c = acc * self.sqrt_inv_2n;
        }
        for (c, l) in cep.iter_mut().zip(&self.lifter) {
            *c *= l;
        }
        cep
    }
}

/// pocketsphinx's mel filterbank, in its `f32` arithmetic: edges on the mel scale, rounded to
/// FFT bins, triangles of unit area (`fe_build_melfilters`).
fn mel_filters(cfg: &FrontendConfig, fft_size: usize) -> Result<Vec<(usize, Vec<f32>)>> {
    let mel = |x: f32| (2595.0 * (1.0 + x as f64 / 700.0).log10()) as f32;
    let melinv = |x: f32| (700.0 * (10f64.powf(x as f64 / 2595.0) - 1.0)) as f32;
    let melmin = mel(cfg.lowerf);
    let melmax = mel(cfg.upperf);
    let melbw = (melmax - melmin) / (cfg.nfilt as f32 + 1.0);
    let fftfreq = cfg.samprate / fft_size as f32;
    let mut out = Vec::with_capacity(cfg.nfilt);
    for i in 0..cfg.nfilt {
        let mut f = [0f32; 3];
        for (j, fj) in f.iter_mut().enumerate() {
            let x = melinv((i + j) as f32 * melbw + melmin);
            *fj = ((x / fftfreq) as f64 + 0.5) as i32 as f32 * fftfreq;
        }
        let mut start = None;
        let mut width = 0;
        for j in 0..=fft_size / 2 {
            let hz = j as f32 * fftfreq;
            if hz < f[0] {
                continue;
            } else if hz > f[2] || j == fft_size / 2 {
                width = j - start.unwrap_or(j);
                break;
            }
            start.get_or_insert(j);
        }
        let Some(start) = start.filter(|_| width > 0) else {
            return Err(SphinxError::Format {
                path: "feat.params".into(),
                what: format!(
                    "mel filter {i} ({} – {} Hz) covers no FFT bin: too many filters",
                    f[0], f[2]
                ),
            });
        };
        let coeffs = (0..width)
            .map(|j| {
                let hz = (start + j) as f32 * fftfreq;
                let mut lo = (hz - f[0]) / (f[1] - f[0]);
                let mut hi = (f[2] - hz) / (f[2] - f[1]);
                lo *= 2.0 / (f[2] - f[0]);
                hi *= 2.0 / (f[2] - f[0]);
                if lo < hi {
                    lo
                } else {
                    hi
                }
            })
            .collect();
        out.push((start, coeffs));
    }
    Ok(out)
}

/// In-place radix-2 complex FFT (length a power of two).
fn fft(re: &mut [f64], im: &mut [f64]) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let ang = -2.0 * PI / len as f64;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (w_re, w_im) = ((ang * k as f64).cos(), (ang * k as f64).sin());
                let (a, b) = (start + k, start + k + len / 2);
                let (x_re, x_im) = (re[b] * w_re - im[b] * w_im, re[b] * w_im + im[b] * w_re);
                re[b] = re[a] - x_re;
                im[b] = im[a] - x_im;
                re[a] += x_re;
                im[a] += x_im;
            }
        }
        len <<= 1;
    }
}

/// The state of pocketsphinx's noise removal (fe_noise.c, floating-point build).
#[derive(Debug, Clone)]
struct NoiseStats {
    power: Vec<f64>,
    noise: Vec<f64>,
    floor: Vec<f64>,
    peak: Vec<f64>,
    undefined: bool,
}

const SMOOTH_WINDOW: usize = 4;
const LAMBDA_POWER: f64 = 0.7;
const LAMBDA_A: f64 = 0.995;
const LAMBDA_B: f64 = 0.5;
const LAMBDA_T: f64 = 0.85;
const MU_T: f64 = 0.2;
const MAX_GAIN: f64 = 20.0;

impl NoiseStats {
    fn new(n: usize) -> Self {
        Self {
            power: vec![0.0; n],
            noise: vec![0.0; n],
            floor: vec![0.0; n],
            peak: vec![0.0; n],
            undefined: true,
        }
    }

    fn lower_envelope(buf: &[f64], floor: &mut [f64]) {
        for (f, &b) in floor.iter_mut().zip(buf) {
            *f = if b >= *f {
                LAMBDA_A * *f + (1.0 - LAMBDA_A) * b
            } else {
                LAMBDA_B * *f + (1.0 - LAMBDA_B) * b
            };
        }
    }

    // Index loops mirror fe_noise.c statement by statement, so the two can be read side by side.
    #[allow(clippy::needless_range_loop)]
    fn remove_noise(&mut self, mfspec: &mut [f64]) {
        let n = mfspec.len();
        if self.undefined {
            for i in 0..n {
                self.power[i] = mfspec[i];
                self.noise[i] = mfspec[i] / MAX_GAIN;
                self.floor[i] = mfspec[i] / MAX_GAIN;
                self.peak[i] = 0.0;
            }
            self.undefined = false;
        }
        for i in 0..n {
            self.power[i] = LAMBDA_POWER * self.power[i] + (1.0 - LAMBDA_POWER) * mfspec[i];
        }
        Self::lower_envelope(&self.power, &mut self.noise);
        let mut signal: Vec<f64> = (0..n)
            .map(|i| (self.power[i] - self.noise[i]).max(1.0))
            .collect();
        Self::lower_envelope(&signal, &mut self.floor);
        // Temporal masking.
        for i in 0..n {
            let cur = signal[i];
            self.peak[i] *= LAMBDA_T;
            if signal[i] < LAMBDA_T * self.peak[i] {
                signal[i] = self.peak[i] * MU_T;
            }
            if cur > self.peak[i] {
                self.peak[i] = cur;
            }
        }
        for i in 0..n {
            if signal[i] < self.floor[i] {
                signal[i] = self.floor[i];
            }
        }
        let gain: Vec<f64> = (0..n)
            .map(|i| {
                let g = if signal[i] < MAX_GAIN * self.power[i] {
                    signal[i] / self.power[i]
                } else {
                    MAX_GAIN
                };
                g.max(1.0 / MAX_GAIN)
            })
            .collect();
        for i in 0..n {
            let l1 = i.saturating_sub(SMOOTH_WINDOW);
            let l2 = (i + SMOOTH_WINDOW).min(n - 1);
            let coef: f64 = gain[l1..=l2].iter().sum();
            mfspec[i] *= coef / (l2 - l1 + 1) as f64;
        }
    }
}

//! RTFx timing: audio seconds processed per wall-clock second, with the audio duration taken
//! from the data (never from the number of frames a decoder happened to see).

use std::time::{Duration, Instant};

/// Accumulates audio and wall-clock time over many decode calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RtfMeter {
    /// Audio seconds processed.
    pub audio_s: f64,
    /// Wall-clock seconds spent.
    pub wall_s: f64,
}

impl RtfMeter {
    /// A meter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f`, charging its wall time against `audio_s` seconds of audio.
    pub fn time<R>(&mut self, audio_s: f64, f: impl FnOnce() -> R) -> R {
        let t0 = Instant::now();
        let r = f();
        self.add(audio_s, t0.elapsed());
        r
    }

    /// Adds a measured span.
    pub fn add(&mut self, audio_s: f64, wall: Duration) {
        self.audio_s += audio_s;
        self.wall_s += wall.as_secs_f64();
    }

    /// Adds another meter.
    pub fn merge(&mut self, o: &RtfMeter) {
        self.audio_s += o.audio_s;
        self.wall_s += o.wall_s;
    }

    /// Inverse real-time factor: audio seconds / wall seconds (`None` before any time was spent).
    pub fn rtfx(&self) -> Option<f64> {
        (self.wall_s > 0.0).then(|| self.audio_s / self.wall_s)
    }

    /// Real-time factor: wall seconds / audio seconds.
    pub fn rtf(&self) -> Option<f64> {
        (self.audio_s > 0.0).then(|| self.wall_s / self.audio_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtfx_is_audio_over_wall() {
        let mut m = RtfMeter::new();
        assert_eq!(m.rtfx(), None);
        m.add(10.0, Duration::from_millis(500));
        m.add(30.0, Duration::from_millis(1500));
        assert!((m.rtfx().unwrap() - 20.0).abs() < 1e-9);
        assert!((m.rtf().unwrap() - 0.05).abs() < 1e-9);
        let v = m.time(1.0, || 7);
        assert_eq!(v, 7);
        assert!((m.audio_s - 41.0).abs() < 1e-12);
    }
}

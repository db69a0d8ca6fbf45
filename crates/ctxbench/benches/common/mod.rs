//! Timing helpers shared by the benches: on-CPU time of the calling thread and quartiles.

#![allow(dead_code)]

use std::time::Instant;

/// Seconds this thread has run on a CPU (`/proc/thread-self/schedstat`), if the kernel says.
pub fn on_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// On-CPU seconds, or wall seconds since `start` where the kernel gives none.
pub fn now(start: Instant) -> f64 {
    on_cpu_s().unwrap_or_else(|| start.elapsed().as_secs_f64())
}

/// The first quartile, median and third quartile of `v` (linear interpolation).
pub fn quartiles(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let x = p * (s.len() - 1) as f64;
        let (i, f) = (x.floor() as usize, x.fract());
        s[i] + f * (s[(i + 1).min(s.len() - 1)] - s[i])
    };
    (q(0.25), q(0.5), q(0.75))
}

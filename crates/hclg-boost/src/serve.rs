//! Load simulation: many clients stream utterances into one [`OnlinePipeline`] at real-time
//! pace, and the chunk latency shows whether the server keeps up (000 ran 2K clients).
//!
//! Client `c` arrives at `arrival_s` and sends chunk `k` (rows `k·n .. (k+1)·n` of its scores)
//! the moment its audio is complete: at `arrival_s + end_row · frame_s`. The server loop takes
//! every chunk that has arrived (earliest first, at most one per stream, at most `max_batch`),
//! advances them as one batch and answers them all when the batch is done; a chunk's latency
//! is that answer time minus its arrival. Time is a virtual clock advanced by the measured
//! wall time of each batch (and, when no chunk is waiting, jumped to the next arrival): the
//! decoding is real and timed, the idle waiting is not slept — the same schedule a server that
//! slept would follow on an otherwise idle machine, in a fraction of the wall time.

use crate::error::{HclgBoostError, Result};
use crate::online::{Chunk, OnlinePipeline};
use ctx_core::scores::ScoreMatrix;
use std::time::Instant;

/// One simulated client.
#[derive(Debug, Clone)]
pub struct Client<'a> {
    /// Correlation id of its stream.
    pub id: u64,
    /// When it starts speaking (seconds on the virtual clock).
    pub arrival_s: f64,
    /// The utterance it streams (score rows).
    pub scores: &'a ScoreMatrix,
    /// Its context (or none).
    pub context: Option<String>,
}

/// The schedule's settings.
#[derive(Debug, Clone, Copy)]
pub struct LoadConfig {
    /// Rows per chunk (0.5 s of audio in 000).
    pub chunk_rows: usize,
    /// Seconds per score row.
    pub frame_s: f64,
    /// Most chunks advanced in one batch.
    pub max_batch: usize,
}

/// What a simulation measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadReport {
    /// Clients served.
    pub clients: usize,
    /// Chunks answered.
    pub chunks: usize,
    /// Batches run.
    pub batches: usize,
    /// Seconds of audio streamed (all clients).
    pub audio_s: f64,
    /// Seconds the server spent decoding (sum of batch wall times).
    pub busy_s: f64,
    /// Virtual seconds from the first arrival to the last answer.
    pub span_s: f64,
    /// Chunk latency percentiles (nearest rank) and maximum, seconds.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// Largest latency.
    pub max_s: f64,
}

impl LoadReport {
    /// Audio seconds per busy second: the throughput this load ran at.
    pub fn rtfx(&self) -> f64 {
        self.audio_s / self.busy_s.max(1e-12)
    }

    /// Mean chunks per batch.
    pub fn mean_batch(&self) -> f64 {
        self.chunks as f64 / self.batches.max(1) as f64
    }

    /// Whether the server held real time: the 99th-percentile latency below `limit_s`
    /// (a server that falls behind accumulates latency without bound, so this catches it).
    pub fn real_time(&self, limit_s: f64) -> bool {
        self.p99_s < limit_s
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs the schedule (see the module docs). Every client's stream is opened at its first
/// chunk with its context and closed by its last; a decoding error ends the simulation with
/// that client's error.
pub fn simulate(
    p: &mut OnlinePipeline<'_>,
    clients: &[Client<'_>],
    cfg: &LoadConfig,
) -> Result<LoadReport> {
    if cfg.chunk_rows == 0 || cfg.max_batch == 0 || cfg.frame_s.is_nan() || cfg.frame_s <= 0.0 {
        return Err(HclgBoostError::Config(
            "load simulation: chunk rows, batch size and frame shift must be positive".into(),
        ));
    }
    if let Some(c) = clients.iter().find(|c| c.scores.rows() == 0) {
        return Err(HclgBoostError::Config(format!(
            "load simulation: client {} has an empty utterance",
            c.id
        )));
    }
    let chunks_of = |c: &Client<'_>| c.scores.rows().div_ceil(cfg.chunk_rows);
    // When chunk k of client c arrives.
    let ready_at = |c: &Client<'_>, k: usize| {
        let end = ((k + 1) * cfg.chunk_rows).min(c.scores.rows());
        c.arrival_s + end as f64 * cfg.frame_s
    };
    let mut next = vec![0usize; clients.len()];
    let mut latencies = Vec::new();
    let mut report = LoadReport {
        clients: clients.len(),
        audio_s: clients
            .iter()
            .map(|c| c.scores.rows() as f64 * cfg.frame_s)
            .sum(),
        ..LoadReport::default()
    };
    let start = clients
        .iter()
        .map(|c| c.arrival_s)
        .fold(f64::INFINITY, f64::min);
    let mut now = start;
    loop {
        // Waiting chunks, earliest first (ties by client order).
        let mut waiting: Vec<(f64, usize)> = clients
            .iter()
            .enumerate()
            .filter(|(i, c)| next[*i] < chunks_of(c))
            .map(|(i, c)| (ready_at(c, next[i]), i))
            .collect();
        if waiting.is_empty() {
            break;
        }
        waiting.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if waiting[0].0 > now {
            now = waiting[0].0;
        }
        waiting.retain(|w| w.0 <= now);
        waiting.truncate(cfg.max_batch);
        let mut slices = Vec::with_capacity(waiting.len());
        for &(_, i) in &waiting {
            let c = &clients[i];
            let k = next[i];
            if k == 0 {
                p.open(c.id, c.context.as_deref())?;
            }
            let rows = k * cfg.chunk_rows..((k + 1) * cfg.chunk_rows).min(c.scores.rows());
            slices.push(c.scores.slice_rows(rows));
        }
        let batch: Vec<Chunk<'_>> = waiting
            .iter()
            .zip(&slices)
            .map(|(&(_, i), s)| Chunk {
                id: clients[i].id,
                scores: s,
                first: next[i] == 0,
                last: next[i] + 1 == chunks_of(&clients[i]),
            })
            .collect();
        let t = Instant::now();
        let res = p.feed(&batch);
        let d = t.elapsed().as_secs_f64();
        now += d;
        report.busy_s += d;
        report.batches += 1;
        for (r, &(at, i)) in res.into_iter().zip(&waiting) {
            r?;
            latencies.push(now - at);
            next[i] += 1;
        }
    }
    latencies.sort_by(f64::total_cmp);
    report.chunks = latencies.len();
    report.span_s = now - start;
    report.p50_s = percentile(&latencies, 50.0);
    report.p90_s = percentile(&latencies, 90.0);
    report.p99_s = percentile(&latencies, 99.0);
    report.max_s = latencies.last().copied().unwrap_or(0.0);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[3.0], 90.0), 3.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 50.0), 2.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}

//! Streaming under constant arrivals (001 §4.2; the load simulation of 000): `streams` clients
//! each send audio at real-time pace in chunks of `chunk_s`, one utterance after another
//! (cycling through the dataset so the load stays constant until every utterance has been
//! decoded once); a server batches whatever chunks have arrived and decodes them.
//!
//! Time is simulated, compute is real: a chunk *arrives* when its audio has been spoken (client
//! start offsets are spread at random over one chunk, seeded); the server takes every arrived
//! chunk (earliest first, at most `max_batch`, one per stream), decodes the batch on this
//! machine and the simulated clock advances by the measured wall time. Per chunk: queue latency
//! (waiting for the server), compute latency (its batch's decode) and their sum. The server keeps
//! up when the audio it decodes per simulated second reaches `streams` (the RTFx held).

use anyhow::Result;
use ctx_core::scores::ScoreMatrix;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// What the load simulation runs.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Concurrent clients.
    pub streams: usize,
    /// Audio per chunk (seconds).
    pub chunk_s: f64,
    /// Seconds per score row.
    pub frame_s: f64,
    /// At most this many chunks per server batch.
    pub max_batch: usize,
    /// Seed of the start offsets.
    pub seed: u64,
}

/// A streaming decoder the simulation drives (channels by id).
pub trait ChunkServer {
    /// Opens channel `id` for utterance `utt` (index in the dataset).
    fn open(&mut self, id: u64, utt: usize) -> Result<()>;
    /// Decodes one chunk of each named channel.
    fn push(&mut self, chunks: &[(u64, &ScoreMatrix)]) -> Result<()>;
    /// Closes a channel whose utterance ended: its words (all segments).
    fn close(&mut self, id: u64) -> Result<Vec<u32>>;
}

/// What a simulation measured.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Per chunk: milliseconds waiting for the server.
    pub queue_ms: Vec<f64>,
    /// Per chunk: milliseconds of its batch's decode.
    pub compute_ms: Vec<f64>,
    /// Audio decoded (seconds, repeats included).
    pub audio_s: f64,
    /// Simulated seconds from the first audio to the last result.
    pub elapsed_s: f64,
    /// Wall seconds the server spent decoding.
    pub compute_s: f64,
    /// Server batches.
    pub batches: usize,
    /// Words of each utterance's first decode, in dataset order.
    pub words: Vec<Vec<u32>>,
}

impl LoadReport {
    /// Mean of a sample.
    pub fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }

    /// The `q` quantile (nearest rank) of a sample.
    pub fn quantile(v: &[f64], q: f64) -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let i = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
        s[i]
    }

    /// Total latency per chunk (queue + compute), milliseconds.
    pub fn total_ms(&self) -> Vec<f64> {
        self.queue_ms
            .iter()
            .zip(&self.compute_ms)
            .map(|(q, c)| q + c)
            .collect()
    }

    /// Audio seconds decoded per simulated second (at most `streams`).
    pub fn rtfx_held(&self) -> f64 {
        self.audio_s / self.elapsed_s.max(1e-9)
    }
}

/// The load measures of a report (points.csv columns): latency mean by part, p50 and p99 of
/// the total, the mean batch; `rtfx` is the audio held per simulated second.
pub fn put_measures(r: &LoadReport, m: &mut std::collections::BTreeMap<String, f64>) {
    let total = r.total_ms();
    for (k, v) in [
        ("rtfx", r.rtfx_held()),
        ("latency_compute_ms", LoadReport::mean(&r.compute_ms)),
        ("latency_queue_ms", LoadReport::mean(&r.queue_ms)),
        ("latency_total_ms", LoadReport::mean(&total)),
        ("latency_p50_ms", LoadReport::quantile(&total, 0.5)),
        ("latency_p90_ms", LoadReport::quantile(&total, 0.9)),
        ("latency_p99_ms", LoadReport::quantile(&total, 0.99)),
        (
            "batch_mean",
            r.queue_ms.len() as f64 / r.batches.max(1) as f64,
        ),
    ] {
        m.insert(k.to_string(), v);
    }
}

struct Client {
    /// Channel id of the current utterance.
    id: u64,
    /// Utterance index.
    utt: usize,
    /// Simulated time the utterance's audio starts.
    start: f64,
    /// Next chunk (0-based).
    chunk: usize,
}

/// Runs the simulation over utterances of `durations` (seconds), `scores(i)` giving utterance
/// i's score matrix (made when a client starts it, dropped when no client streams it).
pub fn simulate(
    cfg: &LoadConfig,
    durations: &[f64],
    scores: &(dyn Fn(usize) -> Result<ScoreMatrix> + Sync),
    server: &mut dyn ChunkServer,
) -> Result<LoadReport> {
    let n = durations.len();
    if n == 0 || cfg.streams == 0 {
        anyhow::bail!("a load simulation needs utterances and at least one stream");
    }
    let mut rng = ctx_data::rng::Rng::new(cfg.seed);
    let chunk_rows = ((cfg.chunk_s / cfg.frame_s).round() as usize).max(1);
    let mut cache: HashMap<usize, (Arc<ScoreMatrix>, usize)> = HashMap::new();
    let mut next_utt = 0usize;
    let mut next_id = 0u64;
    let mut report = LoadReport {
        words: vec![Vec::new(); n],
        ..LoadReport::default()
    };
    let mut done = vec![false; n];
    let mut remaining = n;
    let mut clients: Vec<Client> = Vec::with_capacity(cfg.streams);
    let open = |utt: usize,
                start: f64,
                server: &mut dyn ChunkServer,
                cache: &mut HashMap<usize, (Arc<ScoreMatrix>, usize)>,
                next_id: &mut u64|
     -> Result<Client> {
        let e = match cache.get_mut(&utt) {
            Some(e) => e,
            None => cache.entry(utt).or_insert((Arc::new(scores(utt)?), 0)),
        };
        e.1 += 1;
        let id = *next_id;
        *next_id += 1;
        server.open(id, utt)?;
        Ok(Client {
            id,
            utt,
            start,
            chunk: 0,
        })
    };
    for _ in 0..cfg.streams {
        let start = rng.uniform() * cfg.chunk_s;
        let c = open(next_utt % n, start, server, &mut cache, &mut next_id)?;
        next_utt += 1;
        clients.push(c);
    }
    let rows_of =
        |c: &Client, cache: &HashMap<usize, (Arc<ScoreMatrix>, usize)>| cache[&c.utt].0.rows();
    // When chunk k of a client's utterance has been spoken.
    let arrival = |c: &Client, rows: usize| -> f64 {
        let end = ((c.chunk + 1) * chunk_rows).min(rows);
        c.start + end as f64 * cfg.frame_s
    };
    let first = clients
        .iter()
        .map(|c| arrival(c, rows_of(c, &cache)))
        .fold(f64::INFINITY, f64::min);
    let t0 = clients
        .iter()
        .map(|c| c.start)
        .fold(f64::INFINITY, f64::min);
    let mut now = first;
    while remaining > 0 {
        let mut ready: Vec<(f64, usize)> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| (arrival(c, rows_of(c, &cache)), i))
            .filter(|(a, _)| *a <= now)
            .collect();
        if ready.is_empty() {
            now = clients
                .iter()
                .map(|c| arrival(c, rows_of(c, &cache)))
                .fold(f64::INFINITY, f64::min);
            continue;
        }
        ready.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        ready.truncate(cfg.max_batch.max(1));
        let mats: Vec<ScoreMatrix> = ready
            .iter()
            .map(|&(_, i)| {
                let c = &clients[i];
                let m = &cache[&c.utt].0;
                let a = c.chunk * chunk_rows;
                m.slice_rows(a..(a + chunk_rows).min(m.rows()))
            })
            .collect();
        let chunks: Vec<(u64, &ScoreMatrix)> = ready
            .iter()
            .zip(&mats)
            .map(|(&(_, i), m)| (clients[i].id, m))
            .collect();
        let t = Instant::now();
        server.push(&chunks)?;
        let mut finished = Vec::new();
        for &(_, i) in &ready {
            let c = &clients[i];
            if (c.chunk + 1) * chunk_rows >= rows_of(c, &cache) {
                let words = server.close(c.id)?;
                finished.push((i, words));
            }
        }
        let dt = t.elapsed().as_secs_f64();
        report.compute_s += dt;
        report.batches += 1;
        for &(a, i) in &ready {
            report.queue_ms.push((now - a) * 1e3);
            report.compute_ms.push(dt * 1e3);
            let c = &clients[i];
            let a0 = c.chunk * chunk_rows;
            let rows = (a0 + chunk_rows).min(rows_of(c, &cache)) - a0;
            report.audio_s += rows as f64 * cfg.frame_s;
        }
        now += dt;
        for &(_, i) in &ready {
            clients[i].chunk += 1;
        }
        for (i, words) in finished {
            let (utt, end) = {
                let c = &clients[i];
                (c.utt, c.start + rows_of(c, &cache) as f64 * cfg.frame_s)
            };
            if !done[utt] {
                done[utt] = true;
                remaining -= 1;
                report.words[utt] = words;
            }
            let e = cache.get_mut(&utt).expect("in flight");
            e.1 -= 1;
            if e.1 == 0 {
                cache.remove(&utt);
            }
            // The client goes straight on with the next utterance of the cycle.
            let next = next_utt % n;
            next_utt += 1;
            clients[i] = open(next, end, server, &mut cache, &mut next_id)?;
        }
    }
    report.elapsed_s = now - t0;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that sleeps a fixed time per batch and returns the utterance index as its word.
    struct Sleepy {
        per_batch: std::time::Duration,
        open: HashMap<u64, usize>,
        pushed: usize,
    }

    impl ChunkServer for Sleepy {
        fn open(&mut self, id: u64, utt: usize) -> Result<()> {
            assert!(self.open.insert(id, utt).is_none());
            Ok(())
        }
        fn push(&mut self, chunks: &[(u64, &ScoreMatrix)]) -> Result<()> {
            for (id, _) in chunks {
                assert!(self.open.contains_key(id));
            }
            self.pushed += chunks.len();
            std::thread::sleep(self.per_batch);
            Ok(())
        }
        fn close(&mut self, id: u64) -> Result<Vec<u32>> {
            Ok(vec![self.open.remove(&id).unwrap() as u32])
        }
    }

    #[test]
    fn a_fast_server_keeps_up_and_every_utterance_is_decoded_once_in_order() {
        let durations = vec![1.0, 2.0, 0.7, 1.5];
        let cfg = LoadConfig {
            streams: 3,
            chunk_s: 0.5,
            frame_s: 0.1,
            max_batch: 16,
            seed: 7,
        };
        let mut s = Sleepy {
            per_batch: std::time::Duration::from_micros(100),
            open: HashMap::new(),
            pushed: 0,
        };
        let scores = |i: usize| Ok(ScoreMatrix::zeros((durations[i] * 10.0) as usize, 2));
        let r = simulate(&cfg, &durations, &scores, &mut s).unwrap();
        assert_eq!(r.words, vec![vec![0], vec![1], vec![2], vec![3]]);
        // Chunks: ceil(rows / 5) per utterance decoded (repeats included).
        assert_eq!(r.queue_ms.len(), s.pushed);
        // Nothing waits long behind a 0.1 ms server: queueing stays far below a chunk.
        assert!(LoadReport::quantile(&r.total_ms(), 0.99) < 100.0);
        // Three clients at real-time pace: about three audio seconds per second.
        let held = r.rtfx_held();
        assert!(held > 2.0 && held <= 3.0 + 1e-6, "{held}");
    }

    #[test]
    fn a_slow_server_queues_and_falls_behind_real_time() {
        let durations = vec![2.0; 6];
        let cfg = LoadConfig {
            streams: 6,
            chunk_s: 0.5,
            frame_s: 0.1,
            max_batch: 2,
            seed: 1,
        };
        // Two chunks per 0.3 s batch: six streams need three batches per 0.5 s, 0.9 s.
        let mut s = Sleepy {
            per_batch: std::time::Duration::from_millis(300),
            open: HashMap::new(),
            pushed: 0,
        };
        let scores = |i: usize| Ok(ScoreMatrix::zeros((durations[i] * 10.0) as usize, 2));
        let r = simulate(&cfg, &durations, &scores, &mut s).unwrap();
        assert!(r.rtfx_held() < 6.0 * 0.7, "{}", r.rtfx_held());
        assert!(LoadReport::mean(&r.queue_ms) > 300.0);
        assert_eq!(LoadReport::quantile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert_eq!(LoadReport::quantile(&[3.0, 1.0, 2.0], 0.99), 3.0);
    }
}

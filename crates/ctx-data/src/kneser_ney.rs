//! Interpolated modified Kneser-Ney estimation (Chen & Goodman 1998, as KenLM's `lmplz` does it),
//! producing an [`ArpaLm`].
//!
//! - Counts: the highest order keeps raw counts; a lower-order n-gram gets its continuation count,
//!   the number of distinct words seen before it, except n-grams that start with `<s>`, which keep
//!   raw counts (nothing can precede `<s>`).
//! - Discounts per order from the counts-of-counts `t1..t4` of those adjusted counts:
//!   `Y = t1 / (t1 + 2 t2)`, `D1 = 1 − 2Y t2/t1`, `D2 = 2 − 3Y t3/t2`, `D3+ = 3 − 4Y t4/t3`. When
//!   the counts are too few for that (a zero `t`, or a discount outside `(0, k)`), the order uses the
//!   fallback discounts (0.5, 1.0, 1.5 by default, `lmplz --discount_fallback`), and says so.
//! - `p(w | h) = (a(hw) − D(a(hw))) / Σ a(h·) + γ(h) p(w | h')`, `γ(h) = (D1 N1(h·) + D2 N2(h·) +
//!   D3 N3+(h·)) / Σ a(h·)`; unigrams interpolate with the uniform distribution over the vocabulary
//!   (every word, `</s>` and `<unk>`; `<s>` is never predicted and gets log10 p = −99).
//! - In ARPA form a listed n-gram carries its interpolated probability and a context carries `γ` as
//!   its back-off, so the ARPA back-off rule reproduces the interpolated model exactly and every
//!   context's distribution sums to one.
//! - Pruning drops n-grams (order ≥ 2) whose raw count is at most the order's threshold, unless they
//!   are the context of a kept longer n-gram; contexts that lost n-grams get their back-off weight
//!   recomputed so that their distribution still sums to one.

use ctx_core::arpa::{ArpaLm, BOS, EOS, UNK};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Errors of the estimator.
#[derive(Debug, thiserror::Error)]
pub enum KnError {
    /// Bad settings or input.
    #[error("{0}")]
    Invalid(String),
    /// The resulting model could not be built.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
}

/// How discounts are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Discounts {
    /// From counts-of-counts, with the given fallback `(D1, D2, D3+)` for degenerate orders.
    Estimate {
        /// Used where the estimate is impossible.
        fallback: [f64; 3],
    },
    /// The same fixed `(D1, D2, D3+)` for every order.
    Fixed([f64; 3]),
}

/// Estimator settings.
#[derive(Debug, Clone, PartialEq)]
pub struct KnOptions {
    /// Model order (1 = unigram).
    pub order: usize,
    /// Discount choice.
    pub discounts: Discounts,
    /// Per order (index 0 = bigrams), prune n-grams whose raw count is at most this; empty = none.
    pub prune: Vec<u64>,
}

impl Default for KnOptions {
    fn default() -> Self {
        Self {
            order: 3,
            discounts: Discounts::Estimate {
                fallback: [0.5, 1.0, 1.5],
            },
            prune: Vec::new(),
        }
    }
}

/// Discounts `(D1, D2, D3+)` from counts-of-counts `t[0..4]` = number of n-grams seen 1..4 times;
/// `None` when they do not give valid discounts.
pub fn discounts_from_counts(t: [u64; 4]) -> Option<[f64; 3]> {
    if t.contains(&0) {
        return None;
    }
    let [t1, t2, t3, t4] = t.map(|x| x as f64);
    let y = t1 / (t1 + 2.0 * t2);
    let d = [
        1.0 - 2.0 * y * t2 / t1,
        2.0 - 3.0 * y * t3 / t2,
        3.0 - 4.0 * y * t4 / t3,
    ];
    let ok = d
        .iter()
        .enumerate()
        .all(|(k, &v)| v > 0.0 && v < (k + 1) as f64);
    ok.then_some(d)
}

/// What the estimator did, for logs and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct KnReport {
    /// Discounts used per order (index 0 = unigrams).
    pub discounts: Vec<[f64; 3]>,
    /// Orders (1-based) that used the fallback discounts.
    pub fallback_orders: Vec<usize>,
    /// n-grams listed per order.
    pub counts: Vec<usize>,
    /// n-grams pruned per order.
    pub pruned: Vec<usize>,
}

fn discount(d: &[f64; 3], a: u64) -> f64 {
    match a {
        0 => 0.0,
        1 => d[0],
        2 => d[1],
        _ => d[2],
    }
}

/// Estimates an LM from sentences of words (`<s>` and `</s>` are added; the words must not contain
/// them). Returns the model and a report.
pub fn estimate<S: AsRef<str>>(
    sentences: &[Vec<S>],
    opts: &KnOptions,
) -> Result<(ArpaLm, KnReport), KnError> {
    let n_max = opts.order;
    if n_max == 0 {
        return Err(KnError::Invalid("the LM order must be at least 1".into()));
    }
    // Vocabulary: specials first, then words sorted, so ids (and files) are deterministic.
    let mut words: BTreeSet<&str> = BTreeSet::new();
    for (i, s) in sentences.iter().enumerate() {
        for w in s {
            let w = w.as_ref();
            if w == BOS || w == EOS {
                return Err(KnError::Invalid(format!(
                    "sentence {i} contains {w}; it is added by the estimator"
                )));
            }
            if w.is_empty() || w.contains(char::is_whitespace) {
                return Err(KnError::Invalid(format!(
                    "sentence {i} has a token with whitespace or none: {w:?}"
                )));
            }
            words.insert(w);
        }
    }
    if sentences.is_empty() {
        return Err(KnError::Invalid("no training sentences".into()));
    }
    let mut vocab: Vec<String> = vec![UNK.into(), BOS.into(), EOS.into()];
    vocab.extend(words.iter().filter(|w| **w != UNK).map(|w| w.to_string()));
    let ids: HashMap<&str, u32> = vocab
        .iter()
        .enumerate()
        .map(|(i, w)| (w.as_str(), i as u32))
        .collect();
    let (bos, eos) = (1u32, 2u32);

    // Raw counts of every n-gram ending at a predicted position.
    let mut raw: Vec<HashMap<Vec<u32>, u64>> = vec![HashMap::new(); n_max];
    for s in sentences {
        let mut toks = Vec::with_capacity(s.len() + 2);
        toks.push(bos);
        toks.extend(s.iter().map(|w| ids[w.as_ref()]));
        toks.push(eos);
        for i in 1..toks.len() {
            for n in 1..=n_max.min(i + 1) {
                *raw[n - 1].entry(toks[i + 1 - n..=i].to_vec()).or_default() += 1;
            }
        }
    }
    // <s> as a unigram context (never predicted).
    if n_max > 1 {
        raw[0].entry(vec![bos]).or_insert(0);
    }

    // Pruning, from the top order down; keep contexts of kept longer n-grams.
    let mut pruned = vec![0usize; n_max];
    for n in (2..=n_max).rev() {
        let thr = opts.prune.get(n - 2).copied().unwrap_or(0);
        if thr == 0 {
            continue;
        }
        let needed: BTreeSet<Vec<u32>> = if n < n_max {
            raw[n].keys().map(|g| g[..n].to_vec()).collect()
        } else {
            BTreeSet::new()
        };
        let before = raw[n - 1].len();
        raw[n - 1].retain(|g, c| *c > thr || needed.contains(g));
        pruned[n - 1] = before - raw[n - 1].len();
    }

    // Adjusted counts: continuation counts below the top order, raw for <s>-initial n-grams.
    // Continuation counts come from the unpruned (n+1)-grams' suffixes, so they do not depend on
    // pruning; recount them from the sentences.
    let mut adj: Vec<HashMap<Vec<u32>, u64>> = raw.clone();
    if n_max > 1 {
        let mut seen: Vec<BTreeSet<Vec<u32>>> = vec![BTreeSet::new(); n_max];
        for s in sentences {
            let mut toks = vec![bos];
            toks.extend(s.iter().map(|w| ids[w.as_ref()]));
            toks.push(eos);
            for i in 1..toks.len() {
                for n in 2..=n_max.min(i + 1) {
                    seen[n - 1].insert(toks[i + 1 - n..=i].to_vec());
                }
            }
        }
        for n in 1..n_max {
            let mut cont: HashMap<Vec<u32>, u64> = HashMap::new();
            for g in &seen[n] {
                *cont.entry(g[1..].to_vec()).or_default() += 1;
            }
            for (g, a) in adj[n - 1].iter_mut() {
                if g[0] != bos {
                    *a = cont.get(g).copied().unwrap_or(0);
                }
            }
        }
    }

    // Discounts per order.
    let mut report = KnReport {
        discounts: Vec::new(),
        fallback_orders: Vec::new(),
        counts: Vec::new(),
        pruned,
    };
    for (n, counts) in adj.iter().enumerate() {
        let d = match opts.discounts {
            Discounts::Fixed(d) => d,
            Discounts::Estimate { fallback } => {
                let mut t = [0u64; 4];
                for (g, &a) in counts {
                    if (1..=4).contains(&a) && !(n == 0 && g[0] == bos) {
                        t[a as usize - 1] += 1;
                    }
                }
                discounts_from_counts(t).unwrap_or_else(|| {
                    report.fallback_orders.push(n + 1);
                    fallback
                })
            }
        };
        for (k, &v) in d.iter().enumerate() {
            if !(v >= 0.0 && v <= (k + 1) as f64) {
                return Err(KnError::Invalid(format!(
                    "discount D{} = {v} is outside [0, {}]",
                    k + 1,
                    k + 1
                )));
            }
        }
        report.discounts.push(d);
    }

    // Probabilities, order by order; `prob` and `bo` hold linear values.
    let v_size = (vocab.len() - 1) as f64; // every word but <s>
    let mut prob: Vec<HashMap<Vec<u32>, f64>> = vec![HashMap::new(); n_max];
    let mut bo: Vec<HashMap<Vec<u32>, f64>> = vec![HashMap::new(); n_max];
    // Query of the model built so far (orders < n): the ARPA back-off rule.
    fn lower(prob: &[HashMap<Vec<u32>, f64>], bo: &[HashMap<Vec<u32>, f64>], g: &[u32]) -> f64 {
        let n = g.len();
        if let Some(&p) = prob[n - 1].get(g) {
            return p;
        }
        let h = &g[..n - 1];
        let b = bo[n - 2].get(h).copied().unwrap_or(1.0);
        b * lower(prob, bo, &g[1..])
    }
    for n in 1..=n_max {
        let d = report.discounts[n - 1];
        // Group by context.
        let mut groups: BTreeMap<Vec<u32>, Vec<(u32, u64)>> = BTreeMap::new();
        for (g, &a) in &adj[n - 1] {
            if n == 1 && g[0] == bos {
                continue;
            }
            groups
                .entry(g[..n - 1].to_vec())
                .or_default()
                .push((g[n - 1], a));
        }
        if n == 1 {
            // Unigrams: every vocabulary word but <s>, seen or not.
            let list = groups.entry(Vec::new()).or_default();
            let have: BTreeSet<u32> = list.iter().map(|x| x.0).collect();
            for w in 0..vocab.len() as u32 {
                if w != bos && !have.contains(&w) {
                    list.push((w, 0));
                }
            }
        }
        for (h, list) in groups {
            let total: u64 = list.iter().map(|x| x.1).sum();
            let (gamma, share) = if total == 0 {
                (1.0, 0.0)
            } else {
                let mass: f64 = list.iter().map(|&(_, a)| discount(&d, a)).sum();
                (mass / total as f64, 1.0 / total as f64)
            };
            for &(w, a) in &list {
                let mut g = h.clone();
                g.push(w);
                let lower_p = if n == 1 {
                    1.0 / v_size
                } else {
                    lower(&prob, &bo, &g[1..])
                };
                let p = (a as f64 - discount(&d, a)) * share + gamma * lower_p;
                prob[n - 1].insert(g, p);
            }
            if n > 1 {
                bo[n - 2].insert(h, gamma);
            }
        }
        if n == 1 && n_max > 1 {
            bo[0].entry(vec![bos]).or_insert(1.0);
        }
    }

    // Contexts that lost n-grams to pruning: renormalise their back-off so they sum to one.
    if report.pruned.iter().any(|&p| p > 0) {
        for n in 2..=n_max {
            let mut kept: BTreeMap<Vec<u32>, (f64, f64)> = BTreeMap::new();
            for (g, &p) in &prob[n - 1] {
                let e = kept.entry(g[..n - 1].to_vec()).or_default();
                e.0 += p;
                e.1 += lower(&prob, &bo, &g[1..]);
            }
            for (h, (p_kept, lower_kept)) in kept {
                let denom = 1.0 - lower_kept;
                if denom > 1e-12 {
                    bo[n - 2].insert(h, ((1.0 - p_kept) / denom).max(0.0));
                }
            }
        }
    }

    // Assemble the ARPA model, n-grams sorted by word ids.
    let mut orders: Vec<Vec<(Vec<String>, f32, f32)>> = Vec::with_capacity(n_max);
    for n in 1..=n_max {
        let mut grams: Vec<Vec<u32>> = prob[n - 1].keys().cloned().collect();
        if n == 1 {
            grams.push(vec![bos]);
        }
        grams.sort();
        let mut entries = Vec::with_capacity(grams.len());
        for g in grams {
            let p = if n == 1 && g[0] == bos {
                -99.0
            } else {
                prob[n - 1][&g].log10() as f32
            };
            let b = if n < n_max {
                bo[n - 1].get(&g).map_or(0.0, |b| b.log10() as f32)
            } else {
                0.0
            };
            entries.push((g.iter().map(|&i| vocab[i as usize].clone()).collect(), p, b));
        }
        report.counts.push(entries.len());
        orders.push(entries);
    }
    Ok((ArpaLm::from_entries(orders)?, report))
}

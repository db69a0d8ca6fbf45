//! On-the-fly G-boosting's per-utterance boosters (003 §3.1.3, "online"): each stream's list
//! as a word automaton composed during the search.

use crate::pipeline::lists::{list_of, static_list, ListKind};
use crate::pipeline::search::{decode_indexed, DecodeRun, DecodeSettings};
use crate::pipeline::setup::Setup;
use anyhow::{anyhow, bail, Result};
use ctx_data::dataset::{Dataset, Subset};
use ctx_data::registry::Registry;
use ctx_graph::gboost::GBoostReport;
use rayon::prelude::*;
use std::time::Instant;
use wfst_search::Booster;

/// What on-the-fly G-boosting is asked to do: which list, which automaton, which discount.
#[derive(Debug, Clone, PartialEq)]
pub struct OtfRequest {
    /// A static list name (see [`static_list`]) for the whole set, or with `per_utterance` a
    /// list kind (see [`ListKind::parse`]) chosen per utterance.
    pub list: String,
    /// The exact LM difference ([`OtfGBoost::lm_booster`]) instead of the phrase-prefix
    /// automaton.
    pub exact: bool,
    /// Discount per boosted n-gram (negative = boost).
    pub discount: f32,
    /// One list per utterance (built while decoding, so its time counts) instead of one list
    /// for the set.
    pub per_utterance: bool,
}

/// The boosters of a request, one per utterance in dataset order.
#[derive(Debug, Clone)]
pub struct OtfBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// What G-boosting kept and changed: summed over utterances for per-utterance lists, the
    /// list's own counts for a set list (as static G-boosting reports it).
    pub report: GBoostReport,
    /// Seconds spent building the boosters.
    pub build_s: f64,
    /// Whether the lists came per utterance.
    pub per_utterance: bool,
}

impl OtfBoosters {
    /// Decodes the setup, each utterance with its booster.
    pub fn decode(&self, setup: &Setup, settings: &DecodeSettings) -> Result<DecodeRun> {
        decode_indexed(setup, settings, &|i| self.boosters[i].clone())
    }

    /// Build seconds that count in RTFx: lists that arrive per utterance are compiled while
    /// decoding; one list for the set is prepared once, like a graph.
    pub fn context_s(&self) -> f64 {
        if self.per_utterance {
            self.build_s
        } else {
            0.0
        }
    }
}

/// The boosters of on-the-fly G-boosting for every utterance of `setup` (prepared with
/// [`SetupOptions::gboost_otf`]; `None` otherwise), one build per distinct list, in parallel on
/// `threads`. A set list comes from the full set (`name` in the registry), as for static
/// G-boosting, even when `subset` is the quick one.
pub fn otf_boosters(
    reg: &Registry,
    name: &str,
    setup: &Setup,
    subset: Subset,
    req: &OtfRequest,
    threads: usize,
) -> Result<Option<OtfBoosters>> {
    let Some(otf) = &setup.otf else {
        return Ok(None);
    };
    let t = Instant::now();
    let utts = &setup.dataset.utterances;
    let lists: Vec<Vec<Vec<String>>> = if req.per_utterance {
        let kind = ListKind::parse(&req.list).ok_or_else(|| {
            anyhow!(
                "on-the-fly G-boosting: unknown per-utterance list '{}' (sequences, unigrams, gt, list:NAME)",
                req.list
            )
        })?;
        if let ListKind::Global(n) = &kind {
            if !setup.dataset.global_lists.contains_key(n) {
                bail!("dataset {} has no global list '{n}'", setup.dataset.name);
            }
        }
        utts.iter()
            .map(|u| list_of(setup, u, &kind).phrases)
            .collect()
    } else {
        let full = match subset {
            Subset::Quick => Some(Dataset::load(reg, name, Subset::Full)?),
            Subset::Full => None,
        };
        let l = static_list(full.as_ref().unwrap_or(&setup.dataset), &req.list)?;
        vec![l; utts.len()]
    };
    let mut distinct: Vec<&Vec<Vec<String>>> = lists.iter().collect();
    distinct.sort();
    distinct.dedup();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()?;
    let built: Vec<(Booster, GBoostReport)> = pool.install(|| {
        distinct
            .par_iter()
            .map(|l| {
                if req.exact {
                    otf.lm_booster((*l).clone(), req.discount)
                } else {
                    otf.phrase_booster(l, req.discount)
                }
            })
            .collect::<Result<_>>()
    })?;
    let mut boosters = Vec::with_capacity(utts.len());
    let mut report = GBoostReport::default();
    for l in &lists {
        let i = distinct
            .binary_search(&l)
            .expect("every list is among the distinct ones");
        let (b, r) = &built[i];
        boosters.push(b.clone());
        report.phrases += r.phrases;
        report.kept += r.kept;
        report.dropped += r.dropped;
        report.discounted += r.discounted;
        report.added += r.added;
    }
    if !req.per_utterance {
        if let Some((_, r)) = built.first() {
            report = r.clone();
        }
    }
    Ok(Some(OtfBoosters {
        boosters,
        report,
        build_s: t.elapsed().as_secs_f64(),
        per_utterance: req.per_utterance,
    }))
}

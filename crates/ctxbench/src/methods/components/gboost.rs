//! On-the-fly G-boosting's per-utterance boosters (003 §3.1.3, "online"): each stream's list
//! as a word automaton composed during the search.

use crate::pipeline::lists::{static_list, ListKind};
use crate::pipeline::search::{decode_indexed, DecodeRun, DecodeSettings};
use crate::pipeline::setup::Setup;
use crate::pipeline::utterance_lists::list_of;
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
        crate::pipeline::lists::require_named(&setup.dataset, &kind)?;
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

/// How G-boosting is applied (`gboost_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GBoostMode {
    /// The graph compiled from the boosted G.
    Static,
    /// The unboosted graph with the phrase-prefix automaton composed during the search.
    OnTheFly,
    /// The unboosted graph with the exact G_boosted − G composed during the search.
    OnTheFlyLm,
}

impl std::str::FromStr for GBoostMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "static" => Ok(Self::Static),
            "on-the-fly" => Ok(Self::OnTheFly),
            "on-the-fly-lm" => Ok(Self::OnTheFlyLm),
            _ => Err(format!(
                "gboost_mode '{s}' (static, on-the-fly or on-the-fly-lm)"
            )),
        }
    }
}

impl std::fmt::Display for GBoostMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Static => "static",
            Self::OnTheFly => "on-the-fly",
            Self::OnTheFlyLm => "on-the-fly-lm",
        })
    }
}

crate::choice_setting!(GBoostMode);

crate::settings_block! {
    /// G-boosting's settings (003 §3.1.3).
    pub struct GBoost in "g-boosting" {
        /// static list G is boosted towards (sequences, unigrams, gt or a global list)
        gboost_list: Option<String> = None => required; old "gboost",
        /// G-boosting discount per boosted n-gram (graph units; negative = boost)
        gboost_discount: f64 = -2.0,
        /// static (HCLG compiled from the boosted G), on-the-fly (unboosted HCLG + the
        /// phrase-prefix automaton composed during the search) or on-the-fly-lm (+ the exact
        /// G_boosted − G)
        gboost_mode: GBoostMode = GBoostMode::Static,
        /// set (one list for the whole set) or utterance (each utterance's own list:
        /// sequences, unigrams, gt, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH; on-the-fly only)
        gboost_scope: String = "set".into(),
    }
}

impl GBoost {
    /// Whether the list is composed during the search (the graph stays unboosted).
    pub fn on_the_fly(&self) -> bool {
        self.gboost_mode != GBoostMode::Static
    }

    /// Whether each utterance has its own list.
    pub fn per_utterance(&self) -> bool {
        self.gboost_scope == "utterance"
    }

    /// Checks the values and their combination.
    pub fn check(&self) -> Result<()> {
        match self.gboost_scope.as_str() {
            "set" => {}
            "utterance" => {
                if !self.on_the_fly() {
                    bail!("gboost_scope 'utterance' needs gboost_mode 'on-the-fly' (a static graph has one list)");
                }
                if let Some(l) = &self.gboost_list {
                    if ListKind::parse(l).is_none() {
                        bail!(
                            "gboost_list '{l}' per utterance (sequences, unigrams, gt, list:NAME)"
                        );
                    }
                }
            }
            v => bail!("gboost_scope '{v}' (set or utterance)"),
        }
        Ok(())
    }

    /// The static boost of the graph (`None` without a list or on the fly).
    pub fn static_boost(&self) -> Option<crate::pipeline::StaticBoost> {
        let list = self.gboost_list.as_ref().filter(|_| !self.on_the_fly())?;
        Some(crate::pipeline::StaticBoost {
            list: list.clone(),
            discount: self.gboost_discount as f32,
        })
    }

    /// The on-the-fly request (`None` without a list or for a static graph).
    pub fn request(&self) -> Option<OtfRequest> {
        let list = self.gboost_list.as_ref().filter(|_| self.on_the_fly())?;
        Some(OtfRequest {
            list: list.clone(),
            exact: self.gboost_mode == GBoostMode::OnTheFlyLm,
            discount: self.gboost_discount as f32,
            per_utterance: self.per_utterance(),
        })
    }
}

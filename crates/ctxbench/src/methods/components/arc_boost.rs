//! Arc boosting (000 §4.2, Algorithm 1): the HCLG arcs that spell each utterance's phrases,
//! discounted during the search.

use super::search::{BuildContext, Built, SearchComponent};
use crate::experiment::Component;
use crate::pipeline::lists::check_global;
use crate::pipeline::lists::ListKind;
use crate::pipeline::setup::Setup;
use crate::pipeline::utterance_lists::{list_identity, list_of, set_list};
use crate::settings::{Block, SettingSpec, Settings};
use anyhow::Result;
use ctx_core::bias::BiasList;
use ctx_data::dataset::Dataset;
use ctx_graph::phrase_arcs::PhraseArcFinder;
use lattice_rescorer::{PhraseIds, PhraseReport};
use rayon::prelude::*;
use std::time::Instant;
use wfst_search::{ArcSetBooster, Booster};

/// Arc-index boosting (000 §4.2): per utterance, the arcs of the decoding graph that Algorithm 1
/// finds for the utterance's list ([`ctx_graph::phrase_arcs`]), discounted during the search.
#[derive(Debug, Clone)]
pub struct ArcBoosters {
    /// Per utterance, in dataset order.
    pub boosters: Vec<Booster>,
    /// The lists' phrases kept and dropped (a word outside the vocabulary), summed over
    /// utterances.
    pub report: PhraseReport,
    /// Boosted arcs, summed over utterances.
    pub arcs: usize,
    /// Seconds spent finding the arcs and building the boosters: the lists arrive with their
    /// utterances, so this time counts in RTFx.
    pub build_s: f64,
    /// Distinct lists built.
    pub lists: usize,
}

impl ArcBoosters {
    /// Finds the arcs of every utterance's list of `kind` in `setup`'s graph, one search per
    /// distinct list, in parallel on `threads`.
    pub fn new(setup: &Setup, kind: &ListKind, discount: f32, threads: usize) -> Result<Self> {
        crate::pipeline::lists::require_named(&setup.dataset, kind)?;
        let t = Instant::now();
        // A list for the whole set (a global list, a phrase file) is searched and built once,
        // not copied and compared per utterance (20,000 phrases × every utterance).
        let shared = set_list(setup, kind);
        // Otherwise each utterance's list, made once per distinct identity (a file added to
        // an own list is joined to it once per own list, not per utterance).
        let n_utts = setup.dataset.utterances.len();
        let (lists, which): (Vec<BiasList>, Vec<usize>) = match &shared {
            Some(l) => (vec![l.clone()], vec![0; n_utts]),
            None => {
                let mut seen: std::collections::BTreeMap<Vec<Vec<String>>, usize> =
                    Default::default();
                let (mut lists, mut which) = (Vec::new(), Vec::with_capacity(n_utts));
                for u in &setup.dataset.utterances {
                    let next = lists.len();
                    let i = *seen.entry(list_identity(setup, u, kind)).or_insert(next);
                    if i == next {
                        lists.push(list_of(setup, u, kind));
                    }
                    which.push(i);
                }
                (lists, which)
            }
        };
        let mut distinct: Vec<&Vec<Vec<String>>> = lists.iter().map(|l| &l.phrases).collect();
        distinct.sort();
        distinct.dedup();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()?;
        let ids: Vec<PhraseIds> = pool.install(|| {
            distinct
                .par_iter()
                .map(|phrases| {
                    let list = BiasList {
                        phrases: (*phrases).clone(),
                    };
                    PhraseIds::new(&list, &setup.graph.symbols.words)
                })
                .collect()
        });
        // One search of every distinct prefix of every list (consecutive radar lists share
        // most phrases), then each list's union of its prefixes' arcs, in parallel.
        let phrases: Vec<&[Vec<u32>]> = ids.iter().map(|i| i.phrases.as_slice()).collect();
        let found = PhraseArcFinder::new(&setup.csr).find_lists(&phrases);
        let built: Vec<(Booster, PhraseReport, usize)> = pool.install(|| {
            (0..ids.len())
                .into_par_iter()
                .map(|i| {
                    let arcs = found.list(i).arcs;
                    let n = arcs.len();
                    let b = ArcSetBooster::new(&setup.csr, arcs, discount)?;
                    Ok((Booster::ArcSet(b), ids[i].report, n))
                })
                .collect::<Result<_>>()
        })?;
        let mut out = Self {
            boosters: Vec::with_capacity(n_utts),
            report: PhraseReport::default(),
            arcs: 0,
            build_s: 0.0,
            lists: built.len(),
        };
        for l in which.iter().map(|&i| &lists[i]) {
            let i = distinct
                .binary_search(&&l.phrases)
                .expect("every list is among the distinct ones");
            let (b, r, n) = &built[i];
            out.boosters.push(b.clone());
            out.report.add(r);
            out.arcs += n;
        }
        out.build_s = t.elapsed().as_secs_f64();
        Ok(out)
    }
}

crate::settings_block! {
    /// Arc boosting's settings (000 §4.2, Algorithm 1).
    pub struct ArcBoost in "arc-boosting" {
        /// per-utterance list whose HCLG arcs (000 Algorithm 1) the search discounts:
        /// sequences, unigrams, gt, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH
        arcs_list: Option<String> = None => required; old "arc-boost",
        /// arc-boosting discount per boosted arc (graph units; negative = boost)
        arcs_discount: f64 = -2.0; old "arc-boost-discount",
    }
}

impl ArcBoost {
    /// The list kind, when the component is on.
    pub fn list(&self) -> Result<Option<ListKind>> {
        super::word_boost::parse_list(crate::key!(ArcBoost, arcs_list), self.arcs_list.as_deref())
    }

    /// Every utterance's arc booster (`None` without a list).
    pub fn boosters(&self, st: &Setup, threads: usize) -> Result<Option<ArcBoosters>> {
        match self.list()? {
            Some(kind) => ArcBoosters::new(st, &kind, self.arcs_discount as f32, threads).map(Some),
            None => Ok(None),
        }
    }
}

/// Arc boosting as a search component (000 §4.2, Algorithm 1).
pub struct ArcBoosting;

impl SearchComponent for ArcBoosting {
    fn component(&self) -> Component {
        Component {
            name: "arc-boosting",
            doc: "arc-index boosting of HCLG during the search (000 §4.2, Algorithm 1), per \
                  utterance",
        }
    }

    fn specs(&self) -> &'static [SettingSpec] {
        ArcBoost::SPECS
    }

    fn on(&self, s: &Settings) -> Result<bool> {
        Ok(ArcBoost::read(s)?.arcs_list.is_some())
    }

    fn check(&self, s: &Settings) -> Result<()> {
        ArcBoost::read(s)?.list().map(|_| ())
    }

    fn check_lists(&self, ds: &Dataset, s: &Settings) -> Result<()> {
        let a = ArcBoost::read(s)?;
        check_global(ds, crate::key!(ArcBoost, arcs_list), a.arcs_list.as_deref())
    }

    fn key(&self, s: &Settings) -> Result<String> {
        Ok(ArcBoost::read(s)?.key())
    }

    fn build(&self, cx: &BuildContext<'_>, s: &Settings) -> Result<Option<Built>> {
        let a = ArcBoost::read(s)?;
        let Some(b) = a.boosters(cx.setup, cx.decode.threads)? else {
            return Ok(None);
        };
        let n = cx.setup.dataset.utterances.len() as f64;
        Ok(Some(Built {
            report: format!(
                "arc boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV); {} arcs over the utterances' lists, found in {:.2} s",
                a.arcs_list.as_deref().unwrap_or_default(),
                a.arcs_discount,
                b.report.kept,
                b.report.dropped,
                b.arcs,
                b.build_s
            ),
            measures: [
                ("boosted_arcs", b.arcs as f64 / n),
                ("contexts", b.lists as f64),
            ]
            .into(),
            phrases: Some((b.report.kept as f64, b.report.dropped as f64)),
            build_s: b.build_s,
            boosters: b.boosters,
        }))
    }
}

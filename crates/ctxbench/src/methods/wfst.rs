//! The WFST family: decoding an HCLG (hybrid) or TLG (CTC) graph with the project's biasing
//! methods as components — G-boosting (003 §3.1.3, static or on the fly), HCLG-boosting by
//! composition (003 §3.1.4), arc boosting during the search (000 §4.2, Algorithm 1), word
//! boosting on any graph (001 §3.3's B, shared with the CTC family) and lattice biasing after
//! the search (003 §3.1.2). `baseline` is this family with no component.
//!
//! A group shares one decode; each point rescores its own output (the 1-best, or a
//! lattice-biased 1-best) and counts the shared decode plus its own rescoring in RTFx, as a run
//! of that method alone would.

use super::components;
use super::components::arc_boost::ArcBoosting;
use super::components::gboost::GBoost;
use super::components::hclg_boost::HclgBoost;
use super::components::lattice_bias::LatticeBias;
use super::components::open_vocab::OpenVocab;
use super::components::penalties::CtcPenalties;
use super::components::search::{self, BuildContext, SearchComponent};
use super::components::word_boost::WordBoosting;
use super::family::{
    base_measures, check_global, check_targets, common, context_words, decode_key_of,
    decode_settings, load_setup, owned_by, record, setup_key_of, Component, Family, FamilySpec,
    GroupContext, SetupCache,
};
use crate::experiment::{Point, SettingSpec, Settings};
use crate::pipeline::{self, Setup, SetupOptions};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use anyhow::{bail, Context, Result};
use ctx_data::dataset::Dataset;
use wfst_search::Booster;

/// The WFST family (see the module docs).
pub struct Wfst {
    /// The components that act during the search ([`SEARCH`] for the runner's family; a test
    /// may add its own).
    pub search: &'static [&'static dyn SearchComponent],
}

/// The runner's WFST family.
pub const WFST: Wfst = Wfst { search: SEARCH };

/// The components that act during the search, each a module of `methods/components`: adding
/// one to the family is a line here.
pub const SEARCH: &[&dyn SearchComponent] = &[&ArcBoosting, &WordBoosting];

/// Every component, in the canonical order of method names: those the setup applies, the
/// search's, then those after the search.
fn components(search: &[&dyn SearchComponent]) -> Vec<Component> {
    let mut v = vec![
        Component {
            name: "g-boosting",
            doc: "G-boosting before decoding (003 §3.1.3)",
        },
        Component {
            name: "hclg-boosting",
            doc: "HCLG ∘ biasing FST (003 §3.1.4)",
        },
    ];
    v.extend(search::components_of(search));
    v.extend([
        Component {
            name: "lattice-biasing",
            doc: "lattice ∘ biasing FST after decoding (003 §3.1.2)",
        },
        Component {
            name: "open-vocab",
            doc: "per-utterance open-vocabulary context: the list's phrases pronounced (the \
                  lexicon, letter-to-sound for unknown words) as phone HMMs, compiled at run \
                  time and entered through the HCLG's class slot, so names the graph lacks are \
                  decoded",
        },
    ]);
    v
}

/// The blocks of the family's components as one point reads them.
struct Blocks {
    common: Common,
    gboost: GBoost,
    hclg: HclgBoost,
    penalties: CtcPenalties,
    lattice: LatticeBias,
    open: OpenVocab,
}

impl Blocks {
    fn read(s: &Settings) -> Result<Self> {
        Ok(Self {
            common: Common::read(s)?,
            gboost: GBoost::read(s)?,
            hclg: HclgBoost::read(s)?,
            penalties: CtcPenalties::read(s)?,
            lattice: LatticeBias::read(s)?,
            open: OpenVocab::read(s)?,
        })
    }
}

impl FamilySpec for Wfst {
    fn name(&self) -> &'static str {
        "wfst"
    }

    fn marker(&self) -> Option<&'static str> {
        None
    }

    fn components(&self) -> Vec<Component> {
        components(self.search)
    }

    fn settings(&self) -> Vec<SettingSpec> {
        let mut v = [GBoost::SPECS, HclgBoost::SPECS].concat();
        v.extend(search::specs_of(self.search));
        v.extend(owned_by(CtcPenalties::SPECS, "wfst"));
        v.extend([LatticeBias::SPECS, OpenVocab::SPECS].concat());
        v
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        let b = Blocks::read(s).with_context(|| what.to_string())?;
        (|| {
            b.open.check()?;
            if b.lattice.rescoring()?.is_some() && !b.common.lattice {
                bail!("lattice biasing (bias_list) rescores the search's lattices: it needs lattice = true");
            }
            search::check_all(self.search, s)?;
            b.gboost.check()?;
            // One word booster per stream: its delta needs the graph's output labels, which a
            // stack of an arc set or a word automaton with it cannot share.
            if WordBoosting.on(s)? {
                if ArcBoosting.on(s)? {
                    bail!("word boosting and arc boosting cannot be combined (a word booster runs alone on a stream)");
                }
                if b.gboost.request().is_some() {
                    bail!("word boosting and on-the-fly G-boosting cannot be combined (one word booster per stream)");
                }
            }
            Ok(())
        })()
        .with_context(|| what.to_string())
    }
}

impl Family for Wfst {
    fn check_lists(&self, ds: &Dataset, full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)?;
        let b = Blocks::read(&p.settings)?;
        b.open.check_lists(ds)?;
        let per_utt = b.gboost.per_utterance();
        if let Some(l) = b.gboost.gboost_list.as_deref() {
            if per_utt {
                check_global(ds, crate::key!(GBoost, gboost_list), Some(l))?;
            } else {
                pipeline::static_list(full, l).context("'gboost_list'")?;
            }
        }
        if let Some(l) = b.hclg.hclg_list.as_deref() {
            pipeline::static_list(full, l).context("'hclg_list'")?;
        }
        check_global(
            ds,
            crate::key!(LatticeBias, bias_list),
            b.lattice.bias_list.as_deref(),
        )?;
        search::check_lists_all(self.search, ds, &p.settings)
    }

    fn setup_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        // On-the-fly G-boosting decodes the unboosted graph (with the LM for its boosters): its
        // list is a decode setting. An unboosted graph's key is the hclg-boost family's.
        let mut key = setup_key_of("wfst", &b.common) + &b.open.setup_key();
        match b.gboost.static_boost() {
            Some(g) => key += &format!(";gboost={}:{}", g.list, g.discount),
            None if b.gboost.on_the_fly() => key += ";gboost=on-the-fly",
            None => {}
        }
        if let Some(h) = b.hclg.static_boost() {
            key += &format!(";hclg={}:{}", h.list, h.discount);
        }
        key
    }

    fn decode_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        [
            self.setup_key(p),
            decode_key_of(&b.common),
            b.gboost.key(),
            search::key_all(self.search, &p.settings),
            b.penalties.key(),
            b.open.key(),
            b.open.file_key(),
        ]
        .join(";")
    }

    fn writes_outputs(&self) -> bool {
        true
    }

    fn run_group(
        &self,
        cx: &GroupContext<'_>,
        group: &[usize],
        setup: &mut SetupCache,
    ) -> Result<Vec<PointRecord>> {
        let first = &cx.points[group[0]];
        let b = Blocks::read(&first.settings)?;
        pipeline::reset_peak_mem();
        let opts = SetupOptions {
            subset: b.common.subset(),
            kind: b.common.graph_kind()?,
            bpe_size: b.common.bpe_size,
            cache: cx.cache,
            noise: b.common.noise,
            snr_db: b.common.snr_db,
            gboost: b.gboost.static_boost(),
            hclg_bias: b.hclg.static_boost(),
            gboost_otf: b.gboost.on_the_fly(),
            context_slot: b.open.slot(),
        };
        let st = load_setup(cx, &b.common, self.setup_key(first), &opts, setup)?;
        let mut settings = decode_settings(&b.common, st)?;
        b.penalties.apply(&mut settings);
        let otf = match b.gboost.request() {
            Some(req) => components::gboost::otf_boosters(
                cx.reg,
                b.common.dataset(),
                st,
                b.common.subset(),
                &req,
                settings.threads,
            )?,
            None => None,
        };
        let bcx = BuildContext {
            setup: st,
            decode: &settings,
        };
        let built = search::build_all(self.search, &bcx, &first.settings)?;
        report_lists(cx, &b, st, otf.as_ref());
        for x in &built {
            cx.report(|| x.report.clone());
        }
        let open = b.open.compile(st, &settings)?;
        let booster = |i: usize| {
            Booster::stack(
                std::iter::once(otf.as_ref().map(|o| o.boosters[i].clone()))
                    .chain(built.iter().map(|x| Some(x.boosters[i].clone())))
                    .chain([open.as_ref().and_then(|o| o.penalties[i].clone())]),
            )
        };
        let run = match &open {
            Some(o) => pipeline::decode_indexed_with(st, &settings, &booster, &o.contexts)?,
            None => pipeline::decode_indexed(st, &settings, &booster)?,
        };
        if let Some(sink) = cx.sink {
            sink.decoded(st, &run)?;
        }
        // Lists that arrive per utterance are compiled while decoding: their time counts.
        let context_s = otf.as_ref().map_or(0.0, |o| o.context_s())
            + built.iter().map(|x| x.build_s).sum::<f64>()
            + open.as_ref().map_or(0.0, |o| o.build_s);
        let lattice = (
            pipeline::lattice_density(&run),
            pipeline::oracle_wer(st, &run),
        );
        let mut out = Vec::new();
        for &i in group {
            let p = &cx.points[i];
            let targets = pipeline::targets(&st.dataset, common(p)?.targets.as_deref())?;
            let bias = LatticeBias::read(&p.settings)?.rescoring()?;
            let o = pipeline::output(
                st,
                &run,
                bias.as_ref().map(|(k, d)| (k, *d)),
                targets.as_ref().map(|(_, t)| t),
            )?;
            if let Some(sink) = cx.sink {
                sink.output(i, st, &o)?;
            }
            let mut m = base_measures(st, &run, &o, context_s + o.rescore_s, lattice);
            let mut put = |k: &str, v: Option<f64>| {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            };
            let build_s = otf.as_ref().map(|o| o.build_s).into_iter();
            let build_s: Vec<f64> = build_s
                .chain(built.iter().map(|x| x.build_s))
                .chain(open.as_ref().map(|o| o.build_s))
                .collect();
            put(
                "context_s",
                (!build_s.is_empty()).then(|| build_s.iter().sum()),
            );
            for x in &built {
                for (k, v) in &x.measures {
                    put(k, Some(*v));
                }
            }
            let phrases = phrases_of(st, o.report.as_ref(), &built, otf.as_ref(), open.as_ref());
            let (kept, dropped) = (phrases.map(|p| p.0), phrases.map(|p| p.1));
            put("phrases_kept", kept);
            put("phrases_dropped", dropped);
            put(
                "context_words",
                open.as_ref().map(|_| context_words(st, &o.hyps)),
            );
            if let Some(c) = &open {
                put("contexts", Some(c.lists as f64));
            }
            out.push(record(cx, i, m, &run.device));
        }
        Ok(out)
    }
}

/// What each list a group decodes with kept, for a single decode's reader.
fn report_lists(
    cx: &GroupContext<'_>,
    b: &Blocks,
    st: &Setup,
    otf: Option<&components::gboost::OtfBoosters>,
) {
    if let Some(r) = &st.gboost {
        cx.report(|| {
            format!(
                "G-boosting with list '{}' (discount {}): {} phrases, {} boosted, {} dropped (OOV); {} n-grams discounted, {} added",
                b.gboost.gboost_list.as_deref().unwrap_or_default(), b.gboost.gboost_discount, r.phrases, r.kept, r.dropped, r.discounted, r.added
            )
        });
    }
    if let Some(r) = &st.hclg_phrases {
        cx.report(|| {
            format!(
                "HCLG-boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV)",
                b.hclg.hclg_list.as_deref().unwrap_or_default(),
                b.hclg.hclg_discount,
                r.kept,
                r.dropped
            )
        });
    }
    if let Some(o) = otf {
        let r = &o.report;
        cx.report(|| {
            format!(
                "G-boosting {} with list '{}' per {} (discount {}): {} phrases, {} boosted, {} dropped (OOV); boosters built in {:.2} s",
                b.gboost.gboost_mode, b.gboost.gboost_list.as_deref().unwrap_or_default(), b.gboost.gboost_scope, b.gboost.gboost_discount,
                r.phrases, r.kept, r.dropped, o.build_s
            )
        });
    }
}

/// Whose phrases a row reports (kept, dropped): the lattice rescoring's, a search component's,
/// G-boosting's, HCLG-boosting's; open-vocabulary contexts' per utterance.
fn phrases_of(
    st: &Setup,
    rescored: Option<&lattice_rescorer::PhraseReport>,
    built: &[search::Built],
    otf: Option<&components::gboost::OtfBoosters>,
    open: Option<&components::open_vocab::OpenContexts>,
) -> Option<(f64, f64)> {
    let report = |r: &lattice_rescorer::PhraseReport| (r.kept as f64, r.dropped as f64);
    let gboost = otf.map(|o| &o.report).or(st.gboost.as_ref());
    let n = st.dataset.utterances.len() as f64;
    match open {
        Some(o) => Some((o.phrases as f64 / n, o.unspellable as f64 / n)),
        None => rescored
            .map(report)
            .or_else(|| built.iter().find_map(|x| x.phrases))
            .or_else(|| gboost.map(|g| (g.kept as f64, g.dropped as f64)))
            .or_else(|| st.hclg_phrases.as_ref().map(report)),
    }
}

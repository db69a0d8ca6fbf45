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
use super::family::{
    base_measures, check_open_file, check_targets, context_words, decode_settings, key_of,
    load_setup, num, open_file_key, open_vocab_of, record, s, subset_of, Component, Family,
    FamilySpec, GroupContext, SetupCache, DECODE_KEYS, OPEN_MAX_PAUSE_S, OPEN_VOCAB,
    OPEN_VOCAB_ENTRY, OPEN_VOCAB_MAX_PAUSE, OPEN_VOCAB_WEIGHT, SETUP_KEYS, WORD_BOOST,
    WORD_BOOST_SCORE,
};
use crate::experiment::{spec, Point, SettingSpec, Settings, Type, Value};
use crate::pipeline::{self, ListKind, Setup, SetupOptions, StaticBoost};
use crate::results::PointRecord;
use anyhow::{anyhow, bail, Context, Result};
use ctx_data::dataset::Dataset;
use ctx_data::registry::Registry;
use ctx_graph::compile::GraphKind;
use std::path::Path;
use wfst_search::Booster;

/// The WFST family (see the module docs).
pub struct Wfst;

const COMPONENTS: &[Component] = &[
    Component {
        name: "g-boosting",
        doc: "G-boosting before decoding (003 §3.1.3)",
    },
    Component {
        name: "hclg-boosting",
        doc: "HCLG ∘ biasing FST (003 §3.1.4)",
    },
    Component {
        name: "arc-boosting",
        doc: "arc-index boosting of HCLG during the search (000 §4.2, Algorithm 1), per utterance",
    },
    Component {
        name: "word-boosting",
        doc: "per-utterance word boosting as a single-state B applied on the fly (001 §3.3), on \
              any graph",
    },
    Component {
        name: "lattice-biasing",
        doc: "lattice ∘ biasing FST after decoding (003 §3.1.2)",
    },
    Component {
        name: "open-vocab",
        doc: "per-utterance open-vocabulary context: the list's phrases pronounced (the lexicon, \
              letter-to-sound for unknown words) as phone HMMs, compiled at run time and entered \
              through the HCLG's class slot, so names the graph lacks are decoded (issue 42)",
    },
];

/// The open-vocabulary defaults over an HCLG (weight, entry), in the hybrid models' graph units
/// (the hclg-boost family's too).
pub(crate) const OPEN_DEFAULTS: (f64, f64) = (5.0, 4.0);

/// The family's settings, in points.csv column order.
const SETTINGS: &[SettingSpec] = &[
    spec(
        "gboost_list",
        Type::Str,
        "g-boosting",
        "static list G is boosted towards (sequences, unigrams, gt or a global list)",
    ),
    spec(
        "gboost_discount",
        Type::Float,
        "g-boosting",
        "G-boosting discount per boosted n-gram",
    ),
    spec(
        "gboost_mode",
        Type::Str,
        "g-boosting",
        "static (HCLG compiled from the boosted G), on-the-fly (unboosted HCLG + the phrase-prefix \
         automaton composed during the search) or on-the-fly-lm (+ the exact G_boosted − G)",
    ),
    spec(
        "gboost_scope",
        Type::Str,
        "g-boosting",
        "set (one list for the whole set) or utterance (each utterance's own list: sequences, \
         unigrams, gt or list:NAME; on-the-fly only)",
    ),
    spec(
        "hclg_list",
        Type::Str,
        "hclg-boosting",
        "static list composed into HCLG",
    ),
    spec(
        "hclg_discount",
        Type::Float,
        "hclg-boosting",
        "HCLG-boosting discount per word",
    ),
    spec(
        "arcs_list",
        Type::Str,
        "arc-boosting",
        "per-utterance list whose HCLG arcs (000 Algorithm 1) the search discounts: sequences, \
         unigrams, gt or list:NAME",
    ),
    spec(
        "arcs_discount",
        Type::Float,
        "arc-boosting",
        "arc-boosting discount per boosted arc",
    ),
    WORD_BOOST,
    WORD_BOOST_SCORE,
    spec(
        "blank_penalty",
        Type::Float,
        "wfst",
        "CTC models: subtracted from the blank's log-probability on every frame (nats)",
    ),
    spec(
        "word_insertion_penalty",
        Type::Float,
        "wfst",
        "CTC models: added to the cost of every emitted word (graph units)",
    ),
    spec(
        "bias_list",
        Type::Str,
        "lattice-biasing",
        "lattice-biasing list: sequences, unigrams, gt or list:NAME",
    ),
    spec(
        "discount",
        Type::Float,
        "lattice-biasing",
        "lattice-biasing discount per word",
    ),
    OPEN_VOCAB,
    OPEN_VOCAB_WEIGHT,
    OPEN_VOCAB_ENTRY,
    OPEN_VOCAB_MAX_PAUSE,
];

impl FamilySpec for Wfst {
    fn name(&self) -> &'static str {
        "wfst"
    }

    fn marker(&self) -> Option<&'static str> {
        None
    }

    fn components(&self) -> &'static [Component] {
        COMPONENTS
    }

    fn settings(&self) -> &'static [SettingSpec] {
        SETTINGS
    }

    fn defaults(&self, s: &mut Settings) {
        s.insert("gboost_discount".into(), Value::Float(-2.0));
        s.insert("gboost_mode".into(), Value::Str("static".into()));
        s.insert("gboost_scope".into(), Value::Str("set".into()));
        s.insert("hclg_discount".into(), Value::Float(-2.0));
        s.insert("discount".into(), Value::Float(-2.0));
        s.insert("word_boost_score".into(), Value::Float(3.0));
        s.insert("open_vocab_weight".into(), Value::Float(OPEN_DEFAULTS.0));
        s.insert("open_vocab_entry".into(), Value::Float(OPEN_DEFAULTS.1));
        s.insert(
            "open_vocab_max_pause".into(),
            Value::Float(OPEN_MAX_PAUSE_S),
        );
    }

    fn required(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("gboost_list", "g-boosting"),
            ("hclg_list", "hclg-boosting"),
            ("arcs_list", "arc-boosting"),
            ("word_boost", "word-boosting"),
            ("bias_list", "lattice-biasing"),
            ("open_vocab", "open-vocab"),
        ]
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        let str_of = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(v) = str_of("open_vocab") {
            if crate::pipeline::OpenList::parse(&v).is_none() {
                bail!("{what}: open_vocab '{v}' (sequences, unigrams, gt, list:NAME, file:PATH)");
            }
        }
        for k in ["bias_list", "arcs_list", "word_boost"] {
            if let Some(v) = str_of(k) {
                if crate::pipeline::ListKind::parse(&v).is_none() {
                    bail!("{what}: {k} '{v}' (sequences, unigrams, gt, list:NAME)");
                }
            }
        }
        // One word booster per stream: its delta needs the graph's output labels, which a
        // stack of an arc set or a word automaton with it cannot share.
        if s.contains_key("word_boost") {
            if s.contains_key("arcs_list") {
                bail!("{what}: word boosting and arc boosting cannot be combined (a word booster runs alone on a stream)");
            }
            if s.get("gboost_mode")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("on-the-fly"))
                && s.contains_key("gboost_list")
            {
                bail!("{what}: word boosting and on-the-fly G-boosting cannot be combined (one word booster per stream)");
            }
        }
        let mode = str_of("gboost_mode");
        if let Some(v) = &mode {
            if !["static", "on-the-fly", "on-the-fly-lm"].contains(&v.as_str()) {
                bail!("{what}: gboost_mode '{v}' (static, on-the-fly or on-the-fly-lm)");
            }
        }
        if let Some(v) = str_of("gboost_scope") {
            match v.as_str() {
                "set" => {}
                "utterance" => {
                    if !mode.as_deref().is_some_and(|m| m.starts_with("on-the-fly")) {
                        bail!("{what}: gboost_scope 'utterance' needs gboost_mode 'on-the-fly' (a static graph has one list)");
                    }
                    if let Some(l) = str_of("gboost_list") {
                        if crate::pipeline::ListKind::parse(&l).is_none() {
                            bail!("{what}: gboost_list '{l}' per utterance (sequences, unigrams, gt, list:NAME)");
                        }
                    }
                }
                _ => bail!("{what}: gboost_scope '{v}' (set or utterance)"),
            }
        }
        Ok(())
    }
}

impl Family for Wfst {
    fn check_lists(&self, ds: &Dataset, full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)?;
        check_open_file(p)?;
        let per_utt = s(p, "gboost_scope") == "utterance";
        for k in ["gboost_list", "hclg_list"] {
            if let Some(Value::Str(l)) = p.settings.get(k) {
                if !(per_utt && k == "gboost_list") {
                    pipeline::static_list(full, l).with_context(|| format!("'{k}'"))?;
                }
            }
        }
        for k in [
            "bias_list",
            "arcs_list",
            "word_boost",
            "gboost_list",
            "open_vocab",
        ] {
            if k == "gboost_list" && !per_utt {
                continue;
            }
            if let Some(Value::Str(l)) = p.settings.get(k) {
                if let Some(ListKind::Global(n)) = ListKind::parse(l) {
                    if !ds.global_lists.contains_key(&n) {
                        bail!("{k} '{l}': dataset {} has no global list '{n}'", ds.name);
                    }
                }
            }
        }
        Ok(())
    }

    fn setup_key(&self, p: &Point) -> String {
        // On-the-fly G-boosting decodes the unboosted graph: its list is a decode setting.
        let otf = s(p, "gboost_mode").starts_with("on-the-fly");
        let boosts: &[&str] = if otf {
            &["gboost_mode", "hclg_list", "hclg_discount"]
        } else {
            &[
                "gboost_mode",
                "gboost_list",
                "gboost_discount",
                "hclg_list",
                "hclg_discount",
            ]
        };
        let key = key_of("wfst", p, SETUP_KEYS, boosts);
        // The class slot is part of the graph (rows without a list keep the plain graph).
        match p.settings.get("open_vocab") {
            Some(_) => key + &format!(";slot={}", s(p, "open_vocab_entry")),
            None => key,
        }
    }

    fn decode_key(&self, p: &Point) -> String {
        let setup = self.setup_key(p);
        let decode = key_of(
            "",
            p,
            DECODE_KEYS,
            &[
                "gboost_scope",
                "gboost_list",
                "gboost_discount",
                "arcs_list",
                "arcs_discount",
                "word_boost",
                "word_boost_score",
                "blank_penalty",
                "word_insertion_penalty",
                "open_vocab",
                "open_vocab_weight",
                "open_vocab_max_pause",
            ],
        );
        setup + &decode + &open_file_key(p)
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
        pipeline::reset_peak_mem();
        let st = load_setup(
            cx,
            first,
            self.setup_key(first),
            &setup_options(first, cx.cache)?,
            setup,
        )?;
        let mut settings = decode_settings(first, st)?;
        settings.blank_penalty = num(first, "blank_penalty", 0.0) as f32;
        settings.word_insertion_penalty = num(first, "word_insertion_penalty", 0.0) as f32;
        let otf = otf_boosters(cx.reg, first, st, settings.threads)?;
        let arcs = arc_boosters(first, st, settings.threads)?;
        let words = word_boosters(first, st, settings.config.beam)?;
        report_lists(cx, first, st, otf.as_ref(), words.as_ref(), arcs.as_ref());
        let open = open_vocab_of(first, OPEN_DEFAULTS.0, OPEN_DEFAULTS.1)?
            .map(|o| o.compile(st, &settings))
            .transpose()?;
        let booster = |i: usize| {
            Booster::stack([
                otf.as_ref().map(|o| o.boosters[i].clone()),
                words.as_ref().map(|w| w.boosters[i].clone()),
                arcs.as_ref().map(|a| a.boosters[i].clone()),
                open.as_ref().and_then(|o| o.penalties[i].clone()),
            ])
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
            + words.as_ref().map_or(0.0, |w| w.build_s)
            + arcs.as_ref().map_or(0.0, |a| a.build_s)
            + open.as_ref().map_or(0.0, |o| o.build_s);
        let lattice = (
            pipeline::lattice_density(&run),
            pipeline::oracle_wer(st, &run),
        );
        let mut out = Vec::new();
        for &i in group {
            let p = &cx.points[i];
            let targets = pipeline::targets(
                &st.dataset,
                p.settings.get("targets").and_then(Value::as_str),
            )?;
            let bias = match p.settings.get("bias_list") {
                Some(l) => Some((
                    ListKind::parse(&l.to_string()).ok_or_else(|| anyhow!("bad bias_list"))?,
                    num(p, "discount", -2.0) as f32,
                )),
                None => None,
            };
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
            let built = otf.as_ref().map(|o| o.build_s).into_iter();
            let built: Vec<f64> = built
                .chain(words.as_ref().map(|w| w.build_s))
                .chain(arcs.as_ref().map(|a| a.build_s))
                .chain(open.as_ref().map(|o| o.build_s))
                .collect();
            put("context_s", (!built.is_empty()).then(|| built.iter().sum()));
            put(
                "boosted_arcs",
                arcs.as_ref()
                    .map(|a| a.arcs as f64 / st.dataset.utterances.len() as f64),
            );
            let gboost = otf.as_ref().map(|o| &o.report).or(st.gboost.as_ref());
            let arc_report = arcs.as_ref().map(|a| &a.report);
            let (kept, dropped) = match (o.report.as_ref().or(arc_report), gboost, &st.hclg_phrases)
            {
                (Some(r), _, _) => (Some(r.kept), Some(r.dropped)),
                (None, Some(g), _) => (Some(g.kept), Some(g.dropped)),
                (None, None, Some(h)) => (Some(h.kept), Some(h.dropped)),
                _ => (None, None),
            };
            let n = st.dataset.utterances.len() as f64;
            put(
                "boosted_words",
                words.as_ref().map(|w| w.applied as f64 / n),
            );
            put("boost_oov", words.as_ref().map(|w| w.oov as f64 / n));
            let (kept, dropped) = match &open {
                Some(o) => (Some(o.phrases as f64 / n), Some(o.unspellable as f64 / n)),
                None => (kept.map(|x| x as f64), dropped.map(|x| x as f64)),
            };
            put("phrases_kept", kept);
            put("phrases_dropped", dropped);
            put(
                "context_words",
                open.as_ref().map(|_| context_words(st, &o.hyps)),
            );
            out.push(record(cx, i, m, &run.device));
        }
        Ok(out)
    }
}

fn setup_options<'a>(p: &Point, cache: &'a Path) -> Result<SetupOptions<'a>> {
    let boost = |list: &str, d: &str| {
        p.settings.get(list).map(|l| StaticBoost {
            list: l.to_string(),
            discount: p.settings.get(d).and_then(Value::as_f64).unwrap_or(-2.0) as f32,
        })
    };
    let otf = s(p, "gboost_mode").starts_with("on-the-fly");
    Ok(SetupOptions {
        subset: subset_of(p),
        kind: GraphKind::parse(&s(p, "graph")).ok_or_else(|| anyhow!("bad graph"))?,
        bpe_size: p
            .settings
            .get("bpe_size")
            .and_then(Value::as_f64)
            .unwrap_or(ctx_data::graphs::DEFAULT_BPE_SIZE as f64) as usize,
        cache,
        noise: p.settings.get("noise").and_then(Value::as_f64),
        gboost: boost("gboost_list", "gboost_discount").filter(|_| !otf),
        hclg_bias: boost("hclg_list", "hclg_discount"),
        gboost_otf: otf,
        context_slot: open_vocab_of(p, OPEN_DEFAULTS.0, OPEN_DEFAULTS.1)?.map(|o| o.entry),
    })
}

/// The per-utterance boosters of a point with on-the-fly G-boosting (see
/// [`components::gboost::otf_boosters`]); `None` for other points.
fn otf_boosters(
    reg: &Registry,
    p: &Point,
    st: &Setup,
    threads: usize,
) -> Result<Option<components::gboost::OtfBoosters>> {
    if st.otf.is_none() {
        return Ok(None);
    }
    let req = components::gboost::OtfRequest {
        list: s(p, "gboost_list"),
        exact: s(p, "gboost_mode") == "on-the-fly-lm",
        discount: num(p, "gboost_discount", -2.0) as f32,
        per_utterance: s(p, "gboost_scope") == "utterance",
    };
    components::gboost::otf_boosters(reg, &s(p, "dataset"), st, subset_of(p), &req, threads)
}

/// What each list a group decodes with kept, for a single decode's reader.
fn report_lists(
    cx: &GroupContext<'_>,
    p: &Point,
    st: &Setup,
    otf: Option<&components::gboost::OtfBoosters>,
    words: Option<&components::word_boost::ContextBoosters>,
    arcs: Option<&components::arc_boost::ArcBoosters>,
) {
    if let Some(r) = &st.gboost {
        cx.report(|| {
            format!(
                "G-boosting with list '{}' (discount {}): {} phrases, {} boosted, {} dropped (OOV); {} n-grams discounted, {} added",
                s(p, "gboost_list"), s(p, "gboost_discount"), r.phrases, r.kept, r.dropped, r.discounted, r.added
            )
        });
    }
    if let Some(r) = &st.hclg_phrases {
        cx.report(|| {
            format!(
                "HCLG-boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV)",
                s(p, "hclg_list"),
                s(p, "hclg_discount"),
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
                s(p, "gboost_mode"), s(p, "gboost_list"), s(p, "gboost_scope"), s(p, "gboost_discount"),
                r.phrases, r.kept, r.dropped, o.build_s
            )
        });
    }
    if let Some(w) = words {
        cx.report(|| {
            format!(
                "word boosting with list '{}' (+{} per word): {} words applied, {} not in words.txt, tables built in {:.3} s",
                s(p, "word_boost"), s(p, "word_boost_score"), w.applied, w.oov, w.build_s
            )
        });
    }
    if let Some(b) = arcs {
        cx.report(|| {
            format!(
                "arc boosting with list '{}' (discount {}): {} phrases kept, {} dropped (OOV); {} arcs over the utterances' lists, found in {:.2} s",
                s(p, "arcs_list"), s(p, "arcs_discount"), b.report.kept, b.report.dropped, b.arcs, b.build_s
            )
        });
    }
}

/// The per-utterance word boosters of a point with word boosting; `None` for other points.
fn word_boosters(
    p: &Point,
    st: &Setup,
    beam: f32,
) -> Result<Option<components::word_boost::ContextBoosters>> {
    let Some(l) = p.settings.get("word_boost") else {
        return Ok(None);
    };
    let kind = ListKind::parse(&l.to_string()).ok_or_else(|| anyhow!("bad word_boost '{l}'"))?;
    let score = num(p, "word_boost_score", 3.0) as f32;
    components::word_boost::ContextBoosters::words(st, &kind, score, beam).map(Some)
}

/// The per-utterance arc boosters of a point with arc-boosting; `None` for other points.
fn arc_boosters(
    p: &Point,
    st: &Setup,
    threads: usize,
) -> Result<Option<components::arc_boost::ArcBoosters>> {
    let Some(l) = p.settings.get("arcs_list") else {
        return Ok(None);
    };
    let kind = ListKind::parse(&l.to_string()).ok_or_else(|| anyhow!("bad arcs_list '{l}'"))?;
    let discount = num(p, "arcs_discount", -2.0) as f32;
    components::arc_boost::ArcBoosters::new(st, &kind, discount, threads).map(Some)
}

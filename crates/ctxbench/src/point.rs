//! Decoding and scoring one group of points (DESIGN.md §2, steps 1–5): a point's settings become
//! the setup (dataset, graph and its boosts, acoustic model) and decoder settings; the group is
//! decoded once and every point scores its own output. This file and `pipeline.rs` are what a
//! figure depends on, so build.rs hashes them into the code version results are keyed by.

use crate::experiment::{Point, Value};
use crate::pipeline::{self, DecodeSettings, ListKind, Setup, SetupOptions, StaticBoost};
use crate::results::PointRecord;
use crate::run::{setup_key, Plan, CODE_VERSION};
use anyhow::{anyhow, bail, Result};
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctx_graph::compile::GraphKind;
use std::collections::BTreeMap;
use std::path::Path;
use wfst_search::{Booster, DecoderConfig};

/// A setting of a point as a string (empty when unset).
pub(crate) fn s(p: &Point, k: &str) -> String {
    p.get(k)
}

/// The subset a point decodes.
pub(crate) fn subset_of(p: &Point) -> Subset {
    if s(p, "subset") == "quick" {
        Subset::Quick
    } else {
        Subset::Full
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
    })
}

/// The per-utterance boosters of a point with on-the-fly G-boosting (see
/// [`pipeline::otf_boosters`]); `None` for other points.
fn otf_boosters(
    reg: &Registry,
    p: &Point,
    st: &Setup,
    threads: usize,
) -> Result<Option<pipeline::OtfBoosters>> {
    if st.otf.is_none() {
        return Ok(None);
    }
    let req = pipeline::OtfRequest {
        list: s(p, "gboost_list"),
        exact: s(p, "gboost_mode") == "on-the-fly-lm",
        discount: num(p, "gboost_discount", -2.0) as f32,
        per_utterance: s(p, "gboost_scope") == "utterance",
    };
    pipeline::otf_boosters(reg, &s(p, "dataset"), st, subset_of(p), &req, threads)
}

/// The per-utterance arc boosters of a point with arc-boosting; `None` for other points.
fn arc_boosters(p: &Point, st: &Setup, threads: usize) -> Result<Option<pipeline::ArcBoosters>> {
    let Some(l) = p.settings.get("arcs_list") else {
        return Ok(None);
    };
    let kind = ListKind::parse(&l.to_string()).ok_or_else(|| anyhow!("bad arcs_list '{l}'"))?;
    let discount = num(p, "arcs_discount", -2.0) as f32;
    pipeline::ArcBoosters::new(st, &kind, discount, threads).map(Some)
}

fn num(p: &Point, k: &str, default: f64) -> f64 {
    p.settings.get(k).and_then(Value::as_f64).unwrap_or(default)
}

/// Decodes one group and scores each of its points.
pub(crate) fn run_group(
    reg: &Registry,
    plan: &Plan,
    group: &[usize],
    setup: &mut Option<(String, Setup)>,
    cache: &Path,
) -> Result<Vec<PointRecord>> {
    let first = &plan.points[group[0]];
    let sk = setup_key(first);
    pipeline::reset_peak_mem();
    if setup.as_ref().is_none_or(|(k, _)| *k != sk) {
        *setup = None; // free the previous graph before building the next
        let name = s(first, "dataset");
        let mut st = Setup::load(reg, &name, &setup_options(first, cache)?)?;
        if let Some(n) = first.settings.get("limit").and_then(Value::as_f64) {
            st.dataset.utterances.truncate(n as usize);
        }
        if st.dataset.utterances.is_empty() {
            bail!("dataset {name} has no utterances to decode");
        }
        *setup = Some((sk, st));
    }
    let st = &setup.as_ref().unwrap().1;
    let d = DecoderConfig::default();
    let settings = DecodeSettings {
        config: DecoderConfig {
            beam: num(first, "beam", d.beam as f64) as f32,
            max_active: num(first, "max_active", d.max_active as f64) as usize,
            lattice_beam: num(first, "lattice_beam", d.lattice_beam as f64) as f32,
            acoustic_scale: num(first, "acoustic_scale", st.acoustic_scale as f64) as f32,
            ..DecoderConfig::default()
        },
        chunk_s: num(first, "chunk_s", 0.5),
        endpointing: first
            .settings
            .get("endpointing")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        threads: num(first, "threads", 2.0) as usize,
        backend: s(first, "backend")
            .parse()
            .map_err(|e: String| anyhow!("{e}"))?,
        ..DecodeSettings::default()
    };
    let otf = otf_boosters(reg, first, st, settings.threads)?;
    let arcs = arc_boosters(first, st, settings.threads)?;
    let run = pipeline::decode_indexed(st, &settings, &|i| {
        let g = otf.as_ref().map(|o| o.boosters[i].clone());
        let a = arcs.as_ref().map(|a| a.boosters[i].clone());
        match (g, a) {
            (None, None) => Booster::None,
            (Some(b), None) | (None, Some(b)) => b,
            (Some(g), Some(a)) => Booster::Stack(vec![g, a]),
        }
    })?;
    // Lists that arrive per utterance are compiled while decoding: their time counts.
    let context_s =
        otf.as_ref().map_or(0.0, |o| o.context_s()) + arcs.as_ref().map_or(0.0, |a| a.build_s);
    let density = pipeline::lattice_density(&run);
    let oracle = pipeline::oracle_wer(st, &run);
    let mut out = Vec::new();
    for &i in group {
        let p = &plan.points[i];
        let targets = pipeline::targets(
            &st.dataset,
            p.settings.get("targets").and_then(Value::as_str),
        )?;
        let lattice = match p.settings.get("bias_list") {
            Some(l) => Some((
                ListKind::parse(&l.to_string()).ok_or_else(|| anyhow!("bad bias_list"))?,
                num(p, "discount", -2.0) as f32,
            )),
            None => None,
        };
        let o = pipeline::output(
            st,
            &run,
            lattice.as_ref().map(|(k, d)| (k, *d)),
            targets.as_ref().map(|(_, t)| t),
        )?;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        let t = &o.totals;
        put("wer", t.all.rate());
        put("ne_wer", t.ne.rate());
        put("u_wer", t.unbiased.rate());
        put("ne_acc", t.ne_acc());
        put("precision", t.targets.precision());
        put("recall", t.targets.recall());
        put("f1", t.targets.f1());
        let decode_s = run.decode_s + context_s + o.rescore_s;
        put("audio_s", Some(run.audio_s));
        put("decode_s", Some(decode_s));
        put("rtfx", Some(run.audio_s / decode_s.max(1e-9)));
        put("peak_mem_mb", pipeline::peak_mem_mb());
        put("utterances", Some(st.dataset.utterances.len() as f64));
        put("graph_states", Some(st.csr.num_states() as f64));
        put("graph_arcs", Some(st.csr.num_arcs() as f64));
        put("lattice_density", Some(density));
        put("oracle_wer", oracle);
        let built = otf.as_ref().map(|o| o.build_s).into_iter();
        let built: Vec<f64> = built.chain(arcs.as_ref().map(|a| a.build_s)).collect();
        put("context_s", (!built.is_empty()).then(|| built.iter().sum()));
        put(
            "boosted_arcs",
            arcs.as_ref()
                .map(|a| a.arcs as f64 / st.dataset.utterances.len() as f64),
        );
        let gboost = otf.as_ref().map(|o| &o.report).or(st.gboost.as_ref());
        let arc_report = arcs.as_ref().map(|a| &a.report);
        let (kept, dropped) = match (o.report.as_ref().or(arc_report), gboost, &st.hclg_phrases) {
            (Some(r), _, _) => (Some(r.kept), Some(r.dropped)),
            (None, Some(g), _) => (Some(g.kept), Some(g.dropped)),
            (None, None, Some(h)) => (Some(h.kept), Some(h.dropped)),
            _ => (None, None),
        };
        put("phrases_kept", kept.map(|x| x as f64));
        put("phrases_dropped", dropped.map(|x| x as f64));
        out.push(PointRecord {
            key: plan.keys[i].clone(),
            label: p.label(),
            measures: m,
            settings: p
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            code_version: CODE_VERSION.to_string(),
            dataset_version: plan.data_versions[i].clone(),
            device: run.device.clone(),
        });
    }
    Ok(out)
}

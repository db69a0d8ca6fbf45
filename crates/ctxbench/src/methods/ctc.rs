//! The CTC WFST family (001): a CTC model's log-posteriors decoded with a TLG through
//! `ctc-wfst` (input checks, blank penalty, word insertion penalty), with per-utterance word
//! boosting (001 §3.3: the single-state B applied on every word arc, never composed) and phrase
//! boosting (multi-word phrases, a bonus per matched word, kept by a broken-off prefix). Methods: `ctc-wfst`,
//! `ctc-wfst+word-boosting`, `ctc-wfst+phrase-boosting` and both.

use super::components;
use super::components::open_vocab::OpenVocab;
use super::components::penalties::CtcPenalties;
use super::components::search::{self, BuildContext, SearchComponent};
use super::components::word_boost::{PhraseBoosting, WordBoosting};
use super::family::{
    accuracy_measures, base_measures, check_targets, common, context_words, decode_key_of,
    decode_settings, excess_repeats, load_setup, owned_by, record, setup_key_of, Component, Family,
    FamilySpec, GroupContext, SetupCache,
};
use crate::experiment::{Point, SettingSpec, Settings};
use crate::pipeline::{self, Setup, SetupOptions};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use ctx_data::dataset::Dataset;
use std::collections::BTreeMap;
use wfst_search::Booster;

/// The CTC WFST family (see the module docs).
pub struct CtcWfst;

/// The components that act during the search, each a module of `methods/components`: adding
/// one to the family is a line here.
const SEARCH: &[&dyn SearchComponent] = &[&WordBoosting, &PhraseBoosting];

/// Every component, in the canonical order of method names.
fn components() -> Vec<Component> {
    let mut v = vec![Component {
        name: "ctc-wfst",
        doc: "CTC log-posteriors decoded with a TLG (001)",
    }];
    v.extend(search::components_of(SEARCH));
    v.push(Component {
        name: "open-vocab",
        doc: "per-utterance open-vocabulary context: the list's phrases spelled in BPE pieces, \
              compiled at run time and entered through the TLG's class slot, so names the \
              graph lacks are decoded",
    });
    v
}

crate::settings_block! {
    /// The CTC family's own settings: streaming under load (001 §4.2).
    pub struct Streaming in "ctc-wfst" {
        /// streaming under constant arrivals (001 §4.2): this many clients send chunk_s chunks
        /// at real-time pace to a batching server; latency per chunk is measured (unset:
        /// offline batches)
        streams: Option<usize> = None,
        /// streaming: at most this many chunks per server batch
        max_batch: usize = 256,
    }
}

/// The blocks of the family's components as one point reads them.
struct Blocks {
    common: Common,
    penalties: CtcPenalties,
    streaming: Streaming,
    open: OpenVocab,
}

impl Blocks {
    fn read(s: &Settings) -> Result<Self> {
        Ok(Self {
            common: Common::read(s)?,
            penalties: CtcPenalties::read(s)?,
            streaming: Streaming::read(s)?,
            open: OpenVocab::read(s)?,
        })
    }
}

impl FamilySpec for CtcWfst {
    fn name(&self) -> &'static str {
        "ctc-wfst"
    }

    fn marker(&self) -> Option<&'static str> {
        Some("ctc-wfst")
    }

    fn components(&self) -> Vec<Component> {
        components()
    }

    fn settings(&self) -> Vec<SettingSpec> {
        let mut v = owned_by(CtcPenalties::SPECS, "ctc-wfst");
        v.extend(Streaming::SPECS);
        v.extend(search::specs_of(SEARCH));
        v.extend(OpenVocab::SPECS);
        v
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        let b = Blocks::read(s).with_context(|| what.to_string())?;
        (|| {
            let graph = &b.common.graph;
            if !graph.starts_with("tlg-") {
                bail!("graph '{graph}': the ctc-wfst family decodes a TLG (tlg-normal or tlg-compact)");
            }
            if b.streaming.streams == Some(0) || b.streaming.max_batch == 0 {
                bail!("'streams' and 'max_batch' must be at least 1");
            }
            b.open.check()?;
            search::check_all(SEARCH, s)?;
            Ok(())
        })()
        .with_context(|| what.to_string())
    }
}

impl Family for CtcWfst {
    fn check_lists(&self, ds: &Dataset, _full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)?;
        let b = Blocks::read(&p.settings)?;
        b.open.check_lists(ds)?;
        search::check_lists_all(SEARCH, ds, &p.settings)
    }

    fn setup_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        // The class slot is part of the graph (rows without a list keep the plain TLG).
        setup_key_of("ctc-wfst", &b.common) + &b.open.setup_key()
    }

    fn decode_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        [
            self.setup_key(p),
            decode_key_of(&b.common),
            b.penalties.key(),
            b.streaming.key(),
            search::key_all(SEARCH, &p.settings),
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
            kind: b.common.graph_kind()?,
            bpe_size: b.common.bpe_size,
            noise: b.common.noise,
            snr_db: b.common.snr_db,
            context_slot: b.open.slot(),
            ..SetupOptions::hclg(b.common.subset(), cx.cache)
        };
        let st = load_setup(cx, &b.common, self.setup_key(first), &opts, setup)?;
        if st.ctc_blank.is_none() {
            bail!(
                "dataset {}: the ctc-wfst family needs a CTC model (a files dataset with model = \"ctc\", or a simulated TLG)",
                st.dataset.name
            );
        }
        let mut settings = decode_settings(&b.common, st)?;
        b.penalties.apply(&mut settings);
        let bcx = BuildContext {
            setup: st,
            decode: &settings,
        };
        let built = search::build_all(SEARCH, &bcx, &first.settings)?;
        for x in &built {
            cx.report(|| x.report.clone());
        }
        let open = b.open.compile(st, &settings)?;
        let booster = |i: usize| {
            Booster::stack(
                built
                    .iter()
                    .map(|x| Some(x.boosters[i].clone()))
                    .chain([open.as_ref().and_then(|o| o.penalties[i].clone())]),
            )
        };
        if let Some(n) = b.streaming.streams {
            if cx.sink.is_some() {
                bail!("streaming rows (streams = {n}) write no hypothesis or lattice files");
            }
            return streaming(
                cx,
                group,
                st,
                &settings,
                (n, b.streaming.max_batch),
                &booster,
                open.as_ref(),
            );
        }
        let run = match &open {
            Some(o) => pipeline::decode_indexed_with(st, &settings, &booster, &o.contexts)?,
            None => pipeline::decode_indexed(st, &settings, &booster)?,
        };
        if let Some(sink) = cx.sink {
            sink.decoded(st, &run)?;
        }
        // Lists arrive with their utterances: building them counts in RTFx.
        let context_s =
            built.iter().map(|x| x.build_s).sum::<f64>() + open.as_ref().map_or(0.0, |o| o.build_s);
        let lattice = (
            pipeline::lattice_density(&run),
            pipeline::oracle_wer(st, &run),
        );
        let n = st.dataset.utterances.len() as f64;
        let mut out = Vec::new();
        for &i in group {
            let p = &cx.points[i];
            let targets = pipeline::targets(&st.dataset, common(p)?.targets.as_deref())?;
            let o = pipeline::output(st, &run, None, targets.as_ref().map(|(_, t)| t))?;
            if let Some(sink) = cx.sink {
                sink.output(i, st, &o)?;
            }
            let mut m: BTreeMap<String, f64> = base_measures(st, &run, &o, context_s, lattice);
            m.insert("active_tokens".into(), pipeline::active_tokens(&run));
            m.insert(
                "repeats".into(),
                excess_repeats(&st.dataset.utterances, &o.hyps),
            );
            if !built.is_empty() || open.is_some() {
                m.insert("context_s".into(), context_s);
            }
            if let Some(c) = &open {
                m.insert("contexts".into(), c.lists as f64);
                m.insert("phrases_kept".into(), c.phrases as f64 / n);
                m.insert("phrases_dropped".into(), c.unspellable as f64 / n);
                m.insert("context_words".into(), context_words(st, &o.hyps));
            }
            // A search component's measures, and its phrases over the contexts'.
            for x in &built {
                for (k, v) in &x.measures {
                    m.insert(k.to_string(), *v);
                }
                if let Some((kept, dropped)) = x.phrases {
                    m.insert("phrases_kept".into(), kept);
                    m.insert("phrases_dropped".into(), dropped);
                }
            }
            out.push(record(cx, i, m, &run.device));
        }
        Ok(out)
    }
}

/// The streaming rows (001 Table 4; `streams` clients, at most `max_batch` chunks per
/// batch): the load simulation of [`super::load`] over a
/// [`ctc_wfst::StreamingCtc`] server; WER from each utterance's first decode.
fn streaming(
    cx: &GroupContext<'_>,
    group: &[usize],
    st: &Setup,
    settings: &pipeline::DecodeSettings,
    (streams, max_batch): (usize, usize),
    booster: &(dyn Fn(usize) -> Booster + Sync),
    open: Option<&components::open_vocab::OpenContexts>,
) -> Result<Vec<PointRecord>> {
    let blank = st.ctc_blank.ok_or_else(|| anyhow!("not a CTC model"))?;
    let dec = ctc_wfst::CtcDecoder::new(
        &st.csr,
        ctc_wfst::CtcConfig {
            search: settings.config.clone(),
            blank,
            blank_penalty: settings.blank_penalty,
            word_insertion_penalty: settings.word_insertion_penalty,
            context_slot: open.and(st.graph.symbols.context_slot()),
            ..ctc_wfst::CtcConfig::default()
        },
    )?;
    let endpoint = settings
        .endpointing
        .unwrap_or(false)
        .then(|| wfst_search::EndpointConfig::kaldi(st.frame_s as f32));
    let mut server = CtcServer {
        s: dec.streaming_on(endpoint, settings.backend)?,
        words: std::collections::HashMap::new(),
        booster,
        contexts: open.map(|o| o.contexts.as_slice()),
        open_words: pipeline::OpenWords::default(),
        base: st.graph.symbols.words.len() as u32,
    };
    let cfg = super::load::LoadConfig {
        streams,
        chunk_s: settings.chunk_s,
        frame_s: st.frame_s,
        max_batch,
        seed: 0x5eed,
    };
    let utts = &st.dataset.utterances;
    let durations: Vec<f64> = utts.iter().map(|u| u.duration_s).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(settings.threads.max(1))
        .build()?;
    let r = pool.install(|| {
        super::load::simulate(&cfg, &durations, &|i| st.scores(&utts[i]), &mut server)
    })?;
    let hyps = pipeline::spell_all(st, &server.open_words.words, &r.words);
    let device = server.s.backend().1;
    let mut out = Vec::new();
    for &i in group {
        let p = &cx.points[i];
        let targets = pipeline::targets(&st.dataset, common(p)?.targets.as_deref())?;
        let t = st.score(&hyps, targets.as_ref().map(|(_, t)| t))?;
        let mut m = accuracy_measures(&t);
        m.insert(
            "repeats".into(),
            excess_repeats(&st.dataset.utterances, &hyps),
        );
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("audio_s", Some(r.audio_s));
        put("decode_s", Some(r.compute_s));
        put("peak_mem_mb", pipeline::peak_mem_mb());
        put("utterances", Some(utts.len() as f64));
        put("graph_states", Some(st.csr.num_states() as f64));
        put("graph_arcs", Some(st.csr.num_arcs() as f64));
        if let Some(o) = open {
            // Lists arrive with their utterances (compiled before the clients start here).
            let n = utts.len().max(1) as f64;
            put("context_s", Some(o.build_s));
            put("contexts", Some(o.lists as f64));
            put("phrases_kept", Some(o.phrases as f64 / n));
            put("phrases_dropped", Some(o.unspellable as f64 / n));
            put("context_words", Some(context_words(st, &hyps)));
        }
        super::load::put_measures(&r, &mut m);
        out.push(record(cx, i, m, &device));
    }
    Ok(out)
}

/// [`ctc_wfst::StreamingCtc`] as the load simulation's server: words collected per channel
/// (context words renumbered to the run's, after the graph's words).
struct CtcServer<'d, 'b> {
    s: ctc_wfst::StreamingCtc<'d>,
    words: std::collections::HashMap<u64, Vec<u32>>,
    booster: &'b (dyn Fn(usize) -> Booster + Sync),
    /// Each utterance's open-vocabulary context (by dataset index).
    contexts: Option<&'b pipeline::Contexts>,
    open_words: pipeline::OpenWords,
    base: u32,
}

impl CtcServer<'_, '_> {
    /// A finished segment's words, its context words renumbered to the run's.
    fn segment_words(&mut self, seg: wfst_search::SegmentResult) -> Vec<u32> {
        let mut w = seg.best.words;
        self.open_words
            .renumber(self.base, seg.context.as_ref(), &mut w);
        w
    }
}

impl super::load::ChunkServer for CtcServer<'_, '_> {
    fn open(&mut self, id: u64, utt: usize) -> Result<()> {
        self.s.open(id, (self.booster)(utt))?;
        if let Some(c) = self.contexts {
            self.s.set_open_context(id, c[utt].clone())?;
        }
        self.words.insert(id, Vec::new());
        Ok(())
    }

    fn push(&mut self, chunks: &[(u64, &ctx_core::scores::ScoreMatrix)]) -> Result<()> {
        let out = self.s.push(chunks)?;
        for ((id, _), r) in chunks.iter().zip(out) {
            let mut got = Vec::new();
            for seg in r.segments {
                got.extend(self.segment_words(seg));
            }
            self.words
                .get_mut(id)
                .ok_or_else(|| anyhow!("channel {id}"))?
                .extend(got);
        }
        Ok(())
    }

    fn close(&mut self, id: u64) -> Result<Vec<u32>> {
        let last = self.s.close(id)?;
        let mut w = self.words.remove(&id).unwrap_or_default();
        if let Some(seg) = last {
            w.extend(self.segment_words(seg));
        }
        Ok(w)
    }
}

//! The end-to-end family (004): a simulated CTC, RNN-T, TDT or AED model (`ctx-data`'s
//! simulators, knobs `[<dataset>.acoustic_<model>]`) decoded greedily or by beam search, with
//! or without shallow fusion of a token-level n-gram LM held as NGPU-LM arrays (`ngpu-lm`).
//!
//! Methods: `e2e` (greedy), `e2e+ngpu-lm` (greedy with fusion: CTC's three groups, the
//! transducers' two stages, AED's final weights), `e2e+beam` and `e2e+beam+ngpu-lm` (CTC prefix
//! beam search, transducer modified beam search, AED beam search, the LM on every new label).
//! The LM is Kneser-Ney over the dataset's LM text encoded with the model's BPE (Earnings-22 for
//! Earnings-21: out of domain, as 004's SLURP and SPGI LMs are for their models), cached under
//! the graph cache. RTFx counts the model (the simulated network's outputs) and the search, as
//! 004's counts the network and the decoding.

use super::components::ctc_ws::{CtcWs, WordSpotter};
use super::e2e_device::open_device;
use super::e2e_setup::{setup, E2eSetup, Model, WordLmTrie};
use super::family::{
    accuracy_measures, check_global, check_targets, common, record, setup_key_of, Component,
    Family, FamilySpec, GroupContext, SetupCache,
};
use crate::experiment::{Point, SettingSpec, Settings};
use crate::pipeline;
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use ctx_core::scores::ScoreMatrix;
use ctx_data::dataset::Dataset;
use ctx_data::e2e::E2eKind;
use ngpu_lm::beam::NBest;
use ngpu_lm::fusion::{Fusion, LmQuery};
use ngpu_lm::NgramLm;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// The end-to-end family (see the module docs).
pub struct E2e;

/// CTC utterances whose score matrices exist at once.
const CTC_SLICE: usize = 128;

const COMPONENTS: &[Component] = &[
    Component {
        name: "e2e",
        doc: "a simulated end-to-end model (CTC, RNN-T, TDT, AED) decoded greedily (004)",
    },
    Component {
        name: "beam",
        doc: "beam search instead of greedy decoding (CTC prefix, transducer modified, AED)",
    },
    Component {
        name: "ngpu-lm",
        doc: "shallow fusion of a token n-gram LM held as NGPU-LM arrays (004 §2.3)",
    },
    Component {
        name: "kb",
        doc: "keyword boosting: each utterance's list as an Aho-Corasick trie over its BPE pieces (003 §4.1.3; icefall's ContextGraph)",
    },
    Component {
        name: "ctc-ws",
        doc: "CTC-WS: each utterance's phrases spotted in the CTC model's outputs and merged into the greedy hypothesis where they beat its words (NeMo's CTC-based word spotter; model = \"ctc\", greedy)",
    },
    Component {
        name: "wl",
        doc: "WL-3gram-LM: the dataset's word n-gram LM spelled in BPE pieces in one shared Aho-Corasick trie, e^{log10 p} at each n-gram's last piece (003 §4.1.3); with kb the unified trie (keywords α_inLM / α_outLM)",
    },
];

crate::settings_block! {
    /// The simulated model and how it is decoded (every method of the family).
    pub struct E2eModel in "e2e" {
        /// the simulated model: ctc, rnnt, tdt or aed (each calibrated once per dataset)
        model: Option<String> = None => required,
        /// the model's training data: full (the calibrated model), low (004 Table 2: the
        /// same network trained on less data, the dataset's `low_resource_confusion`) or
        /// in-domain (003: trained on the set's own speech, with an internal LM of its
        /// transcripts, the dataset's `in_domain_confusion` and `internal_lm`)
        resources: String = "full".to_string(),
        /// greedy: utterances advanced together (one batched LM query per step)
        batch: usize = 32,
        /// transducers: the most labels per frame
        max_symbols: usize = 10,
        /// decode again until this many seconds were timed (at most 25 runs after one untimed
        /// warm-up; RTFx from the median run, hypotheses checked identical): short sets time too coarsely in one run
        min_timing_s: f64 = 0.0,
    }
}

crate::settings_block! {
    /// Beam search (`beam`).
    pub struct Beam in "beam" {
        /// hypotheses kept per step
        beam_size: usize = 4,
    }
}

crate::settings_block! {
    /// Shallow fusion of the token n-gram LM held as NGPU-LM arrays (004; `ngpu-lm`).
    pub struct NgpuFusion in "ngpu-lm" {
        /// LM weight α (≥ 0; 0 decodes as without the LM)
        lm_alpha: Option<f64> = None => required,
        /// insertion bonus β per label (AED and beam search; cancels in two-stage greedy)
        lm_bonus: f64 = 0.0,
        /// order of the token LM (Kneser-Ney on the LM text in the model's BPE pieces)
        lm_order: usize = 6,
        /// count pruning per order from bigrams, e.g. "0,0,0,1,1" (empty: none)
        lm_prune: String = "0,0,0,1,1".into(),
        /// greedy: full (004's full-vocabulary query) or pruned (only labels that can still
        /// win; same output)
        lm_query: String = "full".into(),
    }
}

crate::settings_block! {
    /// Keyword boosting with Aho-Corasick trees (003's context-biasing; `kb`).
    pub struct Keywords in "kb" {
        /// each utterance's keyword list: sequences, unigrams, gt, list:NAME, file:PATH or KIND+file:PATH
        kb_list: Option<String> = None => required,
        /// bonus per matched piece, taken back when a keyword breaks off (003: 2.0)
        kb_score: f64 = 2.0,
        /// strict (icefall: every overlapping keyword pays), non-strict (back to the root at a
        /// completed keyword) or nemo (NeMo's GPU tree: completed keywords never taken back)
        kb_mode: String = "strict".into(),
        /// NeMo's depth scaling: the piece at depth d ≥ 2 earns kb_score·scale + ln d (0: off)
        kb_depth_scaling: f64 = 0.0,
        /// tokenisations per keyword: 1 the model's own; n > 1 adds up to n − 1 distinct
        /// BPE-dropout samples (NeMo's use_bpe_dropout with num_of_transcriptions = n; 5 there)
        kb_alternatives: usize = 1,
        /// the BPE-dropout probability of those samples (NeMo's bpe_alpha 0.3)
        kb_dropout: f64 = 0.3,
        /// NeMo's unk_score: the bonus of a piece that starts no keyword (0 in its config)
        kb_unk_score: f64 = 0.0,
    }
}

crate::settings_block! {
    /// The WL-n-gram-LM trie's keyword bonuses (003's unified trie; `wl`).
    pub struct WordLm in "wl" {
        /// with kb: α_inLM, added at the last piece of a keyword that is an n-gram of the LM
        /// (003: 0.5)
        wl_in_lm: f64 = 0.5,
        /// with kb: α_outLM, the bonus at the last piece of a keyword outside the LM (003: 1.5)
        wl_out_lm: f64 = 1.5,
    }
}

/// The blocks of the family's components as one point reads them.
struct Blocks {
    common: Common,
    model: E2eModel,
    beam: Beam,
    lm: NgpuFusion,
    kb: Keywords,
    wl: WordLm,
    ws: CtcWs,
}

impl Blocks {
    fn read(s: &Settings) -> Result<Self> {
        Ok(Self {
            common: Common::read(s)?,
            model: E2eModel::read(s)?,
            beam: Beam::read(s)?,
            lm: NgpuFusion::read(s)?,
            kb: Keywords::read(s)?,
            wl: WordLm::read(s)?,
            ws: CtcWs::read(s)?,
        })
    }
}

impl FamilySpec for E2e {
    fn name(&self) -> &'static str {
        "e2e"
    }

    fn marker(&self) -> Option<&'static str> {
        Some("e2e")
    }

    fn components(&self) -> Vec<Component> {
        COMPONENTS.to_vec()
    }

    fn settings(&self) -> Vec<SettingSpec> {
        [
            E2eModel::SPECS,
            Beam::SPECS,
            NgpuFusion::SPECS,
            Keywords::SPECS,
            WordLm::SPECS,
            CtcWs::SPECS,
        ]
        .concat()
    }

    fn check(&self, s: &Settings, what: &str) -> Result<()> {
        let b = Blocks::read(s).with_context(|| what.to_string())?;
        (|| {
            if let Some(m) = &b.model.model {
                if E2eKind::parse(m).is_none() {
                    bail!("model '{m}' (ctc, rnnt, tdt or aed)");
                }
            }
            if !matches!(b.model.resources.as_str(), "full" | "low" | "in-domain") {
                bail!("resources '{}' (full, low or in-domain)", b.model.resources);
            }
            if let Some(a) = b.lm.lm_alpha {
                if !(a.is_finite() && a >= 0.0) {
                    bail!("lm_alpha {a}: the LM weight must be a number ≥ 0");
                }
            }
            if let Some(l) = &b.kb.kb_list {
                crate::pipeline::lists::dataset_kind(crate::key!(Keywords, kb_list), l)?;
            }
            if b.kb.kb_alternatives == 0 {
                bail!(
                    "{} 0: at least 1 (the keyword's own tokenisation)",
                    crate::key!(Keywords, kb_alternatives)
                );
            }
            if !(b.kb.kb_dropout > 0.0 && b.kb.kb_dropout < 1.0) {
                bail!(
                    "{} {}: a probability between 0 and 1 (exclusive)",
                    crate::key!(Keywords, kb_dropout),
                    b.kb.kb_dropout
                );
            }
            if ngpu_lm::boost::Matching::parse(&b.kb.kb_mode).is_none() {
                bail!("kb_mode '{}' (strict, non-strict or nemo)", b.kb.kb_mode);
            }
            for (k, x) in [
                (crate::key!(Keywords, kb_score), b.kb.kb_score),
                (
                    crate::key!(Keywords, kb_depth_scaling),
                    b.kb.kb_depth_scaling,
                ),
                (crate::key!(Keywords, kb_unk_score), b.kb.kb_unk_score),
                (crate::key!(WordLm, wl_in_lm), b.wl.wl_in_lm),
                (crate::key!(WordLm, wl_out_lm), b.wl.wl_out_lm),
            ] {
                let scaling = k == crate::key!(Keywords, kb_depth_scaling);
                if !x.is_finite() || (scaling && x < 0.0) {
                    bail!("{k} {x} must be a finite number (≥ 0 for the scaling)");
                }
            }
            b.ws.check()?;
            if LmQuery::parse(&b.lm.lm_query).is_none() {
                bail!("lm_query '{}' (full or pruned)", b.lm.lm_query);
            }
            parse_prune(&b.lm.lm_prune).context(crate::key!(NgpuFusion, lm_prune))?;
            for (k, v) in [
                (crate::key!(E2eModel, batch), b.model.batch),
                (crate::key!(Beam, beam_size), b.beam.beam_size),
                (crate::key!(E2eModel, max_symbols), b.model.max_symbols),
                (crate::key!(NgpuFusion, lm_order), b.lm.lm_order),
            ] {
                if v == 0 {
                    bail!("'{k}' must be at least 1");
                }
            }
            Ok(())
        })()
        .with_context(|| what.to_string())
    }
}

impl Family for E2e {
    fn check_lists(&self, ds: &Dataset, _full: &Dataset, p: &Point) -> Result<()> {
        check_targets(ds, p)?;
        check_backend(p)?;
        let b = Blocks::read(&p.settings)?;
        if p.method.has("ctc-ws") {
            b.ws.check_point(ds, &p.method, b.model.model.as_deref())?;
        }
        check_global(ds, crate::key!(Keywords, kb_list), b.kb.kb_list.as_deref())
    }

    fn setup_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        format!(
            "{};model={};resources={}",
            setup_key_of("e2e", &b.common),
            b.model.model.as_deref().unwrap_or_default(),
            b.model.resources
        )
    }

    fn writes_text(&self) -> bool {
        true
    }

    fn decode_key(&self, p: &Point) -> String {
        let Ok(b) = Blocks::read(&p.settings) else {
            return String::new();
        };
        // The method decides the search (greedy or beam, fused or not) and which blocks count.
        [
            self.setup_key(p),
            p.method.to_string(),
            format!("threads={};backend={}", b.common.threads, b.common.backend),
            b.model.key(),
            b.beam.key(),
            b.lm.key(),
            b.kb.key(),
            b.wl.key(),
            b.ws.key(),
        ]
        .join(";")
    }

    fn run_group(
        &self,
        cx: &GroupContext<'_>,
        group: &[usize],
        _setup: &mut SetupCache,
    ) -> Result<Vec<PointRecord>> {
        let first = &cx.points[group[0]];
        let b = Blocks::read(&first.settings)?;
        pipeline::reset_peak_mem();
        let st = setup(
            cx,
            self.setup_key(first),
            &b.common,
            b.model.model.as_deref().unwrap_or_default(),
            &b.model.resources,
        )?;
        let fused = first.method.has("ngpu-lm");
        let beam = first.method.has("beam");
        let parts = Parts::build(cx, &st, first, &b)?;
        let own = parts.own();
        let contexts = parts.contexts(&own);
        let fusion = Fusion {
            lm: parts.lm.as_deref().map(|(l, _)| l),
            contexts,
            alpha: if fused {
                b.lm.lm_alpha.unwrap_or(0.0) as f32
            } else {
                0.0
            },
            bonus: if fused { b.lm.lm_bonus as f32 } else { 0.0 },
            query: LmQuery::parse(&b.lm.lm_query).unwrap_or_default(),
            batch: b.model.batch,
            device: None,
            device_contexts: None,
        };
        // The LM's arrays and the trees go to the device once, like loading the LM (not timed;
        // building the trees is timed above).
        check_backend(first)?;
        let (device_lm, device_ctx) =
            open_device(common(first)?.backend, fusion.lm, &fusion.contexts)?;
        let device = match (&device_lm, &device_ctx) {
            (Some(d), _) => d.lock().unwrap_or_else(|e| e.into_inner()).device_name(),
            (None, Some(c)) => c.lock().unwrap_or_else(|e| e.into_inner()).device_name(),
            (None, None) => "cpu".to_string(),
        };
        let fusion = Fusion {
            device: device_lm.as_ref(),
            device_contexts: device_ctx.as_ref(),
            ..fusion
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(b.common.threads.max(1))
            .build()?;
        let utts = &st.dataset.utterances;
        // Timed: the model's outputs and the search (004's RTFx counts network and decoding).
        let search = Search {
            fusion: &fusion,
            beam,
            beam_size: b.beam.beam_size,
            max_symbols: b.model.max_symbols,
            ws: parts.ws.as_ref(),
        };
        let decode = || pool.install(|| search.run(&st));
        let (nbest, times) = timed(decode, b.model.min_timing_s, &st.dataset.name)?;
        let decode_s = times[times.len() / 2] + parts.kb_s;
        let words = |l: &[u32]| -> Vec<String> {
            st.bpe
                .decode(l)
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        let hyps: Vec<Vec<String>> = nbest
            .iter()
            .map(|n| n.first().map(|l| words(l)).unwrap_or_default())
            .collect();
        let oracle = beam.then(|| pipeline::nbest_oracle_wer(utts, &nbest, words));
        let audio_s: f64 = utts.iter().map(|u| u.duration_s).sum();
        let counts = ctx_data::acoustic::TrainingCounts::from_words(
            st.dataset.lm_text.iter().flat_map(|l| l.split_whitespace()),
        );
        let rarity = super::family::rarity_measures(&counts, utts, &hyps);
        let contexts_m = context_measures(
            parts.kb.as_ref(),
            parts.ws.as_ref(),
            parts.wl.as_deref(),
            parts.lm.as_deref(),
            parts.kb_s,
            oracle,
        );
        let mut out = Vec::new();
        for &i in group {
            let p = &cx.points[i];
            if let Some(sink) = cx.sink {
                let text: Vec<(&str, &[String])> = utts
                    .iter()
                    .zip(&hyps)
                    .map(|(u, h)| (u.id.as_str(), h.as_slice()))
                    .collect();
                sink.text(i, &text)?;
            }
            let targets = pipeline::targets(&st.dataset, common(p)?.targets.as_deref())?;
            let t = pipeline::score_dataset(&st.dataset, &hyps, targets.as_ref().map(|(_, t)| t))?;
            let mut m: BTreeMap<String, f64> = accuracy_measures(&t);
            m.extend(rarity.clone());
            m.insert("audio_s".into(), audio_s);
            m.insert("decode_s".into(), decode_s);
            m.insert("rtfx".into(), audio_s / decode_s.max(1e-9));
            if let Some(mb) = pipeline::peak_mem_mb() {
                m.insert("peak_mem_mb".into(), mb);
            }
            m.insert("utterances".into(), utts.len() as f64);
            m.insert("timing_runs".into(), times.len() as f64);
            m.extend(contexts_m.clone());
            out.push(record(cx, i, m, &device));
        }
        Ok(out)
    }
}

/// What a group's search adds to the model: the token LM, the WL trie, the keyword tries and
/// the word spotter its method names, and the seconds spent building the per-utterance ones.
struct Parts {
    lm: Option<Arc<(NgramLm, usize)>>,
    wl: Option<Arc<WordLmTrie>>,
    kb: Option<KeywordTrees>,
    ws: Option<WordSpotter>,
    kb_s: f64,
}

impl Parts {
    fn build(cx: &GroupContext<'_>, st: &E2eSetup, first: &Point, b: &Blocks) -> Result<Self> {
        let lm = if first.method.has("ngpu-lm") {
            Some(st.lm(cx, b.lm.lm_order, &parse_prune(&b.lm.lm_prune)?)?)
        } else {
            None
        };
        // The WL-n-gram-LM trie is built once per dataset, like an LM is loaded (not timed).
        let wl = if first.method.has("wl") {
            Some(st.word_lm_trie(cx)?)
        } else {
            None
        };
        // Keyword lists arrive with their utterances: building the tries counts in RTFx.
        let t_kb = Instant::now();
        let kb = match b.kb.kb_list.as_deref() {
            Some(l) if first.method.has("kb") => Some(keyword_trees(st, b, l, wl.as_deref())?),
            _ => None,
        };
        let ws = if first.method.has("ctc-ws") {
            Some(WordSpotter::new(&st.dataset, &st.bpe, &b.ws)?)
        } else {
            None
        };
        let kb_s = t_kb.elapsed().as_secs_f64();
        Ok(Parts {
            lm,
            wl,
            kb,
            ws,
            kb_s,
        })
    }

    /// Each utterance's keyword trie, in dataset order (empty without keywords).
    fn own(&self) -> Vec<&NgramLm> {
        self.kb
            .as_ref()
            .map(|k| k.which.iter().map(|&i| &k.distinct[i]).collect())
            .unwrap_or_default()
    }

    /// The fusion's contexts: the shared WL trie, the per-utterance tries `own`, both or none.
    fn contexts<'a>(&'a self, own: &'a [&'a NgramLm]) -> ngpu_lm::fusion::Contexts<'a> {
        use ngpu_lm::fusion::Contexts;
        match (&self.wl, &self.kb) {
            (None, None) => Contexts::None,
            (Some(w), None) => Contexts::Shared(&w.tree),
            (None, Some(_)) => Contexts::PerUtterance(own),
            (Some(w), Some(_)) => Contexts::SharedAndPerUtterance(&w.tree, own),
        }
    }
}

/// The measures of a group's contexts, tries and LM (the same for each of its points): list
/// sizes and build time, the WL trie's and LM's sizes, the n-best oracle.
fn context_measures(
    kb: Option<&KeywordTrees>,
    ws: Option<&WordSpotter>,
    wl: Option<&WordLmTrie>,
    lm: Option<&(NgramLm, usize)>,
    kb_s: f64,
    oracle: Option<f64>,
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    if let Some(k) = kb {
        m.insert("context_s".into(), kb_s);
        m.insert("phrases_kept".into(), k.kept as f64);
        m.insert("phrases_dropped".into(), k.dropped as f64);
        m.insert("phrases_duplicate".into(), k.duplicates as f64);
        if wl.is_some() {
            m.insert("keywords_in_lm".into(), k.in_lm as f64);
        }
    }
    if let Some(w) = ws {
        m.insert("context_s".into(), kb_s);
        m.insert("phrases_kept".into(), w.kept as f64);
        m.insert("phrases_dropped".into(), w.dropped as f64);
    }
    if let Some(w) = wl {
        m.insert("wl_ngrams".into(), w.ngrams as f64);
        m.insert("wl_nodes".into(), w.nodes as f64);
        m.insert("wl_mb".into(), w.tree.bytes() as f64 / 1e6);
        m.insert("wl_build_s".into(), w.build_s);
    }
    if let Some(o) = oracle {
        m.insert("oracle_wer".into(), o);
    }
    if let Some((l, ngrams)) = lm {
        m.insert("lm_ngrams".into(), *ngrams as f64);
        m.insert("lm_mb".into(), l.bytes() as f64 / 1e6);
    }
    m
}

/// One pass of a group's search over its dataset: the model's outputs and the decoder, each
/// utterance's final beam best first (greedy: its one hypothesis).
struct Search<'a> {
    fusion: &'a Fusion<'a>,
    beam: bool,
    beam_size: usize,
    max_symbols: usize,
    ws: Option<&'a WordSpotter>,
}

impl Search<'_> {
    fn run(&self, st: &E2eSetup) -> Result<Vec<NBest>> {
        let utts = &st.dataset.utterances;
        let one = |l: Vec<Vec<u32>>| l.into_iter().map(|h| vec![h]).collect::<Vec<_>>();
        Ok(match &st.model {
            Model::Ctc(sim) => {
                // Score matrices in slices of utterances: all of Earnings-21 at once
                // would take 14 GB.
                let mut out = Vec::with_capacity(utts.len());
                let slice = CTC_SLICE.max(self.fusion.batch);
                for (k, part) in utts.chunks(slice).enumerate() {
                    // The slice's own contexts: utterance i of the slice is
                    // utterance k·slice + i of the set.
                    let fusion = Fusion {
                        contexts: self
                            .fusion
                            .contexts
                            .slice(k * slice..k * slice + part.len()),
                        ..*self.fusion
                    };
                    // In order, then the first error in set order.
                    let mats: Vec<Result<ScoreMatrix>> = part
                        .par_iter()
                        .map(|u| Ok(sim.simulate(&u.id, &u.words, u.duration_s)?.0))
                        .collect();
                    let mats = mats.into_iter().collect::<Result<Vec<_>>>()?;
                    let refs: Vec<&ScoreMatrix> = mats.iter().collect();
                    let mut got = if self.beam {
                        ngpu_lm::beam::beam_ctc_nbest(&refs, &fusion, self.beam_size)?
                    } else {
                        one(ngpu_lm::fusion::greedy_ctc(&refs, &fusion)?)
                    };
                    if let Some(ws) = self.ws {
                        got = ws.apply_all(k * slice, got, &mats, &st.bpe)?;
                    }
                    out.extend(got);
                }
                out
            }
            Model::Transducer(sim) => {
                let ms = utts
                    .iter()
                    .map(|u| Ok(sim.simulate(&u.id, &u.words, u.duration_s)?))
                    .collect::<Result<Vec<_>>>()?;
                if self.beam {
                    ngpu_lm::beam::beam_transducer_nbest(
                        &ms,
                        self.fusion,
                        self.beam_size,
                        self.max_symbols,
                    )?
                } else {
                    one(ngpu_lm::fusion::greedy_transducer(
                        &ms,
                        self.fusion,
                        self.max_symbols,
                    )?)
                }
            }
            Model::Aed(sim) => {
                let ms = utts
                    .iter()
                    .map(|u| Ok(sim.simulate(&u.id, &u.words)?))
                    .collect::<Result<Vec<_>>>()?;
                if self.beam {
                    ngpu_lm::beam::beam_aed_nbest(&ms, self.fusion, self.beam_size)?
                } else {
                    one(ngpu_lm::fusion::greedy_aed(&ms, self.fusion)?)
                }
            }
        })
    }
}

/// Decodes until `min_timing` seconds were timed (at most 25 runs after one untimed warm-up;
/// one run when 0), checking every run gives the same hypotheses: the hypotheses and the
/// sorted run times.
fn timed(
    decode: impl Fn() -> Result<Vec<NBest>>,
    min_timing: f64,
    name: &str,
) -> Result<(Vec<NBest>, Vec<f64>)> {
    let (mut times, mut total) = (Vec::new(), 0.0);
    // A timed point first decodes once untimed: the process's first large allocations
    // fault their pages in (measured: whichever of two rows ran first was 11–27% slower,
    // bataev-table1's CTC greedy vs greedy + NGPU-LM).
    let mut labels: Option<Vec<NBest>> = if min_timing > 0.0 {
        Some(decode()?)
    } else {
        None
    };
    while times.is_empty() || (total < min_timing && times.len() < 25) {
        let t0 = Instant::now();
        let l = decode()?;
        let dt = t0.elapsed().as_secs_f64();
        times.push(dt);
        total += dt;
        if labels.as_ref().is_some_and(|prev| *prev != l) {
            bail!("decoding {name} twice gave different hypotheses");
        }
        labels = Some(l);
    }
    times.sort_by(f64::total_cmp);
    Ok((labels.expect("decoded at least once"), times))
}

/// Refuses a backend other than the CPU where there is nothing for the device to run: the
/// device runs greedy decoding's batched full-vocabulary queries of the LM and of the context
/// trees (004's GPU shape; the trees as one forest); beam search queries per hypothesis on the
/// CPU, and a row without fusion or trees has no query.
fn check_backend(p: &Point) -> Result<()> {
    let blocks = Blocks::read(&p.settings)?;
    let b = blocks.common.backend;
    if b == ctx_cuda::Backend::Cpu {
        return Ok(());
    }
    let why = if p.method.has("beam") {
        "beam search queries the LM per hypothesis on the CPU"
    } else if !(p.method.has("ngpu-lm") || p.method.has("kb") || p.method.has("wl")) {
        "a row without NGPU-LM fusion or context trees has no query to run there"
    } else if blocks.lm.lm_query == "pruned" {
        "the device runs the full-vocabulary query (lm_query = \"full\")"
    } else {
        return Ok(());
    };
    bail!(
        "backend '{b}': the e2e family runs greedy decoding's LM and context-tree queries on the device; {why} (set backend = \"cpu\")"
    )
}

fn parse_prune(p: &str) -> Result<Vec<u64>> {
    p.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<u64>()
                .map_err(|_| anyhow!("'{x}' is not a count threshold"))
        })
        .collect()
}

/// Per-utterance keyword tries of a point (`kb_list`, `kb_score`, `kb_mode`,
/// `kb_depth_scaling`; with `wl` the keywords' α_inLM / α_outLM).
struct KeywordTrees {
    /// One per distinct list.
    distinct: Vec<NgramLm>,
    /// The tree of each utterance, in dataset order (an index into `distinct`).
    which: Vec<usize>,
    /// Phrases entered, summed over distinct lists.
    kept: usize,
    /// Of those, keywords that are n-grams of the WL-n-gram-LM (with `wl`).
    in_lm: usize,
    /// Of those, repeats of a phrase already in the same list (merged: the larger score kept).
    duplicates: usize,
    /// Phrases with a word the BPE model cannot spell (a character it lacks), left out.
    dropped: usize,
}

/// Seed of the keyword tries' BPE-dropout samples (with each phrase's text).
const KB_DROPOUT_SEED: u64 = 0x006b_625f_6472_6f70;

/// The keyword tries' scoring: `kb_score` per piece, `kb_mode`'s matching and depth scaling;
/// with the WL trie strict matching without scaling (end bonuses only: the sum with the shared
/// trie is 003's unified trie).
fn boost_options(kb: &Keywords, with_wl: bool) -> Result<ngpu_lm::boost::BoostOptions> {
    use ngpu_lm::boost::Matching;
    let mode = &kb.kb_mode;
    let scaling = kb.kb_depth_scaling as f32;
    Ok(ngpu_lm::boost::BoostOptions {
        default_score: kb.kb_score as f32,
        matching: if with_wl {
            Matching::Strict
        } else {
            Matching::parse(mode).ok_or_else(|| anyhow!("kb_mode '{mode}'"))?
        },
        unk_score: if with_wl { 0.0 } else { kb.kb_unk_score as f32 },
        depth_scaling: (scaling > 0.0 && !with_wl).then_some(scaling),
    })
}

/// Keyword lists, each borrowed from the dataset or made for an utterance.
type DistinctLists<'d> = Vec<std::borrow::Cow<'d, [Vec<String>]>>;

/// The distinct keyword lists of a set's utterances in first-use order, and each utterance's
/// index into them: the dataset's own lists (`sequences`: borrowed, told apart by address) or
/// made per utterance (unigrams, ground truth, global: told apart by content; a phrase file
/// added to an own list by the own list alone, so the union is made once per own list).
fn distinct_lists<'d>(
    ds: &'d ctx_data::dataset::Dataset,
    kind: &crate::pipeline::ListKind,
) -> (DistinctLists<'d>, Vec<usize>) {
    use crate::pipeline::ListKind;
    use std::borrow::Cow;
    let list_of = |u: &ctx_data::dataset::Utterance| -> Cow<'d, [Vec<String>]> {
        match kind {
            ListKind::Sequences => {
                Cow::Borrowed(ds.list_for(u).map_or(&[][..], |l| &l.phrases[..]))
            }
            _ => Cow::Owned(
                crate::pipeline::dataset_list_of(ds, u, kind)
                    .map(|l| l.phrases)
                    .unwrap_or_default(),
            ),
        }
    };
    #[derive(PartialEq, Eq, Hash)]
    enum ListKey {
        Address(usize),
        Content(Vec<Vec<String>>),
    }
    let mut index: rustc_hash::FxHashMap<ListKey, usize> = Default::default();
    let mut lists: Vec<Cow<'d, [Vec<String>]>> = Vec::new();
    let mut which = Vec::with_capacity(ds.utterances.len());
    for u in &ds.utterances {
        let key = match kind {
            ListKind::Plus(..) => ListKey::Content(
                crate::pipeline::dataset_list_of(ds, u, kind.identity())
                    .map(|l| l.phrases)
                    .unwrap_or_default(),
            ),
            _ => match list_of(u) {
                Cow::Borrowed(l) if !l.is_empty() => ListKey::Address(l.as_ptr() as usize),
                l => ListKey::Content(l.to_vec()),
            },
        };
        let next = lists.len();
        let i = *index.entry(key).or_insert_with(|| {
            lists.push(list_of(u));
            next
        });
        which.push(i);
    }
    (lists, which)
}

/// Each utterance's list of `kind` spelled in the model's pieces, as an Aho-Corasick trie; one
/// trie per distinct list, shared by the utterances that have it. Beside a WL-n-gram-LM trie
/// (`wl`) a keyword earns α_inLM or α_outLM at its last piece instead (003's unified trie, the
/// shared n-grams in the other tree).
fn keyword_trees(
    st: &E2eSetup,
    b: &Blocks,
    kind: &str,
    wl: Option<&WordLmTrie>,
) -> Result<KeywordTrees> {
    use crate::pipeline::ListKind;
    use ngpu_lm::boost::{boosting_tree, lm_keyword_phrases, Phrase};
    let kind = ListKind::parse(kind).ok_or_else(|| anyhow!("kb_list '{kind}'"))?;
    let opts = boost_options(&b.kb, wl.is_some())?;
    let (in_lm, out_lm) = (b.wl.wl_in_lm as f32, b.wl.wl_out_lm as f32);
    let ds = &st.dataset;
    let v = st.bpe.len();
    let (lists, which) = distinct_lists(ds, &kind);
    // Each distinct word spelled once (BPE encoding is the slow part of building the tries).
    let mut words: Vec<&str> = lists
        .iter()
        .flat_map(|l| l.iter())
        .flatten()
        .map(String::as_str)
        .collect::<rustc_hash::FxHashSet<&str>>()
        .into_iter()
        .collect();
    words.sort_unstable();
    let spelled: rustc_hash::FxHashMap<&str, Option<Vec<u32>>> =
        words.into_par_iter().map(|w| (w, st.spell(w))).collect();
    let spell = |w: &str| spelled.get(w).cloned().flatten();
    let built: Vec<(NgramLm, usize, usize, usize, usize)> =
        lists
            .par_iter()
            .enumerate()
            .map(|(k, list)| {
                let (mut phrases, mut dropped, mut found, mut kept) = (Vec::new(), 0, 0, 0);
                if let Some(w) = wl {
                    let (ph, rep) = lm_keyword_phrases(&w.lm, spell, list, in_lm, out_lm);
                    phrases = ph;
                    dropped = rep.keywords_unspelled;
                    found = rep.keywords_in_lm;
                }
                for ph in list.iter().filter(|_| wl.is_none()) {
                    let mut labels = Vec::with_capacity(4 * ph.len());
                    let ok = ph.iter().all(|w| match spelled.get(w.as_str()) {
                        Some(Some(l)) => {
                            labels.extend_from_slice(l);
                            true
                        }
                        _ => false,
                    });
                    if ok && !labels.is_empty() {
                        // NeMo's alternative transcriptions: BPE-dropout samples, seeded by the
                        // phrase's text (labels are piece ids − 1, as `spell` gives them).
                        let n = b.kb.kb_alternatives.saturating_sub(1);
                        let samples =
                            st.bpe
                                .dropout_samples(ph, n, b.kb.kb_dropout, KB_DROPOUT_SEED);
                        phrases.push(Phrase::keyword(labels, None));
                        phrases.extend(samples.into_iter().map(|l| {
                            Phrase::keyword(l.into_iter().map(|id| id - 1).collect(), None)
                        }));
                        kept += 1;
                    } else {
                        dropped += 1;
                    }
                }
                if wl.is_some() {
                    kept = phrases.len();
                }
                let (tree, rep) = boosting_tree(&phrases, v, &opts).with_context(|| {
                    let u = which.iter().position(|&w| w == k).unwrap_or(0);
                    format!("the keyword trie of utterance {}", ds.utterances[u].id)
                })?;
                Ok((tree, kept, dropped, found, rep.duplicates))
            })
            .collect::<Result<_>>()?;
    let kept = built.iter().map(|b| b.1).sum();
    let duplicates = built.iter().map(|b| b.4).sum();
    let dropped = built.iter().map(|b| b.2).sum();
    let in_lm = built.iter().map(|b| b.3).sum();
    let distinct: Vec<NgramLm> = built.into_iter().map(|b| b.0).collect();
    Ok(KeywordTrees {
        distinct,
        which,
        kept,
        in_lm,
        duplicates,
        dropped,
    })
}

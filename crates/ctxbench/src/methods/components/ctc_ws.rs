//! CTC-WS (NVIDIA NeMo's CTC-based word spotter, Andrusenko et al., Interspeech 2024; the
//! `ctc-ws` crate): each utterance's phrases spotted in a CTC model's log-probabilities and
//! merged into its greedy hypothesis where they beat the greedy words (the end-to-end family's
//! `e2e+ctc-ws`, model = "ctc").

use crate::pipeline::lists::{spelled_list_of, ListKind};
use anyhow::{anyhow, Context, Result};
use ctc_ws::{ContextGraph, Labels, SpotterConfig};
use ctx_core::context_list::ContextPhrase;
use ctx_core::scores::ScoreMatrix;
use ctx_data::bpe::{Bpe, UNK};
use ctx_data::dataset::Dataset;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

crate::settings_block! {
    /// CTC-WS (`ctc-ws`; defaults: NeMo's script).
    pub struct CtcWs in "ctc-ws" {
        /// each utterance's phrases to spot: sequences, unigrams, gt, list:NAME, file:PATH, nemo:PATH or KIND+file:PATH
        ws_list: Option<String> = None => required,
        /// beam of the spotter's token passing (NeMo 5.0)
        ws_beam: f64 = 5.0,
        /// context score earned by each non-blank frame of a phrase (NeMo 3.0)
        ws_context_score: f64 = 3.0,
        /// weight of each greedy label when a spot is compared with the greedy words it covers
        /// (NeMo's ctc_ali_token_weight, 0.6)
        ws_ali_weight: f64 = 0.6,
        /// a spot's least score (NeMo −5.0)
        ws_keyword_threshold: f64 = -5.0,
        /// no phrase starts on a frame whose blank probability is above this (NeMo 0.8)
        ws_blank_threshold: f64 = 0.8,
        /// no phrase starts with a label of probability below this (NeMo 0.001)
        ws_non_blank_threshold: f64 = 0.001,
    }
}

impl CtcWs {
    /// The spotter's settings (overlap rules: NeMo's).
    pub fn config(&self) -> SpotterConfig {
        SpotterConfig {
            beam: self.ws_beam as f32,
            context_score: self.ws_context_score as f32,
            ali_token_weight: self.ws_ali_weight as f32,
            keyword_threshold: self.ws_keyword_threshold as f32,
            blank_threshold: self.ws_blank_threshold as f32,
            non_blank_threshold: self.ws_non_blank_threshold as f32,
            ..SpotterConfig::default()
        }
    }

    /// Refuses a list kind the spotter cannot take and settings out of range, naming them.
    pub fn check(&self) -> Result<()> {
        if let Some(l) = &self.ws_list {
            crate::pipeline::lists::dataset_kind(crate::key!(CtcWs, ws_list), l)?;
        }
        self.config().check().context("ctc-ws settings (ws_*)")?;
        Ok(())
    }
}

impl CtcWs {
    /// A point of `e2e+ctc-ws` must decode a CTC model greedily, alone, and name a list `ds`
    /// has.
    pub fn check_point(
        &self,
        ds: &Dataset,
        method: &crate::experiment::Method,
        model: Option<&str>,
    ) -> Result<()> {
        let others = ["beam", "ngpu-lm", "kb", "wl"];
        if model != Some("ctc") || others.iter().any(|c| method.has(c)) {
            anyhow::bail!(
                "method {method}: CTC-WS merges its spots into a CTC model's greedy hypothesis (model = \"ctc\", without {})",
                others.join(", ")
            );
        }
        crate::pipeline::lists::check_global(
            ds,
            crate::key!(CtcWs, ws_list),
            self.ws_list.as_deref(),
        )
    }
}

/// The spotter of every utterance: one context graph per distinct list (lists arrive with
/// their utterances, so building them is timed), the model's labels, the settings.
pub struct WordSpotter {
    graphs: Vec<Arc<ContextGraph>>,
    which: Vec<usize>,
    labels: Labels,
    cfg: SpotterConfig,
    /// Phrases spelled and spotted for, summed over utterances.
    pub kept: usize,
    /// Phrases left out (a character the model's pieces lack), summed over utterances.
    pub dropped: usize,
    /// Seconds spent building the graphs.
    pub build_s: f64,
}

impl WordSpotter {
    /// Builds the graphs of `ds`'s utterances' lists of `b.ws_list` over `bpe`'s pieces
    /// (column 0 the blank, column i piece i).
    pub fn new(ds: &Dataset, bpe: &Bpe, b: &CtcWs) -> Result<Self> {
        let t0 = Instant::now();
        let name = b.ws_list.as_deref().unwrap_or_default();
        let kind = ListKind::parse(name).ok_or_else(|| anyhow!("ws_list '{name}'"))?;
        crate::pipeline::lists::require_named(ds, &kind)?;
        let width = bpe.len() + 1;
        let mut pieces = vec!["<blk>".to_string()];
        pieces.extend(bpe.pieces().iter().cloned());
        let spell = |phrase: &[String]| -> Option<Vec<u32>> {
            let mut out = Vec::new();
            for w in phrase {
                for p in bpe.encode_word(w) {
                    if p == UNK {
                        return None;
                    }
                    out.push(bpe.id(&p)?);
                }
            }
            (!out.is_empty()).then_some(out)
        };
        type Key = Vec<(Vec<String>, Vec<Vec<String>>)>;
        let mut index: HashMap<Key, usize> = HashMap::new();
        let (mut graphs, mut which) = (Vec::new(), Vec::with_capacity(ds.utterances.len()));
        let (mut kept, mut dropped) = (0, 0);
        let mut sizes: Vec<(usize, usize)> = Vec::new();
        for u in &ds.utterances {
            // Told apart by the list's identity: a file is joined once per distinct own list.
            let key: Key = spelled_list_of(ds, u, kind.identity())
                .unwrap_or_default()
                .into_iter()
                .map(|p| (p.words, p.spellings))
                .collect();
            let next = graphs.len();
            let i = match index.get(&key) {
                Some(&i) => i,
                None => {
                    let list: Vec<ContextPhrase> =
                        spelled_list_of(ds, u, &kind).unwrap_or_default();
                    // NeMo's context file: a phrase and its spellings; the spot writes the
                    // phrase. A spelling with a character the pieces lack is left out, and the
                    // phrase with it when no spelling is left.
                    let mut items = Vec::new();
                    let mut lost = 0;
                    for p in &list {
                        let spelled: Vec<Vec<u32>> = p.spelled().filter_map(&spell).collect();
                        if spelled.is_empty() {
                            lost += 1;
                        } else {
                            items.push((p.words.join(" "), spelled));
                        }
                    }
                    let g = ContextGraph::new(&items, 0, width)
                        .with_context(|| format!("the CTC-WS graph of utterance {}", u.id))?;
                    graphs.push(Arc::new(g));
                    sizes.push((items.len(), lost));
                    index.insert(key, next);
                    next
                }
            };
            kept += sizes[i].0;
            dropped += sizes[i].1;
            which.push(i);
        }
        Ok(Self {
            graphs,
            which,
            labels: Labels { pieces, blank: 0 },
            cfg: b.config(),
            kept,
            dropped,
            build_s: t0.elapsed().as_secs_f64(),
        })
    }

    /// [`Self::apply`] to each utterance's greedy hypothesis (the first of its n-best) of a
    /// slice of the set starting at utterance `first`, in parallel.
    pub fn apply_all(
        &self,
        first: usize,
        got: Vec<ngpu_lm::beam::NBest>,
        mats: &[ScoreMatrix],
        bpe: &Bpe,
    ) -> Result<Vec<ngpu_lm::beam::NBest>> {
        use rayon::prelude::*;
        got.into_par_iter()
            .zip(mats)
            .enumerate()
            .map(|(i, (mut n, m))| {
                let greedy = std::mem::take(&mut n[0]);
                n[0] = self.apply(first + i, m, greedy, bpe)?;
                Ok(n)
            })
            .collect()
    }

    /// Utterance `i`'s hypothesis: its greedy `labels` (token ids) with the spots of `lp`
    /// merged in, re-encoded in `bpe`'s pieces (unchanged when nothing is spotted).
    pub fn apply(
        &self,
        i: usize,
        lp: &ScoreMatrix,
        greedy: Vec<u32>,
        bpe: &Bpe,
    ) -> Result<Vec<u32>> {
        let g = &self.graphs[self.which[i]];
        let spots = ctc_ws::spot(lp, g, &self.labels, &self.cfg)?;
        if spots.is_empty() {
            return Ok(greedy);
        }
        let words = ctc_ws::greedy_words(lp, &self.labels);
        let merged = ctc_ws::merge(&words, &spots, g, self.cfg.merge_overlap);
        Ok(bpe.encode(&merged.join(" ")))
    }
}

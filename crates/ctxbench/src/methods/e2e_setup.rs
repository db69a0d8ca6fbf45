//! The end-to-end family's shared setup: one dataset's utterances, BPE model and simulated
//! model, with the token LMs and the WL-n-gram-LM trie its points build on first use.

use super::family::GroupContext;
use crate::settings::Common;
use anyhow::{anyhow, bail, Context, Result};
use ctx_data::acoustic::CtcSim;
use ctx_data::bpe::Bpe;
use ctx_data::dataset::Dataset;
use ctx_data::e2e::{AedSim, E2eKind, TransducerSim};
use ngpu_lm::NgramLm;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The simulated model of a setup.
pub(super) enum Model {
    Ctc(CtcSim),
    Transducer(TransducerSim),
    Aed(AedSim),
}

/// What the points of one dataset and model share: utterances, BPE, the model, and the token
/// LMs built so far (by order and pruning).
pub(super) struct E2eSetup {
    pub(super) dataset: Dataset,
    pub(super) bpe: Bpe,
    pub(super) model: Model,
    lms: Mutex<BTreeMap<String, Arc<(NgramLm, usize)>>>,
    wl: Mutex<Option<Arc<WordLmTrie>>>,
}

/// The WL-n-gram-LM trie of a dataset (003 §4.1.3): its word LM's n-grams spelled in the
/// model's pieces, shared by every utterance; the LM kept to tell keywords in it from others.
pub(super) struct WordLmTrie {
    pub(super) tree: NgramLm,
    pub(super) lm: ctx_core::arpa::ArpaLm,
    pub(super) ngrams: usize,
    pub(super) nodes: usize,
    pub(super) build_s: f64,
}

/// The last setup, kept while consecutive groups share it (BPE training and the LM estimate
/// are the slow parts).
static SETUP: Mutex<Option<(String, Arc<E2eSetup>)>> = Mutex::new(None);

/// The setup of a group's points (`key`: the family's setup key of its first point; `model`
/// and `resources`: its `e2e` block), reused while consecutive groups share the key.
pub(super) fn setup(
    cx: &GroupContext<'_>,
    key: String,
    common: &Common,
    model: &str,
    resources: &str,
) -> Result<Arc<E2eSetup>> {
    let mut cache = SETUP.lock().map_err(|_| anyhow!("setup cache poisoned"))?;
    if let Some((k, st)) = cache.as_ref() {
        if *k == key {
            return Ok(st.clone());
        }
    }
    *cache = None;
    let name = common.dataset();
    let mut dataset = Dataset::load(cx.reg, name, common.subset())
        .with_context(|| format!("loading dataset {name}"))?;
    super::family::apply_limit(common, name, &mut dataset.utterances)?;
    let m = model;
    let kind = E2eKind::parse(m).ok_or_else(|| anyhow!("model '{m}' (ctc, rnnt, tdt or aed)"))?;
    let base = name.trim_end_matches("-quick");
    let mut knobs = cx.reg.get(base)?.acoustic_e2e(kind).cloned().ok_or_else(|| {
        anyhow!(
            "dataset {base} has no simulated {} knobs ([{base}.acoustic_{}] in the registry): each end-to-end model is calibrated once per dataset",
            kind.name(),
            kind.name()
        )
    })?;
    knobs = match resources {
        "full" => knobs,
        "low" => knobs.low_resource().ok_or_else(|| {
            anyhow!(
                "dataset {base} has no low-resource {} model (low_resource_confusion in [{base}.acoustic_{}]): it is calibrated once per dataset and model kind",
                kind.name(),
                kind.name()
            )
        })?,
        "in-domain" => knobs.in_domain().ok_or_else(|| {
            anyhow!(
                "dataset {base} has no in-domain {} model (in_domain_confusion in [{base}.acoustic_{}]): it is calibrated once per dataset and model kind",
                kind.name(),
                kind.name()
            )
        })?,
        r => bail!("resources '{r}' (full, low or in-domain)"),
    };
    if let Some(n) = common.noise {
        knobs = knobs.with_noise(n);
    }
    let bpe_size = common.bpe_size;
    let bpe = Bpe::train(&dataset.lm_text, bpe_size)?;
    let vocab = dataset.lm_text.iter().flat_map(|l| l.split_whitespace());
    let text = dataset.lm_text.iter().map(String::as_str);
    let model = match kind {
        E2eKind::Ctc => Model::Ctc(
            CtcSim::new(knobs, bpe.clone())
                .with_vocabulary(vocab)
                .with_training_text(text),
        ),
        E2eKind::Rnnt | E2eKind::Tdt => Model::Transducer(
            TransducerSim::new(knobs, bpe.clone(), kind == E2eKind::Tdt)
                .with_vocabulary(vocab)
                .with_training_text(text),
        ),
        E2eKind::Aed => Model::Aed(
            AedSim::new(knobs, bpe.clone())
                .with_vocabulary(vocab)
                .with_training_text(text),
        ),
    };
    let st = Arc::new(E2eSetup {
        dataset,
        bpe,
        model,
        lms: Mutex::new(BTreeMap::new()),
        wl: Mutex::new(None),
    });
    *cache = Some((key, st.clone()));
    Ok(st)
}

impl E2eSetup {
    /// Spells a word in the model's pieces as 0-based labels (`None`: a character the BPE
    /// model lacks).
    pub(super) fn spell(&self, w: &str) -> Option<Vec<u32>> {
        self.bpe
            .encode_word(w)
            .iter()
            .map(|piece| self.bpe.id(piece).map(|id| id - 1))
            .collect()
    }

    /// The dataset's WL-n-gram-LM trie (its word LM, the one its graphs are compiled from:
    /// Earnings-22 text for Earnings-21), built on first use (strict matching, end bonuses).
    pub(super) fn word_lm_trie(&self, cx: &GroupContext<'_>) -> Result<Arc<WordLmTrie>> {
        let mut wl = self
            .wl
            .lock()
            .map_err(|_| anyhow!("WL trie cache poisoned"))?;
        if let Some(w) = wl.as_ref() {
            return Ok(w.clone());
        }
        let t0 = Instant::now();
        let name = self.dataset.name.trim_end_matches("-quick");
        let subset = if name.len() < self.dataset.name.len() {
            ctx_data::dataset::Subset::Quick
        } else {
            ctx_data::dataset::Subset::Full
        };
        let lm = ctx_data::graphs::dataset_lm(cx.reg, name, subset)
            .with_context(|| format!("the word LM of {name}"))?;
        let words: Vec<&str> = lm.vocab().iter().map(String::as_str).collect();
        let spelled: std::collections::HashMap<&str, Option<Vec<u32>>> =
            words.par_iter().map(|w| (*w, self.spell(w))).collect();
        let (phrases, rep) = ngpu_lm::boost::word_lm_phrases(
            &lm,
            |w| spelled.get(w).cloned().flatten(),
            &[],
            0.0,
            0.0,
        );
        let (tree, brep) = ngpu_lm::boost::boosting_tree(
            &phrases,
            self.bpe.len(),
            &ngpu_lm::boost::BoostOptions::default(),
        )
        .with_context(|| format!("the WL-n-gram-LM trie of {name}"))?;
        let w = Arc::new(WordLmTrie {
            tree,
            ngrams: rep.ngrams,
            nodes: brep.nodes,
            build_s: t0.elapsed().as_secs_f64(),
            lm,
        });
        *wl = Some(w.clone());
        Ok(w)
    }

    /// The token LM of an order and count pruning (a point's `lm_order` and `lm_prune`) as
    /// arrays, and its n-gram count.
    pub(super) fn lm(
        &self,
        cx: &GroupContext<'_>,
        order: usize,
        prune: &[u64],
    ) -> Result<Arc<(NgramLm, usize)>> {
        let key = format!("{order};{prune:?}");
        let mut lms = self.lms.lock().map_err(|_| anyhow!("LM cache poisoned"))?;
        if let Some(l) = lms.get(&key) {
            return Ok(l.clone());
        }
        // The LM text of the full dataset (a quick subset keeps it whole).
        let (arpa, _) =
            ctx_data::graphs::dataset_token_lm(&self.dataset, &self.bpe, order, prune, cx.cache)
                .with_context(|| format!("the token LM of {}", self.dataset.name))?;
        let (arr, report) = NgramLm::from_arpa(&arpa, self.bpe.pieces())
            .with_context(|| format!("NGPU-LM arrays of the token LM of {}", self.dataset.name))?;
        let l = Arc::new((arr, report.ngrams));
        lms.insert(key, l.clone());
        Ok(l)
    }
}

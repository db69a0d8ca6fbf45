//! The LM and G behind on-the-fly G-boosting, loaded with a setup (003 §3.1.3, "online").

use anyhow::{anyhow, Result};
use ctx_data::dataset::Subset;
use ctx_data::registry::Registry;
use ctx_graph::compile::Graph;
use ctx_graph::gboost::{GBoost, GBoostReport};
use std::collections::BTreeSet;
use wfst_search::Booster;

/// On-the-fly G-boosting (003 §3.1.3, "online"): the graph stays the unboosted HCLG, and each
/// stream carries its own list's cost change as a word automaton composed during the search, so
/// a list costs no compile. Two forms: the exact difference G_boosted − G
/// ([`wfst_search::LmDelta`], Kaldi's biglm scheme; one G edit per list) and the phrase-prefix
/// automaton ([`wfst_search::PhraseAutomaton`]), equal to it under the back-off rule (tested)
/// with far fewer automaton states.
pub struct OtfGBoost {
    lm: Option<ctx_core::arpa::ArpaLm>,
    words: ctx_core::symbols::SymbolTable,
    backoff: u32,
    small: std::sync::OnceLock<std::sync::Arc<wfst_search::BackoffLm>>,
}

impl OtfGBoost {
    /// The dataset's LM (the one `graph` was compiled from) and the graph's word table. A
    /// `files` dataset has an LM only when its entry names one (`lm`); without it the phrase
    /// automaton keeps every phrase whose words the graph has, and the exact mode is refused.
    /// `subset` picks the LM of that subset's graph ([`ctx_data::graphs::dataset_lm`]; audio
    /// and files entries have one LM for both).
    pub fn new(reg: &Registry, name: &str, graph: &Graph, subset: Subset) -> Result<Self> {
        let lm = match reg.get(name)? {
            ctx_data::registry::DatasetSpec::Files(f) => match &f.lm {
                Some(p) => Some(ctx_core::arpa::ArpaLm::read(&reg.resolve(p))?),
                None => None,
            },
            ctx_data::registry::DatasetSpec::Audio(a) => {
                Some(crate::audio::audio_lm(reg, name, a)?.0)
            }
            _ => Some(ctx_data::graphs::dataset_lm(reg, name, subset)?),
        };
        Ok(Self {
            lm,
            words: graph.symbols.words.clone(),
            backoff: graph.symbols.word_disambig,
            small: std::sync::OnceLock::new(),
        })
    }

    fn lm(&self) -> Result<&ctx_core::arpa::ArpaLm> {
        self.lm.as_ref().ok_or_else(|| {
            anyhow!("on-the-fly-lm G-boosting needs the LM the graph was built from: add `lm = \"G.arpa\"` to the files entry (or use --gboost-mode on-the-fly)")
        })
    }

    /// G read deterministically (built on first use).
    fn small(&self) -> Result<std::sync::Arc<wfst_search::BackoffLm>> {
        if let Some(s) = self.small.get() {
            return Ok(s.clone());
        }
        let (g, _) = ctx_graph::grammar::build_grammar_fst(
            self.lm()?,
            &self.words,
            self.backoff,
            ctx_graph::grammar::MissingWords::Skip,
        )?;
        let s = std::sync::Arc::new(wfst_search::BackoffLm::from_fst(&g, self.backoff)?);
        Ok(self.small.get_or_init(|| s).clone())
    }

    /// The phrase-prefix booster of one list: the phrases G-boosting keeps (every word in the
    /// LM and the graph) as word ids, the discount per word that ends a prefix.
    pub fn phrase_booster(
        &self,
        phrases: &[Vec<String>],
        discount: f32,
    ) -> Result<(Booster, GBoostReport)> {
        let distinct: BTreeSet<&Vec<String>> = phrases.iter().filter(|p| !p.is_empty()).collect();
        let mut report = GBoostReport {
            phrases: distinct.len(),
            ..GBoostReport::default()
        };
        let specials = [ctx_core::arpa::BOS, ctx_core::arpa::EOS];
        let mut ids: Vec<Vec<u32>> = Vec::new();
        for p in distinct {
            let labels: Option<Vec<u32>> = p
                .iter()
                .map(|w| {
                    let in_lm = self.lm.as_ref().is_none_or(|lm| lm.word_id(w).is_some());
                    if specials.contains(&w.as_str()) || !in_lm {
                        None
                    } else {
                        self.words.id(w)
                    }
                })
                .collect();
            match labels {
                Some(l) => ids.push(l),
                None => report.dropped += 1,
            }
        }
        report.kept = ids.len();
        if ids.is_empty() {
            return Ok((Booster::None, report));
        }
        let a = wfst_search::PhraseAutomaton::new(&ids, discount)?;
        Ok((Booster::Phrases(a), report))
    }

    /// The exact booster of one list: G edited towards `phrases` with `discount` (exactly as
    /// static G-boosting edits it), minus G. An empty list (or one whose phrases all drop)
    /// boosts nothing.
    pub fn lm_booster(
        &self,
        phrases: Vec<Vec<String>>,
        discount: f32,
    ) -> Result<(Booster, GBoostReport)> {
        let boost = GBoost { phrases, discount };
        let (edit, report) = ctx_graph::gboost::gboost_edit(self.lm()?, &self.words, &boost)?;
        if report.kept == 0 {
            return Ok((Booster::None, report));
        }
        let (gb, _) = ctx_graph::grammar::build_grammar_fst_with(
            self.lm()?,
            &self.words,
            self.backoff,
            ctx_graph::grammar::MissingWords::Skip,
            &edit,
        )?;
        let big = wfst_search::BackoffLm::from_fst(&gb, self.backoff)?;
        let delta = wfst_search::LmDelta::new(big, Some(self.small()?))?;
        Ok((Booster::Lm(delta), report))
    }
}

//! A decoding graph over the model's senones: every pronunciation's phones become the
//! triphones pocketsphinx would use (word-internal contexts; silence outside the word, as at a
//! pause; each resolved through the mdef tree with pocketsphinx's back-offs,
//! [`Mdef::nearest_phone`]), each triphone an HMM over its senone sequence with the self-loop
//! probabilities of its transition matrix, ready for ctx-graph's HCLG compilation
//! ([`ctx_graph::compile::compile_hclg_units`]). Cross-word context is not modelled: the
//! triphones at word edges see silence, pocketsphinx's own back-off at a pause.

use crate::error::{Result, SphinxError};
use crate::mdef::WordPos;
use crate::Model;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::hmm::UnitHmms;
use std::collections::HashMap;

/// Natural-log value of one unit of a senone score (log base 1.0001, 10 bits dropped).
pub fn score_unit_nats() -> f64 {
    1024.0 * 1.0001f64.ln()
}

/// A lexicon over triphone units, the units, and their HMMs.
#[derive(Debug, Clone)]
pub struct TriphoneLexicon {
    /// Every pronunciation spelled in triphone units.
    pub lexicon: Lexicon,
    /// The unit inventory (ids 1.. in this order); `SIL` is among them.
    pub units: Vec<String>,
    /// Per unit its senones (pdf-ids = senone ids) and per senone its transition costs.
    pub hmms: UnitHmms,
}

impl TriphoneLexicon {
    /// Spells `words` (pronunciations in the model's base phones, e.g. CMUdict's) in the
    /// model's triphones. A phone the model lacks is an error naming the word.
    pub fn build(model: &Model, words: &Lexicon) -> Result<Self> {
        let mdef = &model.mdef;
        let bad = |what: String| SphinxError::Mismatch {
            dir: model.dir.clone(),
            what,
        };
        let mut unit_of_pid: HashMap<usize, u32> = HashMap::new();
        let mut units: Vec<String> = Vec::new();
        let mut pdfs: Vec<Vec<u32>> = Vec::new();
        let n = mdef.n_senone;
        let mut loop_cost: Vec<Option<f32>> = vec![None; n];
        let mut enter_cost: Vec<f32> = vec![0.0; n];
        let mut unit = |pid: usize| -> Result<String> {
            if let Some(&u) = unit_of_pid.get(&pid) {
                return Ok(units[u as usize - 1].clone());
            }
            let ph = mdef.phones[pid];
            let name = if pid < mdef.n_ci() {
                mdef.ci_names[pid].clone()
            } else {
                let [b, l, r] = ph.ctx.map(|x| mdef.ci_names[x as usize].as_str());
                format!("{b}({l},{r}){}", ["i", "b", "e", "s"][ph.info0 as usize])
            };
            let sen: Vec<u32> = mdef.senones(pid).iter().map(|&s| s as u32).collect();
            for (k, &s) in sen.iter().enumerate() {
                let a = model.tmat.prob(ph.tmat as usize, k, k) as f64;
                let (lc, ec) = (-(a.ln()) as f32, -((1.0 - a).ln()) as f32);
                match loop_cost[s as usize] {
                    None => {
                        loop_cost[s as usize] = Some(lc);
                        enter_cost[s as usize] = ec;
                    }
                    Some(prev) if (prev - lc).abs() > 1e-5 => {
                        return Err(bad(format!(
                            "senone {s} loops with two probabilities ({prev} and {lc} in {name})"
                        )))
                    }
                    Some(_) => {}
                }
            }
            units.push(name.clone());
            pdfs.push(sen);
            unit_of_pid.insert(pid, units.len() as u32);
            Ok(name)
        };
        unit(mdef.sil)?;
        let mut lexicon = Lexicon::new();
        for e in words.entries() {
            let ids = e
                .phones
                .iter()
                .map(|p| {
                    mdef.ci(p).ok_or_else(|| {
                        bad(format!("word '{}': phone {p} is not in the model", e.word))
                    })
                })
                .collect::<Result<Vec<usize>>>()?;
            let k = ids.len();
            let mut phones = Vec::with_capacity(k);
            for i in 0..k {
                let left = if i == 0 { mdef.sil } else { ids[i - 1] };
                let right = if i + 1 == k { mdef.sil } else { ids[i + 1] };
                let pos = match (i == 0, i + 1 == k) {
                    (true, true) => WordPos::Single,
                    (true, false) => WordPos::Begin,
                    (false, true) => WordPos::End,
                    (false, false) => WordPos::Internal,
                };
                phones.push(unit(mdef.nearest_phone(ids[i], left, right, pos))?);
            }
            lexicon.push(LexiconEntry {
                word: e.word.clone(),
                prob: e.prob,
                phones,
            });
        }
        // Senones no unit uses keep zero costs: they never label an arc.
        let loop_cost = loop_cost.into_iter().map(|c| c.unwrap_or(0.0)).collect();
        Ok(Self {
            lexicon,
            units,
            hmms: UnitHmms {
                pdfs,
                loop_cost,
                enter_cost,
            },
        })
    }
}

/// Senone scores (0 = the frame's best, one unit ≈ 0.1024 nats worse) as log-likelihoods
/// relative to the frame's best senone, one row per frame: what a WFST decoder reads.
pub fn log_likelihoods(scores: &[Vec<i16>]) -> Result<ScoreMatrix> {
    let cols = scores.first().map_or(0, Vec::len);
    let unit = score_unit_nats();
    let data: Vec<f32> = scores
        .iter()
        .flat_map(|row| row.iter().map(move |&s| (-(s as f64) * unit) as f32))
        .collect();
    ScoreMatrix::new(scores.len(), cols, data)
        .map_err(|e| SphinxError::Invalid(format!("senone scores: {e}")))
}

//! A decoding graph over the model's senones: every pronunciation's phones become the
//! triphones pocketsphinx would use (word-internal contexts; silence outside the word, as at a
//! pause; each resolved through the mdef tree with pocketsphinx's back-offs,
//! [`Mdef::nearest_phone`]), each triphone an HMM over its senone sequence with the self-loop
//! probabilities of its transition matrix, ready for ctx-graph's HCLG compilation
//! ([`ctx_graph::compile::compile_hclg_units`]): [`TriphoneLexicon`], where the triphones at
//! word edges see silence (pocketsphinx's context at a pause). [`CrossWordLexicon`] models
//! the neighbouring words' phones as context instead, through C
//! ([`ctx_graph::compile::compile_hclg_context`]), as pocketsphinx's search does.

use crate::error::{Result, SphinxError};
use crate::mdef::{Mdef, WordPos};
use crate::Model;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::hmm::UnitHmms;
use ctx_graph::lexicon_fst::{build_lexicon_fst_by_class, LexiconFst, SilenceOptions};
use ctx_graph::phone_context::{build_context_fst, ContextFst, ContextSpec};
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

/// The HMMs of the model's phones as units, added as they are first used: each phone's
/// senone sequence with its transition matrix's self-loop and exit costs.
struct PhoneHmms<'m> {
    model: &'m Model,
    unit_of_pid: HashMap<usize, u32>,
    units: Vec<String>,
    pdfs: Vec<Vec<u32>>,
    loop_cost: Vec<Option<f32>>,
    enter_cost: Vec<f32>,
}

impl<'m> PhoneHmms<'m> {
    fn new(model: &'m Model) -> Self {
        let n = model.mdef.n_senone;
        Self {
            model,
            unit_of_pid: HashMap::new(),
            units: Vec::new(),
            pdfs: Vec::new(),
            loop_cost: vec![None; n],
            enter_cost: vec![0.0; n],
        }
    }

    fn mismatch(&self, what: String) -> SphinxError {
        SphinxError::Mismatch {
            dir: self.model.dir.clone(),
            what,
        }
    }

    /// The unit (1-based) of phone `pid`, added on first use.
    fn add(&mut self, pid: usize) -> Result<u32> {
        if let Some(&u) = self.unit_of_pid.get(&pid) {
            return Ok(u);
        }
        let u = self.push(pid)?;
        self.unit_of_pid.insert(pid, u);
        Ok(u)
    }

    /// A new unit (1-based) for phone `pid`, even if one exists.
    fn push(&mut self, pid: usize) -> Result<u32> {
        let mdef = &self.model.mdef;
        let ph = mdef.phones[pid];
        let name = phone_name(mdef, pid);
        let sen: Vec<u32> = mdef.senones(pid).iter().map(|&s| s as u32).collect();
        for (k, &s) in sen.iter().enumerate() {
            let a = self.model.tmat.prob(ph.tmat as usize, k, k) as f64;
            let (lc, ec) = (-(a.ln()) as f32, -((1.0 - a).ln()) as f32);
            match self.loop_cost[s as usize] {
                None => {
                    self.loop_cost[s as usize] = Some(lc);
                    self.enter_cost[s as usize] = ec;
                }
                Some(prev) if (prev - lc).abs() > 1e-5 => {
                    return Err(self.mismatch(format!(
                        "senone {s} loops with two probabilities ({prev} and {lc} in {name})"
                    )))
                }
                Some(_) => {}
            }
        }
        self.units.push(name);
        self.pdfs.push(sen);
        Ok(self.units.len() as u32)
    }

    fn finish(self) -> (Vec<String>, UnitHmms) {
        // Senones no unit uses keep zero costs: they never label an arc.
        let loop_cost = self
            .loop_cost
            .into_iter()
            .map(|c| c.unwrap_or(0.0))
            .collect();
        (
            self.units,
            UnitHmms {
                pdfs: self.pdfs,
                loop_cost,
                enter_cost: self.enter_cost,
            },
        )
    }
}

/// A phone's name: the base phone's, or `base(left,right)p` with p the word position
/// (`i`, `b`, `e`, `s`).
fn phone_name(mdef: &Mdef, pid: usize) -> String {
    if pid < mdef.n_ci() {
        return mdef.ci_names[pid].clone();
    }
    let ph = mdef.phones[pid];
    let [b, l, r] = ph.ctx.map(|x| mdef.ci_names[x as usize].as_str());
    format!("{b}({l},{r}){}", ["i", "b", "e", "s"][ph.info0 as usize])
}

/// The word position of phone `i` of a `k`-phone pronunciation.
fn word_pos(i: usize, k: usize) -> WordPos {
    match (i == 0, i + 1 == k) {
        (true, true) => WordPos::Single,
        (true, false) => WordPos::Begin,
        (false, true) => WordPos::End,
        (false, false) => WordPos::Internal,
    }
}

/// A pronunciation with its phones as (base phone, word position).
type Positioned = (LexiconEntry, Vec<(usize, WordPos)>);

/// Each pronunciation's phones as base-phone ids with their word positions; a phone the model
/// lacks is an error naming the word.
fn positioned(model: &Model, words: &Lexicon) -> Result<Vec<Positioned>> {
    let mdef = &model.mdef;
    words
        .entries()
        .iter()
        .map(|e| {
            let k = e.phones.len();
            let ids = e
                .phones
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let ci = mdef.ci(p).ok_or_else(|| SphinxError::Mismatch {
                        dir: model.dir.clone(),
                        what: format!("word '{}': phone {p} is not in the model", e.word),
                    })?;
                    let pos = word_pos(i, k);
                    Ok((ci, pos))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((e.clone(), ids))
        })
        .collect()
}

impl TriphoneLexicon {
    /// Spells `words` (pronunciations in the model's base phones, e.g. CMUdict's) in the
    /// model's triphones; the units are silence, the base phones `fillers` (for optional
    /// noise between words) and the triphones used. A phone the model lacks is an error naming
    /// the word.
    pub fn build(model: &Model, words: &Lexicon, fillers: &[usize]) -> Result<Self> {
        let mdef = &model.mdef;
        let mut hmms = PhoneHmms::new(model);
        hmms.add(mdef.sil)?;
        for &f in fillers {
            hmms.add(f)?;
        }
        let mut lexicon = Lexicon::new();
        for (e, ids) in positioned(model, words)? {
            let k = ids.len();
            let mut phones = Vec::with_capacity(k);
            for (i, &(base, pos)) in ids.iter().enumerate() {
                let left = if i == 0 { mdef.sil } else { ids[i - 1].0 };
                let right = if i + 1 == k { mdef.sil } else { ids[i + 1].0 };
                let u = hmms.add(mdef.nearest_phone(base, left, right, pos))?;
                phones.push(hmms.units[u as usize - 1].clone());
            }
            lexicon.push(LexiconEntry { phones, ..e });
        }
        let (units, hmms) = hmms.finish();
        Ok(Self {
            lexicon,
            units,
            hmms,
        })
    }
}

/// Every phone of the model — base phones and triphones — as a unit (unit `pid + 1`) with its
/// HMM: what an open-vocabulary context's words are spelled in (contexts on the real
/// model), each word's phones as the triphones pocketsphinx uses within a word, silence outside
/// it (a context is entered at a word edge: the graph module's `GraphOptions::context_slot`).
#[derive(Debug, Clone)]
pub struct PhoneUnits {
    /// Per unit its senones and per senone its transition costs (as the HCLG's).
    pub hmms: UnitHmms,
}

impl PhoneUnits {
    /// All of `model`'s phones as units.
    ///
    /// ```
    /// # let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    /// let model = sphinx_am::Model::load(&root.join("datasets/sphinx-en-us")).unwrap();
    /// let units = sphinx_am::hclg::PhoneUnits::new(&model).unwrap();
    /// let ten = units.spell(&model, &["T", "EH", "N"]).unwrap();
    /// // T at the word's start between silence and EH, as pocketsphinx's dict2pid resolves it.
    /// let m = &model.mdef;
    /// let (t, eh, sil) = (m.ci("T").unwrap(), m.ci("EH").unwrap(), m.sil);
    /// let pos = sphinx_am::mdef::WordPos::Begin;
    /// assert_eq!(ten[0] as usize, m.nearest_phone(t, sil, eh, pos) + 1);
    /// assert_eq!(units.spell(&model, &["T", "QQ"]), None);
    /// ```
    pub fn new(model: &Model) -> Result<Self> {
        let mut hmms = PhoneHmms::new(model);
        for pid in 0..model.mdef.phones.len() {
            hmms.push(pid)?;
        }
        Ok(Self {
            hmms: hmms.finish().1,
        })
    }

    /// A word's base phones as units: word-internal triphones, silence beyond its edges
    /// (`None` when a phone is not the model's, or the word has none).
    pub fn spell<S: AsRef<str>>(&self, model: &Model, phones: &[S]) -> Option<Vec<u32>> {
        let mdef = &model.mdef;
        let ids: Vec<usize> = phones
            .iter()
            .map(|p| mdef.ci(p.as_ref()))
            .collect::<Option<_>>()?;
        let k = ids.len();
        if k == 0 {
            return None;
        }
        Some(
            (0..k)
                .map(|i| {
                    let pos = word_pos(i, k);
                    let left = if i == 0 { mdef.sil } else { ids[i - 1] };
                    let right = if i + 1 == k { mdef.sil } else { ids[i + 1] };
                    mdef.nearest_phone(ids[i], left, right, pos) as u32 + 1
                })
                .collect(),
        )
    }
}

/// A lexicon over position-dependent base phones (`AH_B`, `AH_I`, `AH_E`, `AH_S`; fillers
/// as themselves) with C, the context transducer that turns them into the model's triphones
/// across word boundaries, and the triphones' HMMs. A phone's context is its neighbours' base
/// phones, in the next or previous word at a word's edges, silence at the utterance's;
/// fillers (silence, noise) break context. Each (base, left, right, position) is resolved as
/// pocketsphinx's dict2pid does ([`Mdef::nearest_phone`]).
#[derive(Debug, Clone)]
pub struct CrossWordLexicon {
    /// Every pronunciation spelled in position-dependent phones.
    pub lexicon: Lexicon,
    /// L's unit inventory (ids 1.. in this order); `SIL` first.
    pub units: Vec<String>,
    /// L over `units` (homophones and prefixes found among base-phone sequences, since a
    /// word-position variant can share its triphone with another position's).
    pub l: LexiconFst,
    /// C over `units`.
    pub context: ContextFst,
    /// The HMM of each of C's context-dependent labels, and their names.
    pub hmms: UnitHmms,
    /// The triphone names of C's labels (label `i + 1` is `cd_names[i]`).
    pub cd_names: Vec<String>,
}

impl CrossWordLexicon {
    /// Spells `words` in position-dependent phones and builds L (with `silence` between
    /// words) and C over them; the base phones `fillers` are units too (context-independent,
    /// for optional noise between words). With `slot`, L spells the context slot and C reads
    /// it as a word edge.
    pub fn build(
        model: &Model,
        words: &Lexicon,
        silence: Option<&SilenceOptions>,
        fillers: &[usize],
        slot: bool,
    ) -> Result<Self> {
        let mdef = &model.mdef;
        let suffix = |pos: WordPos| match pos {
            WordPos::Internal => "I",
            WordPos::Begin => "B",
            WordPos::End => "E",
            WordPos::Single => "S",
        };
        // Units: SIL first, then in order of first use; each with its base and position.
        let mut unit_of: HashMap<(usize, Option<WordPos>), u32> = HashMap::new();
        let mut units: Vec<String> = Vec::new();
        let mut unit_phone: Vec<(usize, Option<WordPos>)> = Vec::new();
        let mut unit = |base: usize, pos: WordPos| -> String {
            // Fillers are context-independent: one unit whatever the position.
            let key = (base, (!mdef.is_filler(base)).then_some(pos));
            let u = *unit_of.entry(key).or_insert_with(|| {
                units.push(match key.1 {
                    Some(p) => format!("{}_{}", mdef.ci_names[base], suffix(p)),
                    None => mdef.ci_names[base].clone(),
                });
                unit_phone.push(key);
                units.len() as u32
            });
            units[u as usize - 1].clone()
        };
        unit(mdef.sil, WordPos::Single);
        for &f in fillers {
            if !mdef.is_filler(f) {
                return Err(SphinxError::Invalid(format!(
                    "{} is not a filler phone of the model",
                    mdef.ci_names[f]
                )));
            }
            unit(f, WordPos::Single);
        }
        let mut lexicon = Lexicon::new();
        for (e, ids) in positioned(model, words)? {
            let phones = ids.iter().map(|&(b, p)| unit(b, p)).collect();
            lexicon.push(LexiconEntry { phones, ..e });
        }
        let class_of_unit: Vec<u32> = unit_phone.iter().map(|&(b, _)| b as u32).collect();
        let l = build_lexicon_fst_by_class(&lexicon, &units, silence, &class_of_unit, slot)?;
        let spec = ContextSpec {
            class_of_unit,
            independent: unit_phone.iter().map(|&(_, p)| p.is_none()).collect(),
            edge_class: mdef.sil as u32,
            num_disambig: l.symbols.num_disambig,
            // The slot is spelled by L's last disambiguation symbol.
            flush_disambig: slot.then(|| l.symbols.num_disambig - 1),
        };
        // A key per (unit, phone): the same triphone at two word positions (a back-off) keeps
        // two labels, as Kaldi's transition-ids keep position-dependent phones apart.
        let mut key_of: HashMap<(u32, usize), u32> = HashMap::new();
        let mut key_phone: Vec<usize> = Vec::new();
        let context = build_context_fst(&spec, |l, u, r| {
            let (base, pos) = unit_phone[u as usize - 1];
            let pid = match pos {
                None => base,
                Some(pos) => mdef.nearest_phone(base, l as usize, r as usize, pos),
            };
            Ok(*key_of.entry((u, pid)).or_insert_with(|| {
                key_phone.push(pid);
                key_phone.len() as u32 - 1
            }))
        })
        .map_err(|e| SphinxError::Invalid(format!("context transducer: {e}")))?;
        let mut hmms = PhoneHmms::new(model);
        for &key in &context.keys {
            hmms.push(key_phone[key as usize])?;
        }
        let (cd_names, hmms) = hmms.finish();
        Ok(Self {
            lexicon,
            units,
            l,
            context,
            hmms,
            cd_names,
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

//! Open-vocabulary contexts: each utterance's list compiled at run time over the
//! graph's input units and entered through the graph's class slot.

use crate::pipeline::lists::{ListKind, OpenList};
use crate::pipeline::search::DecodeSettings;
use crate::pipeline::setup::{Acoustic, Setup};
use crate::pipeline::utterance_lists::{list_identity, list_of};
use anyhow::{bail, Result};
use ctx_core::context_list::ContextList;
use ctx_data::bpe::Bpe;
use ctx_data::pronounce::Pronouncer;
use ctx_graph::compile::GraphKind;
use ctx_graph::context::{ClassCost, ContextGraph};
use ctx_graph::hmm::HmmTopology;
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use wfst_search::{Booster, PhraseAutomaton};

/// Every utterance's open-vocabulary context, compiled from its list at run time.
pub struct OpenContexts {
    /// Per utterance in dataset order (`None`: an empty list).
    pub contexts: Vec<Option<Arc<ContextGraph>>>,
    /// Per utterance, the main graph's side of negative weights: the in-vocabulary phrases'
    /// costs when a path completes them (a word automaton; `None` when none).
    pub penalties: Vec<Option<Booster>>,
    /// In-vocabulary phrases with a negative weight, summed over utterances.
    pub penalized: usize,
    /// Phrases compiled, summed over utterances.
    pub phrases: usize,
    /// Phrases left out (a word the model's pieces cannot spell), summed over utterances.
    pub unspellable: usize,
    /// Seconds spent compiling (each distinct list once).
    pub build_s: f64,
    /// Distinct lists compiled (one phrase file for all: 1).
    pub lists: usize,
}

/// How a phrase's words become the graph's input units: BPE pieces over a TLG (a simulated
/// CTC model), or phones (the lexicon, letter-to-sound for unknown words) laid out as the
/// HCLG's monophone HMMs (a simulated hybrid model), or a real model's triphones.
enum Spell<'a> {
    Pieces(&'a Bpe, ctx_graph::ctc::CtcTopology),
    Phones(&'a Pronouncer, ctx_graph::hmm::UnitHmms),
    Triphones(&'a crate::audio::ContextSpeller),
}

/// The setup's speller, or an error naming a graph open-vocabulary contexts cannot extend.
fn speller(setup: &Setup) -> Result<Spell<'_>> {
    Ok(match (&setup.acoustic, setup.graph.kind) {
        (Acoustic::Ctc(sim), GraphKind::Tlg(topo)) => Spell::Pieces(sim.bpe(), topo),
        (Acoustic::Hybrid { pron, .. }, GraphKind::Hclg) => Spell::Phones(
            pron,
            ctx_graph::hmm::UnitHmms::uniform(
                &HmmTopology::default(),
                setup.graph.symbols.num_units,
            ),
        ),
        (Acoustic::Audio(m), GraphKind::Hclg) => match &m.speller {
            Some(sp) => Spell::Triphones(sp),
            None => bail!(
                "dataset {}: the graph was loaded without the class slot open-vocabulary contexts need",
                setup.dataset.name
            ),
        },
        _ => bail!(
            "dataset {}: open-vocabulary contexts are compiled for a CTC model's TLG or a hybrid \
             model's HCLG (this setup: {} graph)",
            setup.dataset.name,
            setup.graph.kind.name()
        ),
    })
}

/// Compiles each utterance's `list` (phrases without their own weight at `weight`) into a
/// context graph over the TLG's tokens (the simulated CTC model's BPE pieces, the TLG's
/// topology, the decoder's word insertion penalty, at most `max_pause_s` of blanks between two
/// tokens of a phrase — `None`: unbounded; hybrid contexts have no blanks, a hybrid graph's
/// contexts are its phones' HMMs); utterances sharing a list share its graph. A
/// phrase with a negative weight is a penalty only: it is left out of the context graph (a
/// context path skips the LM costs of its words, so its copy could be cheaper than the main
/// path's even at a negative weight) and its in-vocabulary form gets a completion-cost
/// automaton ([`PhraseAutomaton::penalties`]) to stack on the stream's booster: −weight on
/// every main path that writes it.
pub fn open_contexts(
    setup: &Setup,
    list: &OpenList,
    weight: f32,
    max_pause_s: Option<f64>,
    class: ClassCost,
    settings: &DecodeSettings,
) -> Result<OpenContexts> {
    let max_blanks = max_pause_s.map(|s| ((s / setup.frame_s).round() as u32).max(1));
    let spell = speller(setup)?;
    let units = &setup.graph.symbols.units;
    let pronounce = |w: &str| -> Option<Vec<u32>> {
        match &spell {
            Spell::Phones(pron, _) => {
                let (prons, _) = pron.pronounce(w).ok()?;
                prons.first()?.iter().map(|p| units.id(p)).collect()
            }
            Spell::Triphones(sp) => sp.spell(w),
            Spell::Pieces(..) => None,
        }
    };
    if let OpenList::Dataset(kind) = list {
        crate::pipeline::lists::require_named(&setup.dataset, kind)?;
    }
    let t = Instant::now();
    // A phrase file is read as a list arrives (its time counts); errors name file and line.
    let file = match list {
        OpenList::File(f) => Some(f.read(weight)?),
        OpenList::Dataset(_) => None,
    };
    let wip = settings.word_insertion_penalty;
    let words = &setup.graph.symbols.words;
    let compile = |cl: &ContextList| -> Result<Built> {
        context_of(cl, words, wip, |offered| {
            Ok(match &spell {
                Spell::Pieces(bpe, topo) => ContextGraph::compile_priced(
                    offered,
                    |w| Some(bpe.encode(w)),
                    *topo,
                    max_blanks,
                    class,
                )?,
                Spell::Phones(_, hmms) => {
                    ContextGraph::compile_hybrid_priced(offered, pronounce, hmms, class)?
                }
                Spell::Triphones(sp) => {
                    ContextGraph::compile_hybrid_priced(offered, pronounce, &sp.units.hmms, class)?
                }
            })
        })
    };
    let shared = file.as_ref().map(&compile).transpose()?;
    let mut built: BTreeMap<Vec<Vec<String>>, Built> = BTreeMap::new();
    let mut out = OpenContexts {
        contexts: Vec::with_capacity(setup.dataset.utterances.len()),
        penalties: Vec::with_capacity(setup.dataset.utterances.len()),
        penalized: 0,
        phrases: 0,
        unspellable: 0,
        build_s: 0.0,
        lists: 1,
    };
    for u in &setup.dataset.utterances {
        let (c, pen) = match list {
            // Compiled once above, for every utterance.
            OpenList::File(_) => shared.clone().unwrap_or_default(),
            // Told apart by the list's identity: a file added to an utterance's own list is
            // joined to it once per distinct own list, not per utterance.
            OpenList::Dataset(kind) => match built.entry(list_identity(setup, u, kind)) {
                Entry::Occupied(e) => e.get().clone(),
                Entry::Vacant(e) => {
                    let cl = ContextList {
                        phrases: list_of(setup, u, kind)
                            .phrases
                            .into_iter()
                            .map(|w| ctx_core::context_list::ContextPhrase::new(w, weight))
                            .collect(),
                    };
                    e.insert(compile(&cl)?).clone()
                }
            },
        };
        if let Some(g) = &c {
            out.phrases += g.phrases;
            out.unspellable += g.unspellable.len();
        }
        out.penalized += pen.as_ref().map_or(0, |p| p.1);
        out.contexts.push(c);
        out.penalties.push(pen.map(|p| p.0));
    }
    out.build_s = t.elapsed().as_secs_f64();
    if !built.is_empty() {
        out.lists = built.len();
    }
    Ok(out)
}

/// A list's context graph, and its penalty booster with the phrases it penalises.
pub type Built = (Option<Arc<ContextGraph>>, Option<(Booster, usize)>);

/// One list's open-vocabulary context, the CLI's rule and the Python package's: phrases of
/// non-negative weight go to the context graph `compile` makes (then charged the word insertion
/// penalty `wip` on every word, as the graph's own word arcs are); a negative weight only
/// penalises — the phrase stays out of the context graph (whose copy skips the LM costs of its
/// words, so even at a negative weight it can be cheaper than the main path's) and its
/// in-vocabulary form (`words`) costs −weight on the main path: a booster, and how many
/// phrases it penalises.
pub fn context_of(
    cl: &ContextList,
    words: &ctx_core::symbols::SymbolTable,
    wip: f32,
    compile: impl FnOnce(&ContextList) -> Result<ContextGraph>,
) -> Result<Built> {
    let pen = PhraseAutomaton::penalties(cl, |w| words.id(w).filter(|&i| i != 0))?
        .map(|(a, n)| (Booster::Phrases(a), n));
    let offered = ContextList {
        phrases: cl
            .phrases
            .iter()
            .filter(|p| p.weight >= 0.0)
            .cloned()
            .collect(),
    };
    if offered.phrases.is_empty() {
        return Ok((None, pen));
    }
    let mut g = compile(&offered)?;
    ctc_wfst::add_word_penalty(&mut g, wip);
    Ok((Some(Arc::new(g)), pen))
}

crate::settings_block! {
    /// The open-vocabulary component's settings, shared by the families that decode
    /// a graph with the class slot (wfst over an HCLG, ctc-wfst over a TLG, hclg-boost).
    pub struct OpenVocab in "open-vocab" {
        /// open-vocabulary list: each utterance's sequences, gt or list:NAME, or one phrase file
        /// for all, file:PATH (phrase<TAB>weight per line) or nemo:PATH (NeMo spellings)
        open_vocab: Option<String> = None => required,
        /// reward of a completed phrase of the list (graph units; earned only at its end)
        open_vocab_weight: f64 = 5.0,
        /// cost of entering the class slot from the LM's empty history (graph units; part of
        /// the graph, so a new value builds a new graph)
        open_vocab_entry: f64 = 4.0,
        /// longest run of blanks between two tokens of a phrase, in seconds (CTC contexts; 0:
        /// no bound): a longer pause ends the match. The default, a second (25 frames of a
        /// 40 ms CTC model), is longer than any pause between two spikes of the simulated
        /// models' names (at most 24 frames on ATCO2-1h, 22 on Earnings-21) and short enough
        /// that a context path cannot read blanks over the words spoken between a phrase's two
        /// names
        open_vocab_max_pause: f64 = 1.0,
        /// what choosing one phrase of the list costs besides its weight: none, or uniform
        /// (a class of N phrases: ln N, pushed towards the phrase's start, so that a big
        /// list's unlikely prefixes leave the beam early)
        open_vocab_class_cost: ClassCost = ClassCost::None,
    }
}

crate::choice_setting!(ClassCost);

impl OpenVocab {
    /// The list, when the component is on (an unknown kind is an error naming it).
    pub fn list(&self) -> Result<Option<OpenList>> {
        self.open_vocab
            .as_deref()
            .map(|l| {
                OpenList::parse(l).ok_or_else(|| {
                    anyhow::anyhow!(
                        "open_vocab '{l}' (sequences, unigrams, gt, list:NAME, file:PATH, nemo:PATH)"
                    )
                })
            })
            .transpose()
    }

    /// Checks the values: a known list, a pause in seconds, costs a path can still be
    /// compared with (graph-cost units: beyond a thousand a setting decides every path alone;
    /// an entry of -1e30 made every utterance a context path, WER 273.7).
    pub fn check(&self) -> Result<()> {
        self.list()?;
        let pause = self.open_vocab_max_pause;
        if pause.is_nan() || pause < 0.0 {
            bail!("open_vocab_max_pause {pause}: a pause in seconds, 0 for no bound");
        }
        for (k, v) in [
            (
                crate::key!(OpenVocab, open_vocab_weight),
                self.open_vocab_weight,
            ),
            (
                crate::key!(OpenVocab, open_vocab_entry),
                self.open_vocab_entry,
            ),
        ] {
            if !(v.is_finite() && v.abs() <= 1000.0) {
                let v = if v.is_finite() {
                    format!("{:e}", v as f32)
                } else {
                    v.to_string()
                };
                let flag = k.replace('_', "-");
                bail!("{k} (--{flag}) {v}: a cost in graph units, finite and at most 1000 in magnitude");
            }
        }
        Ok(())
    }

    /// The class slot's entry cost the graph is built with (`None` without a list: the plain
    /// graph).
    pub fn slot(&self) -> Option<f32> {
        self.open_vocab
            .as_ref()
            .map(|_| self.open_vocab_entry as f32)
    }

    /// What a setup key adds: the slot's cost (nothing without a list).
    pub fn setup_key(&self) -> String {
        match self.slot() {
            Some(_) => format!(";slot={}", self.open_vocab_entry),
            None => String::new(),
        }
    }

    /// Compiles every utterance's context for `st` (`None` without a list;
    /// [`open_contexts`]).
    pub fn compile(&self, st: &Setup, settings: &DecodeSettings) -> Result<Option<OpenContexts>> {
        self.check()?;
        let Some(list) = self.list()? else {
            return Ok(None);
        };
        let pause = self.open_vocab_max_pause;
        let max_pause = (pause > 0.0).then_some(pause);
        open_contexts(
            st,
            &list,
            self.open_vocab_weight as f32,
            max_pause,
            self.open_vocab_class_cost,
            settings,
        )
        .map(Some)
    }

    /// The part of a decode key that a `file:PATH` list adds: a hash of the file's bytes (a
    /// changed file is a new point; an unreadable one fails when the point runs).
    pub fn file_key(&self) -> String {
        let Ok(Some(OpenList::File(f))) = self.list() else {
            return String::new();
        };
        match std::fs::read(&f.path) {
            // FNV-1a: stable across runs and builds, unlike the std hasher.
            Ok(bytes) => {
                let h = ctx_core::hash::fnv1a(&bytes);
                format!(";open_file={h:016x}")
            }
            Err(_) => ";open_file=unreadable".into(),
        }
    }

    /// Checks that a `file:PATH` list reads (its errors name the file and line) and holds a
    /// phrase, before anything runs; a `list:NAME` must be a global list of `ds`.
    pub fn check_lists(&self, ds: &ctx_data::dataset::Dataset) -> Result<()> {
        match self.list()? {
            Some(OpenList::File(f)) => {
                let l = f
                    .read(1.0)
                    .map_err(|e| anyhow::anyhow!("open_vocab '{f}': {e:#}"))?;
                // An empty list would decode unbiased under an open-vocabulary label (issue
                // 58), as an empty --bias-list is refused.
                if l.is_empty() {
                    bail!("open_vocab '{f}': the file holds no phrase");
                }
            }
            Some(OpenList::Dataset(ListKind::Global(n))) if !ds.has_list(&n) => {
                bail!(
                    "open_vocab 'list:{n}': dataset {} has no list '{n}' ({})",
                    ds.name,
                    crate::pipeline::lists::lists_it_has(ds)
                );
            }
            _ => {}
        }
        Ok(())
    }
}

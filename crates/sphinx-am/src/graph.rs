//! The decoding graph of a model, a lexicon and an LM in one call: the lexicon spelled in the
//! model's triphones — across word boundaries through C ([`CrossWordLexicon`], the default, as
//! pocketsphinx decodes) or within words only ([`TriphoneLexicon`]) — L with optional silence
//! between words, G from the
//! ARPA LM (optionally G-boosted towards a phrase list, 003 §3.1.3), and HCLG over the model's
//! senones with each senone's self-loop cost from the transition matrices. Input label k reads
//! senone k − 1.

use crate::error::{Result, SphinxError};
use crate::hclg::{CrossWordLexicon, TriphoneLexicon};
use crate::Model;
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::Lexicon;
use ctx_graph::compile::{compile_hclg_context, compile_hclg_units, Graph};
use ctx_graph::gboost::{gboost_edit, GBoost};
use ctx_graph::grammar::{
    add_context_slot, build_grammar_fst_with, GrammarEdit, GrammarReport, MissingWords,
};
use ctx_graph::lexicon_fst::{add_unit_loop, build_lexicon_fst_with, SilenceOptions};

/// pocketsphinx's `-silprob`: the probability of a silence between words.
pub const PS_SILPROB: f32 = 0.005;
/// pocketsphinx's `-fillprob`: the probability of a filler (noise) between words.
pub const PS_FILLPROB: f32 = 1e-8;
/// pocketsphinx's `-wip`: the word insertion probability.
pub const PS_WIP: f32 = 0.65;
/// pocketsphinx's `-fwdflatlw`: the language weight of its flat-lexicon Viterbi pass over
/// whole words with cross-word triphones — the search a static HCLG performs. (Its `-lw` 6.5
/// weighs the lexicon-tree pass, whose LM score comes late; its `-bestpathlw` 9.5 the lattice
/// pass after both.)
pub const PS_LANGUAGE_WEIGHT: f32 = 8.5;

/// Which phone context the graph models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PhoneContext {
    /// Triphones across word boundaries: a word's first and last phones see the neighbouring
    /// words' phones (H ∘ C ∘ L ∘ G; pocketsphinx's search).
    #[default]
    CrossWord,
    /// Triphones within words; a word's edge phones see silence (H ∘ L ∘ G over triphone
    /// units; smaller and faster to build).
    WordInternal,
}

impl PhoneContext {
    /// `cross-word` or `word-internal`.
    pub fn name(&self) -> &'static str {
        match self {
            PhoneContext::CrossWord => "cross-word",
            PhoneContext::WordInternal => "word-internal",
        }
    }

    /// Parses [`PhoneContext::name`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "cross-word" => Some(PhoneContext::CrossWord),
            "word-internal" => Some(PhoneContext::WordInternal),
            _ => None,
        }
    }
}

/// How a hybrid graph over the model is built. Costs are graph costs, against acoustic
/// log-likelihoods scaled by 1 / language weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphOptions {
    /// Phone context.
    pub context: PhoneContext,
    /// Cost of an optional silence between words.
    pub silence_cost: f32,
    /// Cost of an optional filler (the model's noise phones, e.g. `+NSN+`, `+SPN+`) between
    /// words; `None`: no fillers.
    pub filler_cost: Option<f32>,
    /// Cost charged on every word (a word insertion penalty).
    pub word_cost: f32,
    /// What the HMMs' transition costs (−ln of the model's transition probabilities) are
    /// multiplied by in the graph: pocketsphinx adds transition log-probabilities to the
    /// acoustic score, so at language weight `lw` they weigh 1 / `lw` in graph units, as the
    /// acoustic log-likelihoods do (Kaldi's recipes keep them at 1, beside the LM).
    pub transition_scale: f32,
    /// The class slot of open-vocabulary contexts and its entry cost: the word
    /// [`CONTEXT_SLOT`](ctx_graph::lexicon_fst::CONTEXT_SLOT) as a self-loop of G's empty
    /// history; with cross-word context C reads it as a word edge, so the slot's ε-arcs sit
    /// where the previous word is complete. `None`: no slot.
    pub context_slot: Option<f32>,
}

impl GraphOptions {
    /// pocketsphinx's defaults (`-silprob 0.005 -fillprob 1e-8 -wip 0.65`) at language weight
    /// `lw`: pocketsphinx adds these log-probabilities unscaled beside `lw` × the LM's, so
    /// in graph units each costs −ln p / `lw`.
    pub fn pocketsphinx(lw: f32) -> Self {
        Self::from_probs(lw, PS_SILPROB, Some(PS_FILLPROB), PS_WIP)
    }

    /// Options from pocketsphinx-style probabilities at language weight `lw`.
    pub fn from_probs(lw: f32, silprob: f32, fillprob: Option<f32>, wip: f32) -> Self {
        let cost = |p: f32| -p.ln() / lw;
        Self {
            context: PhoneContext::CrossWord,
            silence_cost: cost(silprob),
            filler_cost: fillprob.map(cost),
            word_cost: cost(wip),
            transition_scale: 1.0 / lw,
            context_slot: None,
        }
    }
}

impl Default for GraphOptions {
    /// [`GraphOptions::pocketsphinx`] at [`PS_LANGUAGE_WEIGHT`].
    fn default() -> Self {
        Self::pocketsphinx(PS_LANGUAGE_WEIGHT)
    }
}

/// Builds HCLG for `model` from `words` (pronunciations in the model's base phones, e.g.
/// CMUdict's) and `lm`; LM words without a pronunciation are left out of G (listed in the
/// report). `gboost` biases G before compiling.
///
/// ```
/// # let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
/// use ctx_core::arpa::ArpaLm;
/// use ctx_core::lexicon::{Lexicon, LexiconFormat};
/// let model = sphinx_am::Model::load(&root.join("datasets/sphinx-en-us")).unwrap();
/// let dir = root.join("datasets/pocketsphinx-test");
/// let words = Lexicon::read(&dir.join("lexicon.txt"), LexiconFormat::Kaldi).unwrap();
/// let lm = ArpaLm::read(&dir.join("lm.arpa")).unwrap();
/// let opts = sphinx_am::graph::GraphOptions::default();
/// let (hclg, report) = sphinx_am::graph::build_hclg(&model, &words, &lm, None, &opts).unwrap();
/// // Only the LM's `<unk>` has no pronunciation.
/// assert_eq!(report.skipped_words, ["<unk>"]);
/// // Every input label is a senone of the model.
/// assert!(hclg.num_columns as usize <= model.mdef.n_senone);
/// ```
pub fn build_hclg(
    model: &Model,
    words: &Lexicon,
    lm: &ArpaLm,
    gboost: Option<&GBoost>,
    opts: &GraphOptions,
) -> Result<(Graph, GrammarReport)> {
    let check = |what: &str, c: f32| {
        if c.is_finite() && c >= 0.0 {
            Ok(())
        } else {
            Err(SphinxError::Invalid(format!(
                "{what} {c} must be finite and non-negative"
            )))
        }
    };
    check("silence cost", opts.silence_cost)?;
    check("word cost", opts.word_cost)?;
    check("transition scale", opts.transition_scale)?;
    let slot = opts.context_slot.is_some();
    if let Some(c) = opts.filler_cost {
        check("filler cost", c)?;
    }
    let sil = SilenceOptions {
        unit: model.mdef.ci_names[model.mdef.sil].clone(),
        prob: (-opts.silence_cost).exp().min(1.0 - f32::EPSILON),
    };
    // The word cost rides on every pronunciation's probability.
    let mut charged = Lexicon::new();
    for e in words.entries() {
        let mut e = e.clone();
        e.prob *= (-opts.word_cost).exp();
        charged.push(e);
    }
    let words = &charged;
    let fillers: Vec<usize> = match opts.filler_cost {
        Some(_) => filler_phones(model),
        None => Vec::new(),
    };
    let (cross, tri, mut l) = match opts.context {
        PhoneContext::CrossWord => {
            let mut c = CrossWordLexicon::build(model, words, Some(&sil), &fillers, slot)?;
            c.hmms.scale_costs(opts.transition_scale);
            let l = c.l.clone();
            (Some(c), None, l)
        }
        PhoneContext::WordInternal => {
            let mut t = TriphoneLexicon::build(model, words, &fillers)?;
            t.hmms.scale_costs(opts.transition_scale);
            let l = build_lexicon_fst_with(&t.lexicon, &t.units, Some(&sil), slot)?;
            (None, Some(t), l)
        }
    };
    if let Some(cost) = opts.filler_cost {
        for &f in &fillers {
            add_unit_loop(&mut l, &model.mdef.ci_names[f], cost)?;
        }
    }
    let (edit, boosted) = match gboost {
        Some(b) => {
            let (edit, r) = gboost_edit(lm, &l.symbols.words, b)?;
            (edit, Some(r))
        }
        None => (GrammarEdit::default(), None),
    };
    let (mut g, mut report) = build_grammar_fst_with(
        lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Skip,
        &edit,
    )?;
    report.gboost = boosted;
    if let (Some(cost), Some(w)) = (opts.context_slot, l.symbols.context_slot()) {
        add_context_slot(&mut g, w, cost)?;
    }
    let graph = match (&cross, &tri) {
        (Some(c), _) => compile_hclg_context(&l, &g, &c.context, &c.hmms)?,
        (_, Some(t)) => compile_hclg_units(&l, &g, &t.hmms)?,
        _ => unreachable!("one of the two is built"),
    };
    Ok((graph, report))
}

/// The model's filler phones other than silence (its noise dictionary's, e.g. `+NSN+`).
pub fn filler_phones(model: &Model) -> Vec<usize> {
    let mut out: Vec<usize> = model
        .fillers
        .iter()
        .filter_map(|(_, phone)| model.mdef.ci(phone))
        .filter(|&p| p != model.mdef.sil)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The senones of the model's silence phone (for endpointing and silence-aware scoring).
pub fn silence_senones(model: &Model) -> Vec<u32> {
    model
        .mdef
        .senones(model.mdef.sil)
        .iter()
        .map(|&s| s as u32)
        .collect()
}

//! The decoding graph of a model, a lexicon and an LM in one call: the lexicon spelled in the
//! model's triphones — across word boundaries through C ([`CrossWordLexicon`], the default, as
//! pocketsphinx decodes) or within words only ([`TriphoneLexicon`]) — L with optional silence
//! between words, G from the
//! ARPA LM (optionally G-boosted towards a phrase list, 003 §3.1.3), and HCLG over the model's
//! senones with each senone's self-loop cost from the transition matrices. Input label k reads
//! senone k − 1.

use crate::error::Result;
use crate::hclg::{CrossWordLexicon, TriphoneLexicon};
use crate::Model;
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::Lexicon;
use ctx_graph::compile::{compile_hclg_context, compile_hclg_units, Graph};
use ctx_graph::gboost::{gboost_edit, GBoost};
use ctx_graph::grammar::{build_grammar_fst_with, GrammarEdit, GrammarReport, MissingWords};
use ctx_graph::lexicon_fst::{build_lexicon_fst, SilenceOptions};

/// Probability of an optional silence between words (ctx-graph's default for hybrid graphs).
pub const SILENCE_PROB: f32 = 0.2;

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

/// How a hybrid graph over the model is built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphOptions {
    /// Phone context.
    pub context: PhoneContext,
    /// Probability of an optional silence between words (its loop costs −ln p).
    pub silence_prob: f32,
}

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            context: PhoneContext::CrossWord,
            silence_prob: SILENCE_PROB,
        }
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
    let sil = SilenceOptions {
        unit: model.mdef.ci_names[model.mdef.sil].clone(),
        prob: opts.silence_prob,
    };
    let (cross, tri, l) = match opts.context {
        PhoneContext::CrossWord => {
            let c = CrossWordLexicon::build(model, words, Some(&sil))?;
            let l = c.l.clone();
            (Some(c), None, l)
        }
        PhoneContext::WordInternal => {
            let t = TriphoneLexicon::build(model, words)?;
            let l = build_lexicon_fst(&t.lexicon, &t.units, Some(&sil))?;
            (None, Some(t), l)
        }
    };
    let (edit, boosted) = match gboost {
        Some(b) => {
            let (edit, r) = gboost_edit(lm, &l.symbols.words, b)?;
            (edit, Some(r))
        }
        None => (GrammarEdit::default(), None),
    };
    let (g, mut report) = build_grammar_fst_with(
        lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Skip,
        &edit,
    )?;
    report.gboost = boosted;
    let graph = match (&cross, &tri) {
        (Some(c), _) => compile_hclg_context(&l, &g, &c.context, &c.hmms)?,
        (_, Some(t)) => compile_hclg_units(&l, &g, &t.hmms)?,
        _ => unreachable!("one of the two is built"),
    };
    Ok((graph, report))
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

//! The decoding graph of a model, a lexicon and an LM in one call: the lexicon spelled in the
//! model's triphones ([`TriphoneLexicon`]), L with optional silence between words, G from the
//! ARPA LM (optionally G-boosted towards a phrase list, 003 §3.1.3), and HCLG over the model's
//! senones with each senone's self-loop cost from the transition matrices. Input label k reads
//! senone k − 1.

use crate::error::Result;
use crate::hclg::TriphoneLexicon;
use crate::Model;
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::Lexicon;
use ctx_graph::compile::{compile_hclg_units, Graph};
use ctx_graph::gboost::{gboost_edit, GBoost};
use ctx_graph::grammar::{build_grammar_fst_with, GrammarEdit, GrammarReport, MissingWords};
use ctx_graph::lexicon_fst::{build_lexicon_fst, SilenceOptions};

/// Probability of an optional silence between words (ctx-graph's default for hybrid graphs).
pub const SILENCE_PROB: f32 = 0.2;

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
/// let (hclg, report) = sphinx_am::graph::build_hclg(&model, &words, &lm, None).unwrap();
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
) -> Result<(Graph, GrammarReport)> {
    let tri = TriphoneLexicon::build(model, words)?;
    let sil = SilenceOptions {
        unit: model.mdef.ci_names[model.mdef.sil].clone(),
        prob: SILENCE_PROB,
    };
    let l = build_lexicon_fst(&tri.lexicon, &tri.units, Some(&sil))?;
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
    Ok((compile_hclg_units(&l, &g, &tri.hmms)?, report))
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

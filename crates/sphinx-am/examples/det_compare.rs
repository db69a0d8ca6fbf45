//! rustfst's determinization against ctx-graph's on a cross-word H ∘ C ∘ L ∘ G (the figures in
//! docs/methods.md): the first `N` words of pocketsphinx-test's lexicon under a unigram of
//! them, H ∘ CLG built as `compile_hclg_context` builds it, then determinized both ways and
//! minimized. rustfst's can run out of memory on the whole lexicon (N = 61).
//!
//!     cargo run --release -p sphinx-am --example det_compare -- 20

use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconFormat};
use ctx_graph::compile::{
    compose_sorted, determinize_functional, minimize_encoded, num_arcs, quantize_weights,
    WEIGHT_QUANTUM,
};
use ctx_graph::grammar::{build_grammar_fst, MissingWords};
use ctx_graph::lexicon_fst::SilenceOptions;
use ctx_graph::phone_context::add_end_marker;
use ctx_graph::rustfst::prelude::*;
use std::path::Path;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = sphinx_am::Model::load(&root.join("datasets/sphinx-en-us")).unwrap();
    let all = Lexicon::read(
        &root.join("datasets/pocketsphinx-test/lexicon.txt"),
        LexiconFormat::Kaldi,
    )
    .unwrap();
    let words: Vec<String> = all.words().into_iter().take(n).map(String::from).collect();
    let mut lex = Lexicon::new();
    for e in all.entries().iter().filter(|e| words.contains(&e.word)) {
        lex.push(e.clone());
    }
    let mut arpa = format!(
        "\\data\\\nngram 1={}\n\n\\1-grams:\n-1.0 </s>\n-99 <s> -0.5\n",
        words.len() + 2
    );
    for w in &words {
        arpa += &format!("-1.0 {w} -0.5\n");
    }
    arpa += "\n\\end\\\n";
    let path = std::env::temp_dir().join("det_compare.arpa");
    std::fs::write(&path, arpa).unwrap();
    let lm = ArpaLm::read(&path).unwrap();
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.2,
    };
    let cw =
        sphinx_am::hclg::CrossWordLexicon::build(&model, &lex, Some(&sil), &[], false).unwrap();
    let syms = &cw.l.symbols;
    let (g, _) =
        build_grammar_fst(&lm, &syms.words, syms.word_disambig, MissingWords::Skip).unwrap();
    let lg = compose_sorted(&cw.l.fst, &g, "L ∘ G").unwrap();
    let mut lg = determinize_functional(&lg, "det(LG)").unwrap();
    minimize_encoded(&mut lg, "min(LG)").unwrap();
    let lg = quantize_weights(&lg, WEIGHT_QUANTUM).unwrap();
    let lg = add_end_marker(&lg, cw.context.end_label()).unwrap();
    let clg = compose_sorted(&cw.context.fst, &lg, "C ∘ LG").unwrap();
    let (h_units, _) = cw.hmms.with_distinct_labels();
    let h = ctx_graph::hmm::build_h_units(&h_units, cw.context.num_disambig_in()).unwrap();
    let hclg = compose_sorted(&h, &clg, "H ∘ CLG").unwrap();
    println!(
        "{} words: H ∘ CLG {} states, {} arcs",
        words.len(),
        hclg.num_states(),
        num_arcs(&hclg)
    );
    let t = Instant::now();
    let ours = ctx_graph::determinize::determinize_functional_eps_free(&hclg).unwrap();
    let mut m = ours.clone();
    minimize_encoded(&mut m, "min").unwrap();
    println!(
        "ctx-graph det: {} states in {:.2} s, {} after minimization",
        ours.num_states(),
        t.elapsed().as_secs_f64(),
        m.num_states()
    );
    let t = Instant::now();
    let theirs = determinize_functional(&hclg, "det").unwrap();
    let mut m = theirs.clone();
    minimize_encoded(&mut m, "min").unwrap();
    println!(
        "rustfst det: {} states in {:.2} s, {} after minimization",
        theirs.num_states(),
        t.elapsed().as_secs_f64(),
        m.num_states()
    );
}

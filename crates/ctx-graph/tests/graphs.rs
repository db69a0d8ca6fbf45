//! HCLG, TLG, G, L, biasing FST and CSR layout on toy inputs, checked against brute force.

use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_graph::biasing::build_biasing_fst;
use ctx_graph::cache::{CacheKey, GraphCache};
use ctx_graph::compile::{build_graph, compile_hclg, compile_tlg, GraphInputs, GraphKind};
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::grammar::{build_grammar_fst, MissingWords};
use ctx_graph::hmm::HmmTopology;
use ctx_graph::lexicon_fst::{build_lexicon_fst, LexiconFst, SilenceOptions};
use ctx_graph::paths::{best_output, output_language};
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeMap;

fn lex(entries: &[(&str, &str, f32)]) -> Lexicon {
    let mut l = Lexicon::new();
    for (w, p, prob) in entries {
        l.push(LexiconEntry {
            word: w.to_string(),
            prob: *prob,
            phones: p.split_whitespace().map(str::to_string).collect(),
        });
    }
    l
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Words "ab" (A B), "abc" (A B C: "ab" is its prefix), "ba" and "bah" (homophones B A),
/// "c" with two pronunciations (C at prob 1, A C at prob 0.5).
fn toy_lexicon() -> Lexicon {
    lex(&[
        ("ab", "A B", 1.0),
        ("abc", "A B C", 1.0),
        ("ba", "B A", 1.0),
        ("bah", "B A", 1.0),
        ("c", "C", 1.0),
        ("c", "A C", 0.5),
    ])
}

fn toy_l(silence: bool) -> LexiconFst {
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.5,
    };
    build_lexicon_fst(
        &toy_lexicon(),
        &strings(&["SIL", "A", "B", "C"]),
        silence.then_some(&sil),
    )
    .unwrap()
}

/// A hand-made G accepting exactly "ab ba" (cost 1), "abc" (cost 2), "c c" (cost 0.5), "bah" (3).
fn toy_g(l: &LexiconFst) -> StdFst {
    let w = |s: &str| l.symbols.words.id(s).unwrap();
    let mut g = StdFst::new();
    let s0 = g.add_state();
    g.set_start(s0).unwrap();
    let mut add_path = |ws: &[&str], cost: f32| {
        let mut s = s0;
        for (i, x) in ws.iter().enumerate() {
            let t = g.add_state();
            let c = if i == 0 { cost } else { 0.0 };
            g.add_tr(s, Tr::new(w(x), w(x), c, t)).unwrap();
            s = t;
        }
        g.set_final(s, TropicalWeight::one()).unwrap();
    };
    add_path(&["ab", "ba"], 1.0);
    add_path(&["abc"], 2.0);
    add_path(&["c", "c"], 0.5);
    add_path(&["bah"], 3.0);
    g
}

fn words_of(l: &LexiconFst, ids: &[u32]) -> String {
    ids.iter()
        .map(|&i| l.symbols.words.symbol(i).unwrap())
        .collect::<Vec<_>>()
        .join(" ")
}

fn named(l: &LexiconFst, lang: &BTreeMap<Vec<u32>, f32>) -> BTreeMap<String, f32> {
    lang.iter().map(|(k, v)| (words_of(l, k), *v)).collect()
}

fn assert_same_language(a: &BTreeMap<String, f32>, b: &BTreeMap<String, f32>) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "word sequences differ"
    );
    for (k, v) in a {
        assert!((v - b[k]).abs() < 1e-4, "{k}: {v} vs {}", b[k]);
    }
}

#[test]
fn lexicon_gets_disambiguation_symbols_for_homophones_and_prefixes() {
    let l = toy_l(false);
    // "ab" is a prefix of "abc" -> #1; "ba"/"bah" homophones -> #1, #2.
    assert_eq!(l.symbols.num_disambig, 3, "#0, #1, #2");
    assert_eq!(
        l.symbols.units.symbol(l.symbols.unit_disambig(2)),
        Some("#2")
    );
    assert_eq!(l.symbols.words.symbol(l.symbols.word_disambig), Some("#0"));
    let ab = l.symbols.words.id("ab").unwrap();
    let a = l.symbols.units.id("A").unwrap();
    let b = l.symbols.units.id("B").unwrap();
    let d1 = l.symbols.unit_disambig(1);
    let (out, cost) = best_output(&l.fst, &[a, b, d1]).unwrap().unwrap();
    assert_eq!(out, vec![ab]);
    assert_eq!(cost, 0.0);
    // Without its disambiguation symbol "A B" is not a complete word.
    assert!(best_output(&l.fst, &[a, b]).unwrap().is_none());
    // The second pronunciation of "c" costs -ln 0.5.
    let c = l.symbols.units.id("C").unwrap();
    let (out, cost) = best_output(&l.fst, &[a, c]).unwrap().unwrap();
    assert_eq!(words_of(&l, &out), "c");
    assert!((cost - std::f32::consts::LN_2).abs() < 1e-6);
}

#[test]
fn hclg_accepts_exactly_the_word_sequences_of_g() {
    let l = toy_l(true);
    let g = toy_g(&l);
    let topo = HmmTopology {
        states_per_phone: 2,
        self_loop_prob: 0.5,
        transition_scale: 0.0,
    };
    let graph = compile_hclg(&l, &g, &topo).unwrap();
    assert_eq!(graph.num_columns, 8, "4 phones x 2 states");
    let got = named(&l, &output_language(&graph.fst, 3).unwrap());
    // Brute force: G's sequences, each word at its cheapest pronunciation (all cost 0 here).
    let mut want = BTreeMap::new();
    want.insert("ab ba".to_string(), 1.0);
    want.insert("abc".to_string(), 2.0);
    want.insert("c c".to_string(), 0.5);
    want.insert("bah".to_string(), 3.0);
    assert_same_language(&got, &want);
    assert_same_language(&named(&l, &output_language(&g, 3).unwrap()), &want);
}

#[test]
fn hclg_reads_pdf_sequences_with_self_loops_and_silence() {
    let l = toy_l(true);
    let g = toy_g(&l);
    let topo = HmmTopology {
        states_per_phone: 2,
        self_loop_prob: 0.5,
        transition_scale: 1.0,
    };
    let graph = compile_hclg(&l, &g, &topo).unwrap();
    let u = |p: &str| l.symbols.units.id(p).unwrap();
    // Input label of HMM state k of phone p.
    let lab = |p: &str, k: u32| topo.pdf(u(p), k) + 1;
    // "c c" via C C, with repeated frames: [C0 C0 C1 C0 C1 C1].
    let input = [
        lab("C", 0),
        lab("C", 0),
        lab("C", 1),
        lab("C", 0),
        lab("C", 1),
        lab("C", 1),
    ];
    let (out, cost) = best_output(&graph.fst, &input).unwrap().unwrap();
    assert_eq!(words_of(&l, &out), "c c");
    // Every frame costs ln 2 (forward and self-loop alike at p = 0.5) plus G's 0.5.
    assert!(
        (cost - (0.5 + 6.0 * std::f32::consts::LN_2)).abs() < 1e-3,
        "{cost}"
    );
    // Leading silence costs -ln 0.5 more.
    let mut with_sil = vec![lab("SIL", 0), lab("SIL", 1)];
    with_sil.extend_from_slice(&input);
    let (out2, cost2) = best_output(&graph.fst, &with_sil).unwrap().unwrap();
    assert_eq!(out2, out);
    assert!((cost2 - cost - 3.0 * std::f32::consts::LN_2).abs() < 1e-3);
    // The second pronunciation of "c" (A C) works and costs ln 2 more.
    let alt = [
        lab("A", 0),
        lab("A", 1),
        lab("C", 0),
        lab("C", 1),
        lab("C", 0),
        lab("C", 1),
    ];
    let (out3, cost3) = best_output(&graph.fst, &alt).unwrap().unwrap();
    assert_eq!(words_of(&l, &out3), "c c");
    assert!(
        (cost3 - (0.5 + 7.0 * std::f32::consts::LN_2)).abs() < 1e-3,
        "{cost3}"
    );
    // HMM states out of order, or a word G does not allow alone ("ab"), are rejected.
    assert!(best_output(&graph.fst, &[lab("C", 1), lab("C", 0)])
        .unwrap()
        .is_none());
    let ab = [lab("A", 0), lab("A", 1), lab("B", 0), lab("B", 1)];
    assert!(best_output(&graph.fst, &ab).unwrap().is_none());
    // A self-loop can only repeat the label that entered the state: C0 C1 C0 C0 C1 is "c c"
    // but C0 C1 C1 C0 is not (the last C lacks its second state).
    assert!(best_output(
        &graph.fst,
        &[lab("C", 0), lab("C", 1), lab("C", 1), lab("C", 0)]
    )
    .unwrap()
    .is_none());
}

/// Per-unit HMMs (a real model's triphones): units may share pdfs and have chains of their
/// own length; each pdf loops and is entered at its own cost. The uniform table reproduces
/// `compile_hclg` arc for arc.
#[test]
fn hclg_over_unit_hmms_uses_each_units_pdfs_and_costs() {
    use ctx_graph::compile::compile_hclg_units;
    use ctx_graph::hmm::UnitHmms;
    let l = toy_l(true);
    let g = toy_g(&l);
    let topo = HmmTopology {
        states_per_phone: 2,
        self_loop_prob: 0.5,
        transition_scale: 1.0,
    };
    let uniform =
        compile_hclg_units(&l, &g, &UnitHmms::uniform(&topo, l.symbols.num_units)).unwrap();
    let classic = compile_hclg(&l, &g, &topo).unwrap();
    assert_eq!(uniform.fst, classic.fst);
    // Units SIL, A, B, C (ids 1..4): C has three states and shares pdf 2 with A.
    let u = |p: &str| l.symbols.units.id(p).unwrap() as usize;
    let mut pdfs = vec![Vec::new(); 4];
    pdfs[u("SIL") - 1] = vec![0];
    pdfs[u("A") - 1] = vec![1, 2];
    pdfs[u("B") - 1] = vec![3];
    pdfs[u("C") - 1] = vec![4, 2, 5];
    let loop_p = [0.5f32, 0.9, 0.6, 0.5, 0.8, 0.7];
    let hmms = UnitHmms {
        pdfs,
        loop_cost: loop_p.iter().map(|p| -p.ln()).collect(),
        enter_cost: loop_p.iter().map(|p| -(1.0 - p).ln()).collect(),
    };
    let graph = compile_hclg_units(&l, &g, &hmms).unwrap();
    assert_eq!(graph.num_columns, 6);
    // "c c" as C C: pdfs 4 2 5 4 2 5, the first 2 repeated once (a self-loop).
    let input: Vec<u32> = [4u32, 2, 2, 5, 4, 2, 5].iter().map(|p| p + 1).collect();
    let (out, cost) = best_output(&graph.fst, &input).unwrap().unwrap();
    assert_eq!(words_of(&l, &out), "c c");
    let enter = |p: usize| -(1.0 - loop_p[p]).ln();
    let want = 0.5 + 2.0 * (enter(4) + enter(2) + enter(5)) - loop_p[2].ln();
    assert!((cost - want).abs() < 1e-3, "{cost} vs {want}");
    // A unit whose HMM names a pdf outside the table is refused.
    let mut bad = hmms.clone();
    bad.pdfs[0] = vec![9];
    let e = compile_hclg_units(&l, &g, &bad).unwrap_err().to_string();
    assert!(e.contains("pdf 9"), "{e}");
}

const TOY_ARPA: &str = "\\data\\
ngram 1=5
ngram 2=6

\\1-grams:
-0.8\t</s>
-99\t<s>\t-0.5
-0.6\tab\t-0.3
-0.7\tba\t-0.2
-0.9\tc\t-0.4

\\2-grams:
-0.2\t<s> ab
-0.5\t<s> c
-0.3\tab ba
-0.4\tba </s>
-0.25\tc c
-0.35\tc </s>

\\end\\
";

fn toy_arpa() -> ArpaLm {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lm.arpa");
    std::fs::write(&p, TOY_ARPA).unwrap();
    ArpaLm::read(&p).unwrap()
}

/// Brute force over every word sequence of length 0..=max: the ARPA score (with <s>, </s>) in
/// −ln units. G's best path for a sequence may take a back-off arc even where the n-gram is
/// listed; in this LM every listed n-gram is cheaper than its back-off path, so they agree.
fn arpa_language(lm: &ArpaLm, vocab: &[&str], max: usize) -> BTreeMap<String, f32> {
    let mut out = BTreeMap::new();
    let empty: [&str; 0] = [];
    let score = lm.score_sentence(&empty, true, true).unwrap();
    out.insert(
        String::new(),
        -score.log10_prob as f32 * std::f32::consts::LN_10,
    );
    let mut seqs: Vec<Vec<&str>> = vec![vec![]];
    for _ in 0..max {
        let mut next = Vec::new();
        for s in &seqs {
            for w in vocab {
                let mut t = s.clone();
                t.push(*w);
                let score = lm.score_sentence(&t, true, true).unwrap();
                out.insert(
                    t.join(" "),
                    -score.log10_prob as f32 * std::f32::consts::LN_10,
                );
                next.push(t);
            }
        }
        seqs = next;
    }
    out
}

#[test]
fn g_from_arpa_scores_every_sequence_like_the_arpa_model() {
    let lm = toy_arpa();
    let l = build_lexicon_fst(
        &lex(&[("ab", "A B", 1.0), ("ba", "B A", 1.0), ("c", "C", 1.0)]),
        &strings(&["A", "B", "C"]),
        None,
    )
    .unwrap();
    let (g, report) = build_grammar_fst(
        &lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Error,
    )
    .unwrap();
    // States: empty history, <s>, ab, ba, c.
    assert_eq!(report.states, 5);
    // 3 unigram arcs, 4 bigram word arcs, 4 back-off arcs.
    assert_eq!(report.arcs, 11);
    let want = arpa_language(&lm, &["ab", "ba", "c"], 3);
    // G's input side carries #0; its output side is the word language.
    let got = named(&l, &output_language(&g, 3).unwrap());
    assert_same_language(&got, &want);
    // The same language through HCLG and both TLG topologies.
    let hclg = compile_hclg(
        &l,
        &g,
        &HmmTopology {
            transition_scale: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    assert_same_language(&named(&l, &output_language(&hclg.fst, 3).unwrap()), &want);
    for topo in [CtcTopology::Normal, CtcTopology::Compact] {
        let tlg = compile_tlg(&l, &g, topo).unwrap();
        assert_same_language(&named(&l, &output_language(&tlg.fst, 3).unwrap()), &want);
    }
}

#[test]
fn tlg_topologies_differ_exactly_on_repeated_tokens() {
    // Pieces a, b; words "aa" (a a) and "b" (b); a unigram LM.
    let arpa =
        "\\data\\\nngram 1=4\n\n\\1-grams:\n-0.5\t</s>\n-99\t<s>\n-0.3\taa\n-0.3\tb\n\n\\end\\\n";
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("u.arpa");
    std::fs::write(&p, arpa).unwrap();
    let lm = ArpaLm::read(&p).unwrap();
    let l = build_lexicon_fst(
        &lex(&[("aa", "a a", 1.0), ("b", "b", 1.0)]),
        &strings(&["a", "b"]),
        None,
    )
    .unwrap();
    let (g, _) = build_grammar_fst(
        &lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Error,
    )
    .unwrap();
    let (blank, a, b) = (1, 2, 3); // column + 1: blank = column 0
    let normal = compile_tlg(&l, &g, CtcTopology::Normal).unwrap();
    let compact = compile_tlg(&l, &g, CtcTopology::Compact).unwrap();
    assert_eq!(normal.num_columns, 3);
    let aa = vec![l.symbols.words.id("aa").unwrap()];
    let bw = l.symbols.words.id("b").unwrap();
    // "a blank a" is "aa" under both.
    for t in [&normal, &compact] {
        let (out, _) = best_output(&t.fst, &[a, blank, a]).unwrap().unwrap();
        assert_eq!(out, aa);
        // Held tokens and surrounding blanks collapse.
        let (out, _) = best_output(&t.fst, &[blank, a, a, blank, a, blank, b, b])
            .unwrap()
            .unwrap();
        assert_eq!(out, vec![aa[0], bw]);
    }
    // "a a" (no blank) is one held "a" under the exact rules: no word; compact reads "aa".
    assert!(best_output(&normal.fst, &[a, a]).unwrap().is_none());
    let (out, _) = best_output(&compact.fst, &[a, a]).unwrap().unwrap();
    assert_eq!(out, aa);
    // The exact topology has V² token-to-token arcs; compact about 3V.
    let t_normal = ctx_graph::ctc::build_t(CtcTopology::Normal, 100, 1).unwrap();
    let t_compact = ctx_graph::ctc::build_t(CtcTopology::Compact, 100, 1).unwrap();
    assert_eq!(
        ctx_graph::compile::num_arcs(&t_normal),
        1 + 1 + 100 + 100 * (1 + 1 + 99 + 1)
    );
    assert_eq!(ctx_graph::compile::num_arcs(&t_compact), 1 + 1 + 3 * 100);
}

#[test]
fn biasing_fst_discounts_phrases_prefixes_and_nothing_else() {
    let vocab: Vec<u32> = (1..=6).collect();
    let phrases = vec![vec![1, 2, 3], vec![1, 2, 4], vec![5]];
    let b = build_biasing_fst(&vocab, &phrases, -2.0).unwrap();
    let cost = |ws: &[u32]| best_output(&b, ws).unwrap().unwrap().1;
    assert_eq!(cost(&[1, 2, 3]), -6.0, "full phrase");
    assert_eq!(cost(&[1, 2]), -4.0, "prefix keeps its part");
    assert_eq!(cost(&[1, 2, 4]), -6.0, "second phrase sharing the prefix");
    assert_eq!(cost(&[6]), 0.0, "unrelated word");
    assert_eq!(cost(&[6, 5, 6]), -2.0, "unigram phrase mid-utterance");
    assert_eq!(cost(&[1, 2, 3, 1, 2, 3]), -12.0, "phrase twice");
    assert_eq!(cost(&[2, 3]), 0.0, "a phrase's tail alone earns nothing");
    // Every word is accepted, output = input.
    let (out, _) = best_output(&b, &[6, 1, 5]).unwrap().unwrap();
    assert_eq!(out, vec![6, 1, 5]);
    assert!(build_biasing_fst(&vocab, &[vec![]], -2.0).is_err());
}

#[test]
fn csr_layout_puts_emitting_arcs_first_and_round_trips() {
    let mut f = StdFst::new();
    let s: Vec<_> = (0..3).map(|_| f.add_state()).collect();
    f.set_start(s[0]).unwrap();
    f.add_tr(s[0], Tr::new(0, 7, 0.5, s[1])).unwrap(); // non-emitting
    f.add_tr(s[0], Tr::new(3, 0, 1.0, s[1])).unwrap();
    f.add_tr(s[0], Tr::new(2, 9, 1.5, s[2])).unwrap();
    f.add_tr(s[1], Tr::new(4, 0, 2.0, s[2])).unwrap();
    f.add_tr(s[2], Tr::new(0, 0, 0.25, s[0])).unwrap();
    f.set_final(s[2], 0.75).unwrap();
    let g = DecodingGraph::from_fst(&f, None).unwrap();
    g.validate().unwrap();
    assert_eq!(g.num_emitting(), 3);
    assert_eq!(g.e_offsets, vec![0, 2, 3, 3]);
    assert_eq!(g.ne_offsets, vec![3, 4, 4, 5]);
    assert_eq!(g.ilabel, vec![3, 2, 4, 0, 0]);
    assert_eq!(g.olabel, vec![0, 9, 0, 7, 0]);
    assert_eq!(g.next, vec![1, 2, 2, 1, 0]);
    assert_eq!(g.weight, vec![1.0, 1.5, 2.0, 0.5, 0.25]);
    assert_eq!(g.final_cost[2], 0.75);
    assert!(g.final_cost[0].is_infinite());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.csr");
    g.write(&p).unwrap();
    assert_eq!(DecodingGraph::read(&p).unwrap(), g);
    // A transition-id map (Kaldi graphs): tid 2 -> pdf 0 (label 1), tid 3, 4 -> pdf 1.
    let m = DecodingGraph::from_fst(&f, Some(&[0, 0, 1, 2, 2])).unwrap();
    assert_eq!(m.ilabel, vec![2, 1, 2, 0, 0]);
    // Truncated files are refused with the path in the message.
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 4]).unwrap();
    let e = DecodingGraph::read(&p).unwrap_err().to_string();
    assert!(e.contains("g.csr") && e.contains("truncated"), "{e}");
}

#[test]
fn graph_cache_round_trips_and_keys_on_inputs() {
    let lm = toy_arpa();
    let lexicon = lex(&[("ab", "A B", 1.0), ("ba", "B A", 1.0), ("c", "C", 1.0)]);
    let units = strings(&["A", "B", "C"]);
    let inputs = GraphInputs {
        lexicon: &lexicon,
        units: &units,
        lm: &lm,
        missing_words: MissingWords::Error,
        silence: None,
        hmm: HmmTopology::default(),
        gboost: None,
        context_slot: None,
    };
    let (graph, _) = build_graph(GraphKind::Hclg, &inputs).unwrap();
    assert_eq!(graph.steps[0].name, "L");
    assert_eq!(graph.steps.last().unwrap().name, "add self-loops");
    let dir = tempfile::tempdir().unwrap();
    let cache = GraphCache::new(dir.path());
    let mut key = CacheKey::new();
    key.add("lm", TOY_ARPA.as_bytes());
    assert!(cache.load(GraphKind::Hclg, &key).unwrap().is_none());
    cache.store(&key, &graph).unwrap();
    let back = cache.load(GraphKind::Hclg, &key).unwrap().unwrap();
    assert_eq!(back.fst, graph.fst);
    assert_eq!(back.symbols, graph.symbols);
    assert_eq!(back.num_columns, graph.num_columns);
    assert_eq!(back.steps.len(), graph.steps.len());
    let mut other = CacheKey::new();
    other.add("lm", b"something else");
    assert_ne!(other.hex(), key.hex());
    assert!(cache.load(GraphKind::Hclg, &other).unwrap().is_none());
}

#[test]
fn bad_inputs_are_named() {
    // An ARPA word without a pronunciation.
    let lm = toy_arpa();
    let l = build_lexicon_fst(
        &lex(&[("ab", "A B", 1.0), ("c", "C", 1.0)]),
        &strings(&["A", "B", "C"]),
        None,
    )
    .unwrap();
    let e = build_grammar_fst(
        &lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Error,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("1 word(s)") && e.contains("ba"), "{e}");
    let (_, report) = build_grammar_fst(
        &lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Skip,
    )
    .unwrap();
    assert_eq!(report.skipped_words, vec!["ba".to_string()]);
    assert_eq!(
        report.skipped_ngrams, 3,
        "unigram ba, bigrams 'ab ba' and 'ba </s>'"
    );
    // A pronunciation with a unit outside the inventory.
    let e = build_lexicon_fst(&lex(&[("x", "A Q", 1.0)]), &strings(&["A"]), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("'x'") && e.contains("'Q'"), "{e}");
}

/// The context slot (issue 42): TLG and HCLG built with it hold ε-input `#CONTEXT` arcs, the
/// language without the slot word is unchanged to the cost, and a slot between two words costs
/// the back-off to the empty history, the entry cost, then the second word as a unigram.
#[test]
fn the_context_slot_is_entered_from_the_empty_history_at_its_entry_cost() {
    let lm = toy_arpa();
    let lexicon = lex(&[("ab", "A B", 1.0), ("ba", "B A", 1.0), ("c", "C", 1.0)]);
    let units = strings(&["A", "B", "C"]);
    let inputs = |slot| GraphInputs {
        lexicon: &lexicon,
        units: &units,
        lm: &lm,
        missing_words: MissingWords::Error,
        silence: None,
        hmm: HmmTopology::default(),
        gboost: None,
        context_slot: slot,
    };
    let ln10 = std::f32::consts::LN_10;
    for kind in [GraphKind::Tlg(CtcTopology::Compact), GraphKind::Hclg] {
        let (plain, _) = build_graph(kind, &inputs(None)).unwrap();
        let (slotted, _) = build_graph(kind, &inputs(Some(5.0))).unwrap();
        assert_eq!(plain.symbols.context_slot(), None);
        let w = slotted.symbols.context_slot().unwrap();
        assert!(
            !slotted.symbols.word_labels().contains(&w),
            "never a decoder output"
        );
        let id = |x: &str| slotted.symbols.words.id(x).unwrap();
        // The slot arcs read nothing: the search jumps through them.
        let g = DecodingGraph::from_fst(&slotted.fst, None).unwrap();
        let slot_arcs = (0..g.ilabel.len())
            .filter(|&a| g.olabel[a] == w)
            .collect::<Vec<_>>();
        assert!(!slot_arcs.is_empty(), "{kind:?}");
        assert!(slot_arcs.iter().all(|&a| g.ilabel[a] == 0), "{kind:?}");
        assert!(g.ilabel.iter().all(|&l| l <= slotted.num_columns));
        let with = output_language(&slotted.fst, 3).unwrap();
        let without = output_language(&plain.fst, 3).unwrap();
        for (seq, c) in &without {
            let c2 = with[seq];
            assert!((c - c2).abs() < 1e-3, "{kind:?} {seq:?}: {c} vs {c2}");
        }
        assert_eq!(
            with.keys().filter(|s| !s.contains(&w)).count(),
            without.len()
        );
        // "ab c" backs off to the empty history between the words (no bigram "ab c"), and so
        // does "<s> </s>": a slot there costs exactly its entry cost, whatever H adds per phone.
        let (ab, c) = (id("ab"), id("c"));
        let got = with[&vec![ab, w, c]] - without[&vec![ab, c]];
        assert!((got - 5.0).abs() < 1e-3, "{kind:?}: {got}");
        let got = with[&vec![w]] - without[&Vec::new()];
        assert!((got - 5.0).abs() < 1e-3, "{kind:?}: {got}");
        // Where the LM has the bigram ("c c"), the slot's way goes through the back-off:
        // c's back-off (0.4) and c as a unigram (0.9) instead of the bigram (0.25).
        let got = with[&vec![c, w, c]] - without[&vec![c, c]];
        assert!(
            (got - (5.0 + (0.4 + 0.9 - 0.25) * ln10)).abs() < 1e-3,
            "{kind:?}: {got}"
        );
    }
}

/// `check_weights` refuses what the search cannot use — a NaN or −∞ arc weight or final
/// weight, a cycle of ε-input arcs of zero or negative total cost (a self-loop, two arcs, a
/// cycle inside a larger component) — naming the arc, state or cycle; and accepts positive ε
/// cycles, +∞ arcs and the compiled graphs.
#[test]
fn search_weight_checks_name_what_is_wrong() {
    // 0 -a-> 1, then ε arcs given as (from, to, weight) among states 1..=4.
    let graph = |eps: &[(u32, u32, f32)], arc: f32, fin: f32| {
        let mut f = StdFst::new();
        for _ in 0..5 {
            f.add_state();
        }
        f.set_start(0).unwrap();
        f.add_tr(0, Tr::new(1, 1, arc, 1)).unwrap();
        for &(a, b, w) in eps {
            f.add_tr(a, Tr::new(0, 0, w, b)).unwrap();
        }
        f.set_final(4, fin).unwrap();
        DecodingGraph::from_fst(&f, None).unwrap()
    };
    let err = |g: DecodingGraph| {
        g.check_weights()
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string())
    };
    // Fine: a DAG, a positive cycle, an arc at +∞.
    assert_eq!(err(graph(&[(1, 2, 0.0), (2, 4, 0.0)], 0.5, 0.0)), "");
    assert_eq!(
        err(graph(&[(1, 2, 0.5), (2, 1, -0.25), (2, 4, 0.0)], 0.5, 0.0)),
        ""
    );
    assert_eq!(err(graph(&[(1, 4, 0.0)], f32::INFINITY, 0.0)), "");
    // Zero cycles: a self-loop, two arcs, three arcs beside a positive arc in the component.
    let e = err(graph(&[(2, 2, 0.0), (1, 2, 0.0)], 0.5, 0.0));
    assert!(
        e.contains("zero or negative cost") && e.contains("2 -> 2"),
        "{e}"
    );
    let e = err(graph(&[(1, 2, 0.5), (2, 1, -0.5)], 0.5, 0.0));
    assert!(
        e.contains("zero or negative cost")
            && (e.contains("1 -> 2 -> 1") || e.contains("2 -> 1 -> 2")),
        "{e}"
    );
    let e = err(graph(
        &[(1, 2, 1.0), (2, 3, 1.0), (3, 1, -2.0), (2, 1, 5.0)],
        0.5,
        0.0,
    ));
    assert!(
        e.contains("zero or negative cost") && e.contains("1 -> 2 -> 3 -> 1"),
        "{e}"
    );
    // Negative cycles.
    let e = err(graph(&[(1, 2, 0.5), (2, 3, -1.0), (3, 2, 0.25)], 0.5, 0.0));
    assert!(
        e.contains("zero or negative cost")
            && (e.contains("2 -> 3 -> 2") || e.contains("3 -> 2 -> 3")),
        "{e}"
    );
    // Weights.
    let e = err(graph(&[], f32::NAN, 0.0));
    assert!(
        e.contains("arc 0") && e.contains("state 0") && e.contains("NaN"),
        "{e}"
    );
    let e = err(graph(&[], f32::NEG_INFINITY, 0.0));
    assert!(e.contains("arc 0") && e.contains("-inf"), "{e}");
    let e = err(graph(&[], 0.5, f32::NAN));
    assert!(
        e.contains("state 4") && e.contains("final weight NaN"),
        "{e}"
    );
    // A compiled HCLG passes.
    let l = toy_l(true);
    let g = toy_g(&l);
    let hclg = DecodingGraph::from_fst(
        &compile_hclg(&l, &g, &HmmTopology::default()).unwrap().fst,
        None,
    )
    .unwrap();
    assert_eq!(err(hclg), "");
}

//! Real audio end to end, with nothing simulated: pocketsphinx's en-us model scores the five
//! "cards" recordings through this crate's front end and PTM scorer, and the project's own HCLG
//! (triphones over senones, CMUdict pronunciations, a bigram of the five transcripts) and
//! decoder recognise them.

use ctx_core::metrics::{align_words, EditOp};
use ctx_data::kneser_ney::{estimate, KnOptions};
use ctx_data::pronounce::Pronouncer;
use ctx_graph::compile::compile_hclg_units;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::grammar::{build_grammar_fst, MissingWords};
use ctx_graph::lexicon_fst::{build_lexicon_fst, SilenceOptions};
use sphinx_am::features::utterance_features;
use sphinx_am::frontend::{Frontend, FrontendConfig};
use sphinx_am::graph::{build_hclg, GraphOptions, PhoneContext};
use sphinx_am::hclg::{log_likelihoods, TriphoneLexicon};
use sphinx_am::ptm::PtmScorer;
use sphinx_am::Model;
use std::path::{Path, PathBuf};
use wfst_search::{decode_utterance, Booster, Decoder, DecoderConfig, Stream};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_cards_recordings_are_recognised_with_word_internal_triphones() {
    cards_recognised(None);
}

/// The same through `graph::build_hclg` with cross-word triphones (H ∘ C ∘ L ∘ G).
#[test]
fn the_cards_recordings_are_recognised_with_cross_word_triphones() {
    cards_recognised(Some(PhoneContext::CrossWord));
}

/// pocketsphinx adds transition log-probabilities to the acoustic score, so at language weight
/// `lw` every HMM self-loop of the graph costs −ln P(loop) / `lw`, as an acoustic
/// log-likelihood counts 1 / `lw` (charged beside the LM at full weight, they made the search
/// prefer paths through fewer HMM states: three word errors on pocketsphinx-test, none now).
#[test]
fn transition_costs_count_at_the_acoustic_scale() {
    use ctx_core::arpa::ArpaLm;
    use ctx_core::lexicon::{Lexicon, LexiconFormat};
    use ctx_graph::rustfst::prelude::*;
    let model = Model::load(&root().join("datasets/sphinx-en-us")).unwrap();
    let dir = root().join("datasets/pocketsphinx-test");
    let words = Lexicon::read(&dir.join("lexicon.txt"), LexiconFormat::Kaldi).unwrap();
    let lm = ArpaLm::read(&dir.join("lm.arpa")).unwrap();
    // −ln P(self-loop) of every senone, from the model's transition matrices.
    let mut loop_cost = vec![None; model.mdef.n_senone];
    for (pid, ph) in model.mdef.phones.iter().enumerate() {
        for (k, &s) in model.mdef.senones(pid).iter().enumerate() {
            let a = model.tmat.prob(ph.tmat as usize, k, k) as f64;
            loop_cost[s as usize] = Some(-a.ln());
        }
    }
    for lw in [4.0f32, 8.5] {
        let opts = GraphOptions::pocketsphinx(lw);
        assert_eq!(opts.transition_scale, 1.0 / lw);
        let (graph, _) = build_hclg(&model, &words, &lm, None, &opts).unwrap();
        let mut loops = 0;
        for s in graph.fst.states_iter() {
            for tr in graph.fst.get_trs(s).unwrap().trs() {
                if tr.nextstate == s && tr.ilabel > 0 {
                    let want = loop_cost[tr.ilabel as usize - 1].unwrap() / lw as f64;
                    let got = *tr.weight.value() as f64;
                    assert!(
                        (got - want).abs() < 1e-4,
                        "lw {lw}: loop {got}, want {want}"
                    );
                    loops += 1;
                }
            }
        }
        assert!(loops > 1000, "{loops} self-loops");
    }
}

fn cards_recognised(context: Option<PhoneContext>) {
    let cards = root().join("datasets/pocketsphinx-test/cards");
    let text = std::fs::read_to_string(cards.join("cards.transcription")).unwrap();
    // "<s> ten of clubs  </s> (001)"
    let refs: Vec<(String, Vec<String>)> = text
        .lines()
        .map(|l| {
            let (words, id) = l.rsplit_once('(').unwrap();
            let words = words
                .split_whitespace()
                .filter(|w| *w != "<s>" && *w != "</s>")
                .map(str::to_string)
                .collect();
            (id.trim_end_matches(')').to_string(), words)
        })
        .collect();
    let model = Model::load(&root().join("datasets/sphinx-en-us")).unwrap();
    let pron = Pronouncer::from_cmudict(&root().join("datasets/cmudict/cmudict.dict.gz")).unwrap();
    let vocab: Vec<&String> = refs.iter().flat_map(|(_, w)| w).collect();
    let (words, _) = pron.lexicon_for(&vocab).unwrap();
    let sentences: Vec<Vec<String>> = refs.iter().map(|(_, w)| w.clone()).collect();
    let (lm, _) = estimate(
        &sentences,
        &KnOptions {
            order: 2,
            ..KnOptions::default()
        },
    )
    .unwrap();
    let (graph, words_table) = match context {
        Some(context) => {
            let opts = GraphOptions {
                context,
                ..GraphOptions::default()
            };
            let (graph, _) = build_hclg(&model, &words, &lm, None, &opts).unwrap();
            let w = graph.symbols.words.clone();
            (graph, w)
        }
        None => {
            let mut tri = TriphoneLexicon::build(&model, &words, &[]).unwrap();
            tri.hmms
                .scale_costs(1.0 / sphinx_am::graph::PS_LANGUAGE_WEIGHT);
            let l = build_lexicon_fst(
                &tri.lexicon,
                &tri.units,
                Some(&SilenceOptions {
                    unit: "SIL".into(),
                    prob: 0.2,
                }),
            )
            .unwrap();
            let (g, _) = build_grammar_fst(
                &lm,
                &l.symbols.words,
                l.symbols.word_disambig,
                MissingWords::Skip,
            )
            .unwrap();
            (
                compile_hclg_units(&l, &g, &tri.hmms).unwrap(),
                l.symbols.words.clone(),
            )
        }
    };
    assert_eq!(graph.num_columns as usize, model.mdef.n_senone);
    let csr = DecodingGraph::from_fst(&graph.fst, None).unwrap();
    let dec = Decoder::new(
        &csr,
        DecoderConfig {
            // The graph's language weight: acoustic log-likelihoods count 1/lw.
            acoustic_scale: 1.0 / sphinx_am::graph::PS_LANGUAGE_WEIGHT,
            ..DecoderConfig::default()
        },
    )
    .unwrap();
    let fe = Frontend::new(FrontendConfig::from_params(&model.feat).unwrap()).unwrap();
    let scorer = PtmScorer::new(&model);
    let mut errors = 0;
    let mut total = 0;
    for (id, truth) in &refs {
        let s = sphinx_am::audio::read_wav(&cards.join(format!("{id}.wav")), 16_000).unwrap();
        let scores = log_likelihoods(&scorer.score(&utterance_features(fe.cepstra(&s)))).unwrap();
        let mut stream = Stream::new(id.clone(), Booster::None);
        let res = decode_utterance(&dec, &mut stream, &scores, 50, None).unwrap();
        let hyp: Vec<String> = res
            .segments
            .iter()
            .flat_map(|seg| seg.best.words.iter())
            .map(|&w| words_table.symbol(w).unwrap().to_string())
            .collect();
        eprintln!("{id}: {} | {}", truth.join(" "), hyp.join(" "));
        total += truth.len();
        errors += align_words(truth, &hyp)
            .iter()
            .filter(|s| s.op != EditOp::Match)
            .count();
    }
    assert_eq!(total, 21);
    assert_eq!(errors, 0, "word errors in {total} words");
}

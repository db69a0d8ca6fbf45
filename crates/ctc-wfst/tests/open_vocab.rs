//! Open-vocabulary contexts (issue 42) end to end on a TLG built with the class slot: a phrase
//! of words the graph has never seen is decoded exactly from frames that say it when the
//! utterance's list holds it, and never without; a negative weight suppresses a phrase; a
//! broken-off prefix earns nothing; per-utterance contexts in one batch equal each alone; the
//! word insertion penalty applies to context words as to the graph's.

use ctc_wfst::{CtcConfig, CtcDecoder, CtcInput};
use ctx_core::arpa::ArpaLm;
use ctx_core::context_list::ContextList;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_core::scores::ScoreMatrix;
use ctx_graph::compile::{build_graph, Graph, GraphInputs, GraphKind};
use ctx_graph::context::ContextGraph;
use ctx_graph::csr::DecodingGraph;
use ctx_graph::ctc::CtcTopology;
use ctx_graph::grammar::MissingWords;
use ctx_graph::hmm::HmmTopology;
use std::path::Path;
use std::sync::Arc;
use wfst_search::{Booster, DecoderConfig, PhraseAutomaton, SegmentResult};

/// Units (CTC tokens) a..e: score column k is unit k (column 0 the blank).
const UNITS: [&str; 5] = ["a", "b", "c", "d", "e"];

/// The words each unit string spells (the graph's lexicon and the context's spelling alike).
fn spell(w: &str) -> Option<Vec<u32>> {
    let units = match w {
        "the" => "a b",
        "call" => "b c",
        "on" => "c a",
        // Unknown to the graph:
        "zed" => "d d a",
        "corp" => "c e",
        "zen" => "d e",
        _ => return None,
    };
    Some(
        units
            .split(' ')
            .map(|u| 1 + UNITS.iter().position(|x| *x == u).unwrap() as u32)
            .collect(),
    )
}

/// A TLG over "the", "call", "on" (a unigram LM) with the class slot at entry cost `entry`.
fn tlg(topo: CtcTopology, entry: f32) -> Graph {
    let mut lexicon = Lexicon::new();
    for w in ["the", "call", "on"] {
        lexicon.push(LexiconEntry {
            word: w.into(),
            prob: 1.0,
            phones: spell(w)
                .unwrap()
                .iter()
                .map(|&u| UNITS[u as usize - 1].to_string())
                .collect(),
        });
    }
    let uni = |w: &str, p: f32, bo: f32| (vec![w.to_string()], p, bo);
    let lm = ArpaLm::from_entries(vec![vec![
        uni("<s>", -99.0, 0.0),
        uni("</s>", -0.5, 0.0),
        uni("the", -0.5, 0.0),
        uni("call", -0.6, 0.0),
        uni("on", -0.7, 0.0),
    ]])
    .unwrap();
    let units: Vec<String> = UNITS.iter().map(|s| s.to_string()).collect();
    let inputs = GraphInputs {
        lexicon: &lexicon,
        units: &units,
        lm: &lm,
        missing_words: MissingWords::Error,
        silence: None,
        hmm: HmmTopology::default(),
        gboost: None,
        context_slot: Some(entry),
    };
    build_graph(GraphKind::Tlg(topo), &inputs).unwrap().0
}

/// Frames that say `words` clearly: each unit on one frame (a blank between equal units and
/// after each word), log-probabilities 0.9 for the said unit and the rest spread evenly.
fn say(words: &[&str]) -> ScoreMatrix {
    say_pausing(words, usize::MAX, 0)
}

/// [`say`] with `pause` more blank frames after the first `at` words.
fn say_pausing(words: &[&str], at: usize, pause: usize) -> ScoreMatrix {
    let cols = UNITS.len() + 1;
    let mut frames: Vec<usize> = vec![0];
    for (i, w) in words.iter().enumerate() {
        let mut prev = 0;
        for u in spell(w).unwrap() {
            if u as usize == prev {
                frames.push(0);
            }
            frames.push(u as usize);
            prev = u as usize;
        }
        frames.push(0);
        if at == i + 1 {
            frames.extend(std::iter::repeat_n(0, pause));
        }
    }
    let hit = 0.9f32;
    let rest = (1.0 - hit) / (cols - 1) as f32;
    let mut data = Vec::new();
    for &f in &frames {
        for c in 0..cols {
            data.push(if c == f { hit.ln() } else { rest.ln() });
        }
    }
    ScoreMatrix::new(frames.len(), cols, data).unwrap()
}

fn config(g: &Graph, wip: f32) -> CtcConfig {
    CtcConfig {
        search: DecoderConfig {
            beam: 16.0,
            acoustic_scale: 1.0,
            ..DecoderConfig::default()
        },
        word_insertion_penalty: wip,
        context_slot: g.symbols.context_slot(),
        ..CtcConfig::default()
    }
}

fn context(text: &str, topo: CtcTopology) -> ContextGraph {
    bounded_context(text, topo, None)
}

fn bounded_context(text: &str, topo: CtcTopology, max_blanks: Option<u32>) -> ContextGraph {
    let list = ContextList::parse(text, Path::new("list.tsv"), 4.0, true).unwrap();
    ContextGraph::compile(&list, spell, topo, max_blanks).unwrap()
}

/// The words of a decoded utterance, context words spelled by the segment's context.
fn words(g: &Graph, seg: &SegmentResult) -> String {
    seg.best
        .words
        .iter()
        .map(|&w| {
            seg.context
                .as_ref()
                .and_then(|c| c.word(w))
                .or_else(|| g.symbols.words.symbol(w))
                .unwrap_or("?")
                .to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn decode(
    dec: &CtcDecoder<'_>,
    g: &Graph,
    utts: &[(&ScoreMatrix, Option<Arc<ContextGraph>>)],
) -> Vec<String> {
    let ids: Vec<String> = (0..utts.len()).map(|i| format!("u{i}")).collect();
    let inputs: Vec<CtcInput<'_>> = utts
        .iter()
        .zip(&ids)
        .map(|((m, c), id)| CtcInput {
            id,
            scores: m,
            booster: Booster::None,
            context: c.clone(),
        })
        .collect();
    dec.decode_batch(&inputs, 4)
        .into_iter()
        .map(|r| {
            let r = r.unwrap();
            assert_eq!(r.segments.len(), 1);
            words(g, &r.segments[0])
        })
        .collect()
}

#[test]
fn unknown_names_are_decoded_from_the_list_and_only_from_it() {
    for topo in [CtcTopology::Normal, CtcTopology::Compact] {
        let g = tlg(topo, 3.0);
        let csr = DecodingGraph::from_fst(&g.fst, None).unwrap();
        let dec = CtcDecoder::new(&csr, config(&g, 0.0)).unwrap();
        // The normal topology has a slot arc per T state; only the blank state's enters (one
        // return state, one copy of the context's search).
        let slot_arcs = csr
            .olabel
            .iter()
            .filter(|&&o| Some(o) == g.symbols.context_slot());
        let n = slot_arcs.count();
        assert!(
            n >= if topo == CtcTopology::Normal { 2 } else { 1 },
            "{topo:?}: {n}"
        );
        assert_eq!(
            dec.engine().unwrap().slot().unwrap().returns.len(),
            1,
            "{topo:?}"
        );
        let said = say(&["the", "zed", "corp", "call"]);
        let list = dec.context(context("zed corp\t4\nzen", topo));
        let known = say(&["the", "call", "on"]);
        let got = decode(
            &dec,
            &g,
            &[
                (&said, Some(list.clone())),
                (&said, None),
                (&known, Some(list.clone())),
            ],
        );
        // With the list: exactly what was said, the unknown names as spelled in the list.
        assert_eq!(got[0], "the zed corp call", "{topo:?}");
        // Without it the graph cannot write them.
        assert!(
            !got[1].contains("zed") && !got[1].contains("corp"),
            "{topo:?}: {}",
            got[1]
        );
        // Frames that say known words only: the list inserts nothing.
        assert_eq!(got[2], "the call on", "{topo:?}");
        // Per-utterance contexts in one batch equal each utterance decoded alone.
        let each = [
            (&said, Some(list.clone())),
            (&said, None),
            (&known, Some(list)),
        ];
        for (i, (m, c)) in each.into_iter().enumerate() {
            let alone = decode(&dec, &g, &[(m, c)]);
            assert_eq!(alone[0], got[i], "{topo:?} utterance {i}");
        }
    }
}

/// One utterance decoded with `context` (through [`CtcDecoder::context`]): its words and cost.
fn decode_one(
    dec: &CtcDecoder<'_>,
    g: &Graph,
    said: &ScoreMatrix,
    context: ContextGraph,
) -> (String, f32) {
    let inputs = [CtcInput {
        id: "u",
        scores: said,
        booster: Booster::None,
        context: Some(dec.context(context)),
    }];
    let r = dec.decode_batch(&inputs, 4).remove(0).unwrap();
    let seg = &r.segments[0];
    (words(g, seg), seg.best.cost())
}

#[test]
fn weights_count_only_for_a_completed_phrase_and_may_be_negative() {
    let topo = CtcTopology::Compact;
    let g = tlg(topo, 3.0);
    let csr = DecodingGraph::from_fst(&g.fst, None).unwrap();
    let dec = CtcDecoder::new(&csr, config(&g, 0.0)).unwrap();
    let said = say(&["the", "zed", "corp", "call"]);
    let run = |text: &str| decode_one(&dec, &g, &said, context(text, topo));
    let (w4, c4) = run("zed corp\t4");
    let (w6, c6) = run("zed corp\t6");
    assert_eq!(w4, "the zed corp call");
    assert_eq!(w6, w4);
    // The weight is the completed phrase's reward, to the cost.
    assert!((c4 - c6 - 2.0).abs() < 1e-4, "{c4} vs {c6}");
    // A negative weight makes the phrase dearer: a small one still leaves it the best
    // reading of frames nothing else fits, to the cost; a large one suppresses it.
    let (wn, cn) = run("zed corp\t-4");
    assert_eq!(wn, w4);
    assert!((cn - c4 - 8.0).abs() < 1e-4, "{cn} vs {c4}");
    let (wn, _) = run("zed corp\t-40");
    assert!(!wn.contains("zed"), "{wn}");
    // A longer phrase whose prefix was said earns nothing for the prefix: the prefix cannot
    // leave the context, so "zed corp" alone is never written and the best path costs more
    // than with the phrase that was said.
    let (wp, cp) = run("zed corp zen\t4");
    assert!(!wp.contains("zed corp call"), "{wp}");
    assert!(cp > c4 + 1.0, "{cp} vs {c4}");
}

#[test]
fn the_word_insertion_penalty_applies_to_context_words() {
    let topo = CtcTopology::Normal;
    let g = tlg(topo, 3.0);
    let csr = DecodingGraph::from_fst(&g.fst, None).unwrap();
    let said = say(&["the", "zed", "corp", "call"]);
    let cost = |wip: f32| -> f32 {
        let dec = CtcDecoder::new(&csr, config(&g, wip)).unwrap();
        let (w, c) = decode_one(&dec, &g, &said, context("zed corp\t4", topo));
        assert_eq!(w, "the zed corp call");
        c
    };
    // Four words on the path, the two of the context included; the slot arc pays none.
    let d = cost(0.5) - cost(0.0);
    assert!((d - 4.0 * 0.5).abs() < 1e-4, "{d}");
}

#[test]
fn a_pause_longer_than_the_bound_ends_a_phrase() {
    for topo in [CtcTopology::Normal, CtcTopology::Compact] {
        let g = tlg(topo, 3.0);
        let csr = DecodingGraph::from_fst(&g.fst, None).unwrap();
        let dec = CtcDecoder::new(&csr, config(&g, 0.0)).unwrap();
        // "zed corp" with 10 more blanks after zed's closing blank: 11 between its a and
        // corp's c.
        let said = say_pausing(&["the", "zed", "corp", "call"], 2, 10);
        let run = |max: Option<u32>| {
            let c = bounded_context("zed corp\t4", topo, max);
            decode_one(&dec, &g, &said, c)
        };
        let (free, cost) = run(None);
        assert_eq!(free, "the zed corp call", "{topo:?}");
        // A bound the pause fits in changes nothing, to the cost.
        let (fits, c11) = run(Some(11));
        assert_eq!(fits, free, "{topo:?}");
        assert!((c11 - cost).abs() < 1e-4, "{topo:?}: {c11} vs {cost}");
        // A bound of 4: the phrase as said is out of reach (it would hold a token over 7 blank
        // frames, ~3.8 each, for a reward of 4); the best path is another, dearer one.
        let (cut, c4) = run(Some(4));
        assert_ne!(cut, free, "{topo:?}");
        assert!(c4 > cost + 1.0, "{topo:?}: {c4} vs {cost}");
        // A bound shorter than the pauses inside a word still holds them (a blank between
        // zed's two d's, one after it).
        let plain = say(&["the", "zed", "corp", "call"]);
        let c = bounded_context("zed corp\t4", topo, Some(1));
        assert_eq!(decode_one(&dec, &g, &plain, c).0, "the zed corp call");
    }
}

#[test]
fn a_negative_weight_suppresses_an_in_vocabulary_phrase_with_the_main_paths_penalty() {
    let topo = CtcTopology::Normal;
    let g = tlg(topo, 3.0);
    let csr = DecodingGraph::from_fst(&g.fst, None).unwrap();
    let dec = CtcDecoder::new(&csr, config(&g, 0.0)).unwrap();
    let said = say(&["the", "call", "on"]);
    let list = ContextList::parse("the call\t-12\nzed\t-12", Path::new("l"), 4.0, true).unwrap();
    let id = |w: &str| g.symbols.words.id(w).filter(|&i| i != 0);
    let (auto, n) = PhraseAutomaton::penalties(&list, id).unwrap().unwrap();
    assert_eq!(
        n, 1,
        "zed is not in the graph: only its context copy needs a cost"
    );
    let ctx = dec.context(ContextGraph::compile(&list, spell, topo, None).unwrap());
    let run = |booster: Booster| {
        let inputs = [CtcInput {
            id: "u",
            scores: &said,
            booster,
            context: Some(ctx.clone()),
        }];
        let r = dec.decode_batch(&inputs, 4).remove(0).unwrap();
        let seg = &r.segments[0];
        (words(&g, seg), seg.best.cost())
    };
    // The context alone: its own copy of the phrase is dearer, but the main graph still writes
    // it at no extra cost.
    let (alone, c0) = run(Booster::None);
    assert_eq!(alone, "the call on");
    // With the main path's penalty the phrase costs 12 on every path that writes it: the best
    // path now writes something else, dearer than before but not by the whole penalty.
    let (pen, c1) = run(Booster::Phrases(auto.clone()));
    assert!(!pen.contains("the call"), "{pen}");
    assert!(c1 > c0 && c1 < c0 + 12.0, "{c0} -> {c1}");
    // A path that writes only a prefix pays nothing: "the" alone is free.
    assert_eq!(
        auto.sentence_cost(&[id("the").unwrap(), id("on").unwrap()]),
        0.0
    );
}

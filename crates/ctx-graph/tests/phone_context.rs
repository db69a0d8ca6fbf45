//! C, the phone-context transducer, on a toy inventory: composed with L and G it reads every
//! phone in its neighbours' context across word boundaries, silence breaks context, the
//! utterance edges are silence; and the ε-free functional determinization that det(H ∘ CLG)
//! uses keeps every input's best output and cost while leaving one arc per input label.

use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_graph::compile::{compose_sorted, determinize_functional};
use ctx_graph::determinize::determinize_functional_eps_free;
use ctx_graph::lexicon_fst::{build_lexicon_fst_by_class, LexiconFst, SilenceOptions};
use ctx_graph::paths::best_output;
use ctx_graph::phone_context::{add_end_marker, build_context_fst, ContextFst, ContextSpec};
use ctx_graph::rustfst::prelude::*;
use ctx_graph::StdFst;
use std::collections::BTreeSet;

/// Units: 1 SIL (class 0, independent), 2 A_S, 3 B_B, 4 A_E (A's two positions share class 1).
fn units() -> Vec<String> {
    ["SIL", "A_S", "B_B", "A_E"].map(String::from).to_vec()
}

const CLASS: [u32; 4] = [0, 1, 2, 1];

/// Words: x = A (single), y = B A.
fn lexicon() -> Lexicon {
    let mut lex = Lexicon::new();
    for (w, p) in [("x", vec!["A_S"]), ("y", vec!["B_B", "A_E"])] {
        lex.push(LexiconEntry {
            word: w.into(),
            prob: 1.0,
            phones: p.into_iter().map(String::from).collect(),
        });
    }
    lex
}

/// A key that spells the context: unit·100 + left·10 + right.
fn key(l: u32, u: u32, r: u32) -> u32 {
    u * 100 + l * 10 + r
}

fn toy() -> (LexiconFst, ContextFst) {
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.5,
    };
    let l = build_lexicon_fst_by_class(&lexicon(), &units(), Some(&sil), &CLASS, false).unwrap();
    let spec = ContextSpec {
        class_of_unit: CLASS.to_vec(),
        independent: vec![true, false, false, false],
        edge_class: 0,
        num_disambig: l.symbols.num_disambig,
        flush_disambig: None,
    };
    let c = build_context_fst(&spec, |l, u, r| Ok(key(l, u, r))).unwrap();
    (l, c)
}

/// G accepting exactly `words` (ids of `l`'s table), then the end.
fn linear_g(l: &LexiconFst, words: &[&str]) -> StdFst {
    let mut g = StdFst::new();
    let mut s = g.add_state();
    g.set_start(s).unwrap();
    for w in words {
        let id = l.symbols.words.id(w).unwrap();
        let t = g.add_state();
        g.add_tr(s, Tr::new(id, id, 0.0, t)).unwrap();
        s = t;
    }
    g.set_final(s, 0.0).unwrap();
    g
}

/// Every accepted sequence of C's keys (disambiguation and start labels dropped), with the
/// words written along it.
fn key_sequences(c: &ContextFst, clg: &StdFst) -> BTreeSet<(Vec<u32>, Vec<u32>)> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(clg.start().unwrap(), Vec::new(), Vec::new())];
    while let Some((s, keys, words)) = stack.pop() {
        if clg.final_weight(s).unwrap().is_some() {
            out.insert((keys.clone(), words.clone()));
        }
        if keys.len() > 8 {
            continue;
        }
        for tr in clg.get_trs(s).unwrap().trs() {
            let (mut k, mut w) = (keys.clone(), words.clone());
            if tr.ilabel >= 1 && tr.ilabel <= c.num_cd() {
                k.push(c.keys[tr.ilabel as usize - 1]);
            }
            if tr.olabel != 0 {
                w.push(tr.olabel);
            }
            stack.push((tr.nextstate, k, w));
        }
    }
    out
}

fn clg(l: &LexiconFst, c: &ContextFst, words: &[&str]) -> StdFst {
    let g = linear_g(l, words);
    let lg = compose_sorted(&l.fst, &g, "L ∘ G").unwrap();
    let lg = determinize_functional(&lg, "det").unwrap();
    compose_sorted(
        &c.fst,
        &add_end_marker(&lg, c.end_label()).unwrap(),
        "C ∘ LG",
    )
    .unwrap()
}

#[test]
fn phones_take_the_neighbouring_words_phones_as_context() {
    let (l, c) = toy();
    let f = clg(&l, &c, &["x", "y"]);
    let seqs = key_sequences(&c, &f);
    let ids: Vec<u32> = ["x", "y"]
        .iter()
        .map(|w| l.symbols.words.id(w).unwrap())
        .collect();
    // "x y" without pauses: A between the edge and B, B between A and A, A before the edge.
    let direct = vec![key(0, 2, 2), key(1, 3, 1), key(2, 4, 0)];
    assert!(seqs.contains(&(direct, ids.clone())), "{seqs:?}");
    // A pause between the words: silence is both words' context, and reads SIL's own key.
    let paused = vec![key(0, 2, 0), key(0, 1, 0), key(0, 3, 1), key(2, 4, 0)];
    assert!(seqs.contains(&(paused, ids.clone())), "{seqs:?}");
    // Every sequence writes x y, and a word-initial B never sees silence without a SIL key.
    for (keys, words) in &seqs {
        assert_eq!(words, &ids);
        for w in keys.windows(2) {
            if w[1] / 100 == 3 && (w[1] / 10) % 10 == 0 {
                assert_eq!(w[0], key(0, 1, 0), "{keys:?}");
            }
        }
    }
    // Four silences at most in 8 keys, so a handful of sequences; none is the within-word one.
    let within = vec![key(0, 2, 0), key(0, 3, 1), key(2, 4, 0)];
    assert!(!seqs.iter().any(|(k, _)| k == &within));
}

#[test]
fn c_names_only_the_contexts_it_was_asked_for() {
    let (_, c) = toy();
    // Context-independent SIL is asked once, between the edges.
    let sil: Vec<u32> = c.keys.iter().copied().filter(|k| k / 100 == 1).collect();
    assert_eq!(sil, vec![key(0, 1, 0)]);
    // A_S: every left class (0, 1, 2) × every right class (0, 1, 2).
    let a_s = c.keys.iter().filter(|k| *k / 100 == 2).count();
    assert_eq!(a_s, 9);
    assert_eq!(c.start_label(), c.num_cd() + 1 + c.num_disambig);
}

#[test]
fn determinization_keeps_every_best_path_and_one_arc_per_label() {
    let (l, c) = toy();
    // G: any sequence of x and y (a loop), so C's delay makes subsets merge.
    let mut g = StdFst::new();
    let s = g.add_state();
    g.set_start(s).unwrap();
    g.set_final(s, 0.25).unwrap();
    for (w, cost) in [("x", 1.0), ("y", 0.5)] {
        let id = l.symbols.words.id(w).unwrap();
        g.add_tr(s, Tr::new(id, id, cost, s)).unwrap();
    }
    let lg = compose_sorted(&l.fst, &g, "L ∘ G").unwrap();
    let lg = determinize_functional(&lg, "det").unwrap();
    let f = compose_sorted(
        &c.fst,
        &add_end_marker(&lg, c.end_label()).unwrap(),
        "C ∘ LG",
    )
    .unwrap();
    let d = determinize_functional_eps_free(&f).unwrap();
    for s in 0..d.num_states() as StateId {
        let labels: Vec<u32> = d
            .get_trs(s)
            .unwrap()
            .trs()
            .iter()
            .map(|t| t.ilabel)
            .collect();
        let set: BTreeSet<u32> = labels.iter().copied().collect();
        assert_eq!(
            set.len(),
            labels.len(),
            "state {s} has two arcs on one label"
        );
    }
    // Every input of up to 5 labels: the same best words and cost.
    let mut inputs: Vec<Vec<u32>> = vec![vec![]];
    let alphabet: Vec<u32> = (1..=c.start_label()).collect();
    let mut checked = 0;
    for _ in 0..4 {
        let mut next = Vec::new();
        for p in &inputs {
            for &x in &alphabet {
                let mut q = p.clone();
                q.push(x);
                if let Some((w, cost)) = best_output(&f, &q).unwrap() {
                    let (dw, dcost) = best_output(&d, &q).unwrap().expect("accepted by det");
                    assert_eq!(w, dw, "input {q:?}");
                    assert!(
                        (cost - dcost).abs() < 1e-3,
                        "input {q:?}: {cost} vs {dcost}"
                    );
                    checked += 1;
                }
                next.push(q);
            }
        }
        // Keep the prefixes some path reads.
        inputs = next.into_iter().filter(|q| prefix_read(&f, q)).collect();
    }
    assert!(checked > 10, "{checked}");
    // As small as its minimization: no subset was split.
    let mut m = d.clone();
    ctx_graph::compile::minimize_encoded(&mut m, "min").unwrap();
    assert_eq!(m.num_states(), d.num_states());
}

/// Whether some path of `f` reads `input` as a prefix.
fn prefix_read(f: &StdFst, input: &[u32]) -> bool {
    let mut states = vec![f.start().unwrap()];
    for &x in input {
        let mut next = Vec::new();
        for s in states {
            for tr in f.get_trs(s).unwrap().trs() {
                if tr.ilabel == x {
                    next.push(tr.nextstate);
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        next.sort_unstable();
        next.dedup();
        states = next;
    }
    true
}

#[test]
fn a_non_functional_transducer_is_refused() {
    // Input 1 written as 10 or as 20, both ending.
    let mut f = StdFst::new();
    let (s, a, b) = (f.add_state(), f.add_state(), f.add_state());
    f.set_start(s).unwrap();
    f.add_tr(s, Tr::new(1, 10, 0.0, a)).unwrap();
    f.add_tr(s, Tr::new(1, 20, 0.0, b)).unwrap();
    f.set_final(a, 0.0).unwrap();
    f.set_final(b, 0.0).unwrap();
    let e = determinize_functional_eps_free(&f).unwrap_err().to_string();
    assert!(e.contains("not functional"), "{e}");
    // An input-ε arc is refused by name.
    let mut f = StdFst::new();
    let (s, a) = (f.add_state(), f.add_state());
    f.set_start(s).unwrap();
    f.add_tr(s, Tr::new(0, 10, 0.0, a)).unwrap();
    let e = determinize_functional_eps_free(&f).unwrap_err().to_string();
    assert!(e.contains("input-ε"), "{e}");
}

/// With the context slot (issue 42's class word, spelled by L's last disambiguation symbol), C
/// reads the slot as a word edge: the previous word's last phone is emitted in the edge
/// context *before* the slot's word, and the next word starts afresh from the edge — so a
/// context graph entered there sits between two complete words.
#[test]
fn the_context_slot_is_a_word_edge() {
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.5,
    };
    let l = build_lexicon_fst_by_class(&lexicon(), &units(), Some(&sil), &CLASS, true).unwrap();
    let slot = l.symbols.context_slot().unwrap();
    let spec = ContextSpec {
        class_of_unit: CLASS.to_vec(),
        independent: vec![true, false, false, false],
        edge_class: 0,
        num_disambig: l.symbols.num_disambig,
        flush_disambig: Some(l.symbols.num_disambig - 1),
    };
    let c = build_context_fst(&spec, |l, u, r| Ok(key(l, u, r))).unwrap();
    let g = linear_g(&l, &["x", ctx_graph::lexicon_fst::CONTEXT_SLOT, "y"]);
    let lg = compose_sorted(&l.fst, &g, "L ∘ G").unwrap();
    let f = compose_sorted(
        &c.fst,
        &add_end_marker(&lg, c.end_label()).unwrap(),
        "C ∘ LG",
    )
    .unwrap();
    // Every path as one sequence: keys (as themselves) and words (as 1000 + id), in order.
    let mut seqs = BTreeSet::new();
    let mut stack = vec![(f.start().unwrap(), Vec::new())];
    while let Some((s, seq)) = stack.pop() {
        if f.final_weight(s).unwrap().is_some() {
            seqs.insert(seq.clone());
        }
        if seq.len() > 10 {
            continue;
        }
        for tr in f.get_trs(s).unwrap().trs() {
            let mut q: Vec<u32> = seq.clone();
            if tr.ilabel >= 1 && tr.ilabel <= c.num_cd() {
                q.push(c.keys[tr.ilabel as usize - 1]);
            }
            if tr.olabel != 0 {
                q.push(1000 + tr.olabel);
            }
            stack.push((tr.nextstate, q));
        }
    }
    let w = |s: &str| 1000 + l.symbols.words.id(s).unwrap();
    // x's A sees the edge on both sides, then the slot, then y's B from the edge.
    let direct = vec![
        w("x"),
        key(0, 2, 0),
        1000 + slot,
        w("y"),
        key(0, 3, 1),
        key(2, 4, 0),
    ];
    assert!(seqs.contains(&direct), "{seqs:?}");
    for q in &seqs {
        let at = q.iter().position(|&k| k == 1000 + slot).unwrap();
        // Before the slot: x's A, complete and in the edge's context, then maybe a pause.
        let last = q[..at].iter().rev().find(|&&k| k < 1000);
        assert!(
            matches!(last, Some(&k) if k == key(0, 2, 0) || k == key(0, 1, 0)),
            "{q:?}"
        );
        assert!(q[..at].contains(&key(0, 2, 0)), "{q:?}");
        // y's B sees the edge on its left.
        assert!(q[at..].contains(&key(0, 3, 1)), "{q:?}");
    }
    // A flush past L's symbols is refused.
    let bad = ContextSpec {
        flush_disambig: Some(l.symbols.num_disambig),
        ..spec
    };
    assert!(build_context_fst(&bad, |l, u, r| Ok(key(l, u, r))).is_err());
}

//! Algorithm 1 (the arcs to boost for a phrase list) against brute force: on random acyclic
//! graphs, an arc must be boosted iff some path ending with it outputs a phrase prefix.

use ctx_graph::csr::DecodingGraph;
use ctx_graph::phrase_arcs::{phrase_arcs, PhraseArcFinder};
use ctx_graph::StdFst;
use rustfst::prelude::*;
use std::collections::BTreeSet;

/// A small xorshift generator (seeded, no dependency).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A random DAG (arcs go to higher states only) with mixed emitting and non-emitting arcs,
/// a third of them with an output word in 1..=words.
fn random_dag(rng: &mut Rng, states: u32, words: u32) -> DecodingGraph {
    let mut f = StdFst::new();
    for _ in 0..states {
        f.add_state();
    }
    f.set_start(0).unwrap();
    f.set_final(states - 1, 0.0).unwrap();
    for s in 0..states - 1 {
        for _ in 0..1 + rng.below(3) {
            let to = s + 1 + rng.below((states - 1 - s) as u64) as u32;
            let il = rng.below(3) as u32; // 0 = non-emitting
            let ol = if rng.below(3) == 0 {
                1 + rng.below(words as u64) as u32
            } else {
                0
            };
            f.add_tr(s, Tr::new(il, ol, 0.0, to)).unwrap();
        }
    }
    DecodingGraph::from_fst(&f, None).unwrap()
}

/// Every arc that ends a path whose output sequence is a non-empty prefix of a phrase (the path
/// ending with an output arc), by enumerating all paths.
fn brute_force(g: &DecodingGraph, phrases: &[Vec<u32>]) -> Vec<u32> {
    let prefixes: BTreeSet<Vec<u32>> = phrases
        .iter()
        .flat_map(|p| (1..=p.len()).map(|t| p[..t].to_vec()))
        .collect();
    let mut out = BTreeSet::new();
    // (state, outputs so far), depth first from every state.
    let mut stack: Vec<(u32, Vec<u32>)> = (0..g.num_states() as u32)
        .map(|s| (s, Vec::new()))
        .collect();
    while let Some((s, words)) = stack.pop() {
        for a in g.emitting(s).chain(g.non_emitting(s)) {
            let mut w = words.clone();
            if g.olabel[a] != 0 {
                w.push(g.olabel[a]);
                if prefixes.contains(&w) {
                    out.insert(a as u32);
                }
            }
            // Longer outputs that are no prefix cannot become one.
            if w.is_empty() || prefixes.contains(&w) {
                stack.push((g.next[a], w));
            }
        }
    }
    out.into_iter().collect()
}

/// Whether some path of `g` outputs exactly `phrase` (all paths from every state).
fn outputs(g: &DecodingGraph, phrase: &[u32]) -> bool {
    let mut stack: Vec<(u32, usize)> = (0..g.num_states() as u32).map(|s| (s, 0)).collect();
    while let Some((s, k)) = stack.pop() {
        for a in g.emitting(s).chain(g.non_emitting(s)) {
            match g.olabel[a] {
                0 => stack.push((g.next[a], k)),
                w if w == phrase[k] && k + 1 == phrase.len() => return true,
                w if w == phrase[k] => stack.push((g.next[a], k + 1)),
                _ => {}
            }
        }
    }
    false
}

#[test]
fn algorithm_1_equals_brute_force_on_random_graphs() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut nonempty = 0;
    let mut later_words_pruned = 0;
    for case in 0..300 {
        let states = 4 + rng.below(9) as u32;
        let g = random_dag(&mut rng, states, 3);
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(3))
            .map(|_| {
                (0..1 + rng.below(3))
                    .map(|_| 1 + rng.below(4) as u32) // word 4 is never in the graph
                    .collect()
            })
            .collect();
        let got = phrase_arcs(&g, &phrases);
        let want = brute_force(&g, &phrases);
        assert_eq!(
            got.arcs, want,
            "case {case}: phrases {phrases:?}, graph {g:?}"
        );
        nonempty += usize::from(!want.is_empty());
        // Some arc carries a phrase's later word yet is not boosted: the search is selective.
        let words: BTreeSet<u32> = phrases.iter().flatten().copied().collect();
        later_words_pruned += usize::from(
            (0..g.num_arcs()).any(|a| words.contains(&g.olabel[a]) && !want.contains(&(a as u32))),
        );
    }
    assert!(nonempty > 200, "{nonempty}");
    assert!(later_words_pruned > 50, "{later_words_pruned}");
}

/// Many lists searched at once (shared prefixes searched once) give each list exactly its own
/// arcs and counts: nothing leaks from one list's phrases into another's.
#[test]
fn lists_searched_together_equal_each_alone() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut differ = 0;
    for case in 0..200 {
        let states = 4 + rng.below(9) as u32;
        let g = random_dag(&mut rng, states, 3);
        let lists: Vec<Vec<Vec<u32>>> = (0..1 + rng.below(4))
            .map(|_| {
                (0..rng.below(4))
                    .map(|_| (0..rng.below(4)).map(|_| 1 + rng.below(4) as u32).collect())
                    .collect()
            })
            .collect();
        let together = PhraseArcFinder::new(&g).find_lists(&lists);
        assert_eq!(together.len(), lists.len());
        for (i, l) in lists.iter().enumerate() {
            let got = together.list(i);
            assert_eq!(got.arcs, brute_force(&g, l), "case {case} list {i}: {l:?}");
            let nonempty = l.iter().filter(|p| !p.is_empty()).count();
            assert_eq!(got.phrases, nonempty, "case {case} list {i}");
            // Spelled: some path outputs the whole phrase.
            let spelled = l.iter().filter(|p| !p.is_empty() && outputs(&g, p)).count();
            assert_eq!(got.spelled, spelled, "case {case} list {i}: {l:?}");
            differ += usize::from(i > 0 && got.arcs != together.list(0).arcs);
        }
    }
    assert!(differ > 50, "{differ}");
}

#[test]
fn spelled_counts_phrases_the_graph_can_output() {
    let mut f = StdFst::new();
    let s: Vec<u32> = (0..4).map(|_| f.add_state()).collect();
    f.set_start(s[0]).unwrap();
    f.set_final(s[3], 0.0).unwrap();
    // 0 -a-> 1 -ε-> 2 -b-> 3
    f.add_tr(s[0], Tr::new(1, 1, 0.0, s[1])).unwrap();
    f.add_tr(s[1], Tr::new(0, 0, 0.0, s[2])).unwrap();
    f.add_tr(s[2], Tr::new(2, 2, 0.0, s[3])).unwrap();
    let g = DecodingGraph::from_fst(&f, None).unwrap();
    let r = phrase_arcs(&g, &[vec![1, 2], vec![2, 1], vec![1], vec![3, 1]]);
    // a b spelled; b a not (only b boosted); a spelled; c a not (nothing).
    assert_eq!((r.spelled, r.phrases), (2, 4));
    assert_eq!(r.arcs.len(), 2);
}

/// Algorithm 1 as printed (000 §4.2), one depth-first search per seed state: `shared` keeps one
/// visited set across every seed, step and phrase, as the public reference code does.
fn algorithm_1_literal(g: &DecodingGraph, phrases: &[Vec<u32>], shared: bool) -> Vec<u32> {
    let mut out = BTreeSet::new();
    let mut visited_everywhere = BTreeSet::new();
    for p in phrases.iter().filter(|p| !p.is_empty()) {
        let mut frontier: BTreeSet<u32> = (0..g.num_arcs() as u32)
            .filter(|&a| g.olabel[a as usize] == p[0])
            .collect();
        out.extend(frontier.iter().copied());
        for &w in &p[1..] {
            let mut next = BTreeSet::new();
            for &a in &frontier {
                let mut own = BTreeSet::new();
                let visited = if shared {
                    &mut visited_everywhere
                } else {
                    &mut own
                };
                let mut stack = vec![g.next[a as usize]];
                while let Some(s) = stack.pop() {
                    if !visited.insert(s) {
                        continue;
                    }
                    for b in g.emitting(s).chain(g.non_emitting(s)) {
                        match g.olabel[b] {
                            0 => stack.push(g.next[b]),
                            o if o == w => {
                                next.insert(b as u32);
                            }
                            _ => {}
                        }
                    }
                }
            }
            out.extend(next.iter().copied());
            frontier = next;
        }
    }
    out.into_iter().collect()
}

/// With one visited set per seed state, Algorithm 1 as printed equals brute force (and our
/// trie search); with the reference code's one set shared across seeds, it misses arcs — the
/// bug a shared visited set would bring back is caught by these graphs.
#[test]
fn one_visited_set_per_seed_is_exact_and_a_shared_one_is_not() {
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    let mut shared_wrong = 0;
    for case in 0..300 {
        let states = 4 + rng.below(9) as u32;
        let g = random_dag(&mut rng, states, 3);
        let phrases: Vec<Vec<u32>> = (0..1 + rng.below(3))
            .map(|_| {
                (0..1 + rng.below(3))
                    .map(|_| 1 + rng.below(3) as u32)
                    .collect()
            })
            .collect();
        let want = brute_force(&g, &phrases);
        assert_eq!(
            algorithm_1_literal(&g, &phrases, false),
            want,
            "case {case}"
        );
        assert_eq!(phrase_arcs(&g, &phrases).arcs, want, "case {case}");
        let shared = algorithm_1_literal(&g, &phrases, true);
        assert!(shared.iter().all(|a| want.contains(a)), "case {case}");
        shared_wrong += usize::from(shared != want);
    }
    assert!(shared_wrong >= 5, "{shared_wrong}");
}

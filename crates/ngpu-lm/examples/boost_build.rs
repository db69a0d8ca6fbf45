//! Time of building boosting trees (`ngpu_lm::boost::boosting_tree`), single-threaded:
//! one large trie (600,000 random phrases of 1–10 labels, V = 1,024, end bonuses: the size of a
//! word-level LM spelled in pieces) and 900 small ones (64 keywords of 3–10 labels each: per-
//! utterance lists). Seeded, so the node counts are the same on every machine.
//!
//! `cargo run --release -p ngpu-lm --example boost_build`

use ctx_data::rng::Rng;
use ngpu_lm::boost::{boosting_tree, BoostOptions, Phrase};
use std::time::Instant;

fn main() {
    let mut rng = Rng::new(3);
    let big: Vec<Phrase> = (0..600_000)
        .map(|_| {
            let n = 1 + rng.below(10);
            Phrase {
                labels: (0..n)
                    .map(|_| rng.below(1024) as u32 / (1 + rng.below(8) as u32))
                    .collect(),
                score: Some(0.0),
                end_bonus: 0.3,
            }
        })
        .collect();
    let t = Instant::now();
    let (lm, rep) = boosting_tree(&big, 1024, &BoostOptions::default()).expect("valid phrases");
    println!(
        "one trie: {} phrases, {} nodes, {:.1} MB, built in {:.3} s",
        big.len(),
        rep.nodes,
        lm.bytes() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let small: Vec<Vec<Phrase>> = (0..900)
        .map(|_| {
            (0..64)
                .map(|_| {
                    let n = 3 + rng.below(8);
                    Phrase::keyword((0..n).map(|_| rng.below(1024) as u32).collect(), None)
                })
                .collect()
        })
        .collect();
    let t = Instant::now();
    let nodes: usize = small
        .iter()
        .map(|s| {
            boosting_tree(s, 1024, &BoostOptions::default())
                .expect("valid phrases")
                .1
                .nodes
        })
        .sum();
    println!(
        "900 keyword tries of 64 phrases: {nodes} nodes, built in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}

//! Pocketsphinx's binary trie LMs read back: every n-gram of a bigram, a trigram and a 4-gram
//! model (converted by pocketsphinx itself, tests/data/sphinx_lm) equals the ARPA it was made
//! from, and damaged files are refused by name.

use ctx_core::arpa::ArpaLm;
use ctx_core::sphinx_lm::read_sphinx_bin;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sphinx_lm")
        .join(name)
}

/// Every n-gram as words → (log10 prob, log10 back-off).
fn ngrams(lm: &ArpaLm) -> BTreeMap<Vec<String>, (f32, f32)> {
    let mut out = BTreeMap::new();
    for n in 1..=lm.order() {
        for e in lm.entries(n) {
            let words = e
                .words
                .iter()
                .map(|&i| lm.vocab()[i as usize].clone())
                .collect();
            out.insert(words, (e.log10_prob, e.log10_backoff));
        }
    }
    out
}

fn assert_same(ours: &ArpaLm, want: &ArpaLm, what: &str) {
    assert_eq!(ours.order(), want.order(), "{what}");
    for n in 1..=want.order() {
        assert_eq!(ours.count(n), want.count(n), "{what}: {n}-grams");
    }
    assert_eq!(
        ours.vocab(),
        want.vocab(),
        "{what}: the words in the file's order"
    );
    let (a, b) = (ngrams(ours), ngrams(want));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}"
    );
    for (k, (p, bo)) in &a {
        let (wp, wbo) = b[k];
        // Logmath units of base 1.0001 hold a log10 to within 1e-4 (f32 of ~10^4 units).
        assert!(
            (p - wp).abs() < 2e-4 && (bo - wbo).abs() < 2e-4,
            "{what}: {k:?}: {p} {bo} vs {wp} {wbo}"
        );
    }
}

#[test]
fn binary_tries_of_orders_two_to_four_read_as_their_arpa() {
    for name in ["bi", "small", "big4"] {
        let ours = read_sphinx_bin(&data(&format!("{name}.lm.bin.gz")), 1.0001).unwrap();
        let want = ArpaLm::read(&data(&format!("{name}.arpa"))).unwrap();
        assert_same(&ours, &want, name);
    }
    // And as pocketsphinx itself writes the binary back out.
    let ours = read_sphinx_bin(&data("small.lm.bin.gz"), 1.0001).unwrap();
    let ps = ArpaLm::read(&data("small.pocketsphinx.arpa")).unwrap();
    assert_same(&ours, &ps, "small, pocketsphinx's own ARPA");
    // A trigram's score through back-offs, as the ARPA gives it.
    let s = ours
        .score_sentence(&["the", "cat", "sat"], true, false)
        .unwrap();
    let w = ArpaLm::read(&data("small.arpa"))
        .unwrap()
        .score_sentence(&["the", "cat", "sat"], true, false)
        .unwrap();
    assert!(
        (s.log10_prob - w.log10_prob).abs() < 1e-3,
        "{} vs {}",
        s.log10_prob,
        w.log10_prob
    );
}

#[test]
fn another_log_base_scales_every_value() {
    let ours = read_sphinx_bin(&data("small.lm.bin.gz"), 1.0002).unwrap();
    let want = ArpaLm::read(&data("small.arpa")).unwrap();
    // log10(1.0002) / log10(1.0001) ≈ 2: the file does not record its base.
    let (a, b) = (ngrams(&ours), ngrams(&want));
    let k = vec!["the".to_string(), "cat".to_string()];
    assert!((a[&k].0 - 2.0 * b[&k].0).abs() < 1e-3);
}

#[test]
fn damaged_files_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = ctx_core::io::read_bytes(&data("small.lm.bin.gz")).unwrap();
    let case = |name: &str, bytes: &[u8], needle: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = read_sphinx_bin(&p, 1.0001).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(needle), "{name}: {e}");
    };
    case("cut.lm.bin", &good[..good.len() - 40], "truncated");
    case(
        "longer.lm.bin",
        &[&good[..], &[0u8; 3]].concat(),
        "3 bytes after the word strings",
    );
    case(
        "arpa.lm.bin",
        b"\\data\\\nngram 1=1\n",
        "not a pocketsphinx binary trie LM",
    );
    let mut order = good.clone();
    order[19] = 9;
    case("order.lm.bin", &order, "order 9 is out of range");
    // The first unigram's child pointer beyond the bigrams (offset: header 19 + 1 + 3 counts,
    // quantisation type and 3 tables of 2^16 floats, then prob and back-off).
    let at = 19 + 1 + 12 + 4 + 3 * 65536 * 4 + 8;
    let mut ptr = good.clone();
    ptr[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
    case(
        "pointer.lm.bin",
        &ptr,
        "out of order or beyond the 8 entries",
    );
    let mut words = good.clone();
    let n = words.len();
    words[n - 1] = b'x';
    case("words.lm.bin", &words, "NUL-terminated words");
    let e = read_sphinx_bin(&data("small.lm.bin.gz"), 1.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("log base 1"), "{e}");
}

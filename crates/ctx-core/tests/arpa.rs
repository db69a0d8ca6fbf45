//! ARPA reader, writer and queries against values computed by hand from a small trigram LM.

use ctx_core::arpa::ArpaLm;
use std::path::PathBuf;

const TOY: &str = "\
some preamble text is ignored

\\data\\
ngram 1=5
ngram 2=4
ngram 3=2

\\1-grams:
-99\t<s>\t-0.5
-0.5\t</s>
-0.6\ta\t-0.3
-0.8\tb\t-0.2
-1.2\t<unk>

\\2-grams:
-0.2\t<s> a\t-0.1
-0.4\ta b\t-0.15
-0.3\tb </s>
-0.7\ta a

\\3-grams:
-0.05\t<s> a b
-0.25\ta b </s>

\\end\\
";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn queries_follow_the_backoff_rule() {
    let dir = tempfile::tempdir().unwrap();
    let lm = ArpaLm::read(&write(&dir, "toy.arpa", TOY)).unwrap();
    assert_eq!(
        (lm.order(), lm.count(1), lm.count(2), lm.count(3)),
        (3, 5, 4, 2)
    );
    let id = |w: &str| lm.word_id(w).unwrap();
    let p = |h: &[&str], w: &str| {
        lm.log10_prob(&h.iter().map(|x| id(x)).collect::<Vec<_>>(), id(w))
            .unwrap() as f64
    };
    // Listed trigram.
    assert!(close(p(&["<s>", "a"], "b"), -0.05));
    // Trigram missing: bo(<s> a) + p(a | a) = -0.1 + -0.7.
    assert!(close(p(&["<s>", "a"], "a"), -0.8));
    // History "b b" unlisted (bo 0), bigram "b b" missing: bo(b) + p(b) = -0.2 + -0.8.
    assert!(close(p(&["b", "b"], "b"), -1.0));
    // Bigram "b a" missing: bo(b) + p(a).
    assert!(close(p(&["b"], "a"), -0.8));
    // Only the last order-1 words of a long history matter.
    assert!(close(p(&["b", "b", "<s>", "a"], "b"), -0.05));
    // Missing backoff of a listed bigram ("a a" has none) counts as 0: p(b | a a) = bo(a a)=0 + p(b|a).
    assert!(close(p(&["a", "a"], "b"), -0.4));

    // Sentence "a b": p(a|<s>) + p(b|<s> a) + p(</s>|a b) = -0.2 - 0.05 - 0.25.
    let s = lm.score_sentence(&["a", "b"], true, true).unwrap();
    assert!(close(s.log10_prob, -0.5));
    assert_eq!((s.tokens, s.oov), (3, 0));
    // Sentence "b a": -1.3 (bo(<s>) + p(b)) -0.8 (bo(b) + p(a)) -0.8 (bo(a) + p(</s>)).
    let s = lm.score_sentence(&["b", "a"], true, true).unwrap();
    assert!(close(s.log10_prob, -2.9), "{}", s.log10_prob);
    // Without BOS/EOS: p(b) + p(a | b).
    let s = lm.score_sentence(&["b", "a"], false, false).unwrap();
    assert!(close(s.log10_prob, -1.6));
    // OOV maps to <unk>.
    let s = lm.score_sentence(&["zzz"], false, false).unwrap();
    assert!(close(s.log10_prob, -1.2));
    assert_eq!(s.oov, 1);
    assert!(close(s.perplexity(), 10f64.powf(1.2)));
}

#[test]
fn write_read_round_trip_plain_and_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let lm = ArpaLm::read(&write(&dir, "toy.arpa", TOY)).unwrap();
    for name in ["out.arpa", "out.arpa.gz"] {
        let p = dir.path().join(name);
        lm.write(&p).unwrap();
        let back = ArpaLm::read(&p).unwrap();
        assert_eq!(back.vocab(), lm.vocab());
        for n in 1..=3 {
            assert_eq!(back.entries(n), lm.entries(n), "order {n} of {name}");
        }
    }
}

#[test]
fn no_unk_means_oov_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = TOY
        .replace("ngram 1=5", "ngram 1=4")
        .replace("-1.2\t<unk>\n", "");
    let lm = ArpaLm::read(&write(&dir, "nounk.arpa", &text)).unwrap();
    let e = lm
        .score_sentence(&["a", "zzz"], true, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("zzz") && e.contains("<unk>"), "{e}");
}

#[test]
fn malformed_files_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    // Truncated in the middle of the bigrams.
    let cut = &TOY[..TOY.find("-0.3\tb </s>").unwrap()];
    let e = ArpaLm::read(&write(&dir, "cut.arpa", cut))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cut.arpa") && e.contains("truncated") && e.contains("2-grams"),
        "{e}"
    );
    // Header count disagrees with the section.
    let bad = TOY.replace("ngram 2=4", "ngram 2=5");
    let e = ArpaLm::read(&write(&dir, "count.arpa", &bad))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("count.arpa:") && e.contains("announces 5 2-grams") && e.contains("lists 4"),
        "{e}"
    );
    // A bigram over a word that is not a unigram.
    let bad = TOY.replace("-0.7\ta a", "-0.7\ta zz");
    let e = ArpaLm::read(&write(&dir, "word.arpa", &bad))
        .unwrap_err()
        .to_string();
    assert!(e.contains("word.arpa:19") && e.contains("zz"), "{e}");
    // A number that is not one.
    let bad = TOY.replace("-0.4\ta b", "x0.4\ta b");
    let e = ArpaLm::read(&write(&dir, "num.arpa", &bad))
        .unwrap_err()
        .to_string();
    assert!(e.contains("num.arpa:17"), "{e}");
    // Too many fields.
    let bad = TOY.replace("-0.4\ta b\t-0.15", "-0.4\ta b\t-0.15\t3");
    assert!(ArpaLm::read(&write(&dir, "f.arpa", &bad))
        .unwrap_err()
        .to_string()
        .contains("f.arpa:17"));
    // Not an ARPA file at all.
    let e = ArpaLm::read(&write(&dir, "x.arpa", "hello\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no \\data\\"), "{e}");
    // Missing file.
    let e = ArpaLm::read(&dir.path().join("missing.arpa"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.arpa"), "{e}");
}

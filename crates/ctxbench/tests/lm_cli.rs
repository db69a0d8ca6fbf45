//! `ctxbench lm train` and `ctxbench lm ppl` end to end.

mod common;
use common::*;

#[test]
fn train_then_score_a_text() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("train.txt");
    std::fs::write(&text, "A b\na\n").unwrap();
    let arpa = dir.path().join("lm.arpa.gz");
    let out = ctxbench(&[
        "lm",
        "train",
        "--text",
        text.to_str().unwrap(),
        "--order",
        "2",
        "--lowercase",
        "--out",
        arpa.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2 sentences, 3 words") && stdout.contains("2-grams:         4"),
        "{stdout}"
    );
    // Too few counts to estimate discounts, so both orders use the fallback (0.5, 1.0, 1.5) and
    // the model is the hand-worked one of ctx-data's tests: p(a|<s>) = 0.625, p(b|a) = 0.375,
    // p(</s>|b) = 0.6875, so log10 p("a b") = log10(0.1611328) = -0.7928.
    let test = dir.path().join("test.txt");
    std::fs::write(&test, "a b\n").unwrap();
    let out = ctxbench(&[
        "lm",
        "ppl",
        "--lm",
        arpa.to_str().unwrap(),
        "--text",
        test.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 sentences, 3 tokens") && stdout.contains("0 OOV"),
        "{stdout}"
    );

    std::fs::write(&text, "a </s> b\n").unwrap();
    let out = ctxbench(&[
        "lm",
        "train",
        "--text",
        text.to_str().unwrap(),
        "--out",
        arpa.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("</s>"));
}

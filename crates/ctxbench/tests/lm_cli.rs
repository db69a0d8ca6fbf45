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

#[test]
fn arrays_of_a_trained_lm_and_a_label_list_that_does_not_cover_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("train.txt");
    std::fs::write(&text, "a b c\nb c a\nc a b\n").unwrap();
    let arpa = dir.path().join("lm.arpa");
    let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
    let out = ctxbench(&[
        "lm",
        "train",
        "--text",
        &p(&text),
        "--order",
        "3",
        "--out",
        &p(&arpa),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = dir.path().join("arrays.json");
    let out = ctxbench(&[
        "lm",
        "arrays",
        "--lm",
        &p(&arpa),
        "--steps",
        "5",
        "--batch",
        "3",
        "--json",
        &p(&json),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Labels: <unk>, a, b, c (the ARPA vocabulary without <s> and </s>).
    assert_eq!(j["vocab"], 4);
    assert_eq!(j["order"], 3);
    assert_eq!(j["missing_labels"], 0);
    // The unigram state holds every label: at least V arcs.
    assert!(j["arcs"].as_u64().unwrap() >= 4, "{j}");
    // A model whose labels lack `c` cannot use this LM: the error names the word.
    let labels = dir.path().join("tokens.txt");
    std::fs::write(&labels, "<eps> 0\n<blk> 1\na 2\nb 3\n").unwrap();
    let out = ctxbench(&["lm", "arrays", "--lm", &p(&arpa), "--labels", &p(&labels)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"c\"") && err.contains("vocabulary does not match"),
        "{err}"
    );
}

//! Bad inputs: scoring.

use super::*;

bad_inputs! {
    nlp_cr: "score: an .nlp reference with CR-only line ends scores like LF"
        => |b| {
            let d = b.case_dir("nlp-cr");
            let (r, h) = nlp_pair(&d, "\r");
            (
                score_args(&r, &h),
                Expect::Clean(strs(&["no tokens", "scored as deletions"])),
            )
        };

    nlp_header: "score: an .nlp reference of only its header"
        => |b| {
            let d = b.case_dir("nlp-header");
            let (r, h) = nlp_pair(&d, "\n");
            std::fs::write(r.join("d1.nlp"), format!("{NLP_HEADER}\n")).unwrap();
            (
                score_args(&r, &h),
                Expect::Fails(strs(&["d1.nlp", "no tokens after the header"])),
            )
        };

    nlp_nonorm: "score: .nlp with wer_tags but no normalizations"
        => |b| {
            let d = b.case_dir("nlp-nonorm");
            let (r, h) = nlp_pair(&d, "\n");
            std::fs::write(
                r.join("d1.wer_tag.json"),
                r#"{"2": {"entity_type": "ORG"}}"#,
            )
            .unwrap();
            (
                score_args(&r, &h),
                Expect::Warns(strs(&["1 file(s)", "no <id>.norm.json"])),
            )
        };

    empty_ref: "score: an empty reference"
        => |b| {
            let d = b.case_dir("empty-ref");
            std::fs::write(d.join("ref"), "").unwrap();
            std::fs::write(d.join("hyp"), "u1 a b\n").unwrap();
            (
                score_args(&d.join("ref"), &d.join("hyp")),
                Expect::Fails(strs(&["empty-ref/ref", "the reference has no words"])),
            )
        };

    prune_extra: "lm train --prune with more values than the LM has orders above 1 (issue 70: extras were ignored)"
        => |b| {
            let d = b.case_dir("prune-extra");
            let text = d.join("text.txt");
            std::fs::write(&text, "a b c\nb c a\n").unwrap();
            (
                strs(&[
                    "lm",
                    "train",
                    "--text",
                    text.to_str().unwrap(),
                    "--order",
                    "2",
                    "--prune",
                    "0,1,2",
                    "--out",
                    d.join("lm.arpa").to_str().unwrap(),
                ]),
                Expect::Fails(strs(&["--prune has 3 values", "2-gram LM", "at most 1"])),
            )
        };

    labels_negative: "lm arrays with a negative label id (issue 70: blamed on a vocabulary mismatch)"
        => |b| {
            let d = b.case_dir("labels-negative");
            let lm = unigram_arpa(&d, "-0.5");
            let labels = d.join("tokens.txt");
            std::fs::write(&labels, "<blk> 0\na -3\n").unwrap();
            (
                strs(&[
                    "lm",
                    "arrays",
                    "--lm",
                    lm.to_str().unwrap(),
                    "--labels",
                    labels.to_str().unwrap(),
                ]),
                Expect::Fails(strs(&["tokens.txt line 2", "label id '-3'", "whole number"])),
            )
        };

    arpa_positive: "an ARPA file with a positive log10 probability (issue 70: it was accepted)"
        => |b| {
            let d = b.case_dir("arpa-positive");
            let lm = unigram_arpa(&d, "0.5");
            let text = d.join("text.txt");
            std::fs::write(&text, "a\n").unwrap();
            (
                ppl_args(&lm, &text),
                Expect::Fails(strs(&["lm.arpa", ":6", "0.5 is above 0", "above 1"])),
            )
        };

    arpa_top_backoff: "an ARPA back-off weight on an n-gram of the highest order (issue 70 hunt: ignored)"
        => |b| {
            let d = b.case_dir("arpa-top-backoff");
            let lm = d.join("lm.arpa");
            std::fs::write(
                &lm,
                "\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-1.0\t<s>\t-0.5\n-1.0\t</s>\n\
                 -1.0\ta\t-0.5\n-1.0\tb\n\n\\2-grams:\n-0.5\ta b\t-0.3\n\n\\end\\\n",
            )
            .unwrap();
            let text = d.join("text.txt");
            std::fs::write(&text, "a b\n").unwrap();
            (
                ppl_args(&lm, &text),
                Expect::Fails(strs(&["lm.arpa:12", "back-off weight (-0.3)", "highest order"])),
            )
        };

    sphinx_arpa: "lm from-sphinx: an ARPA file given as pocketsphinx's binary LM"
        => |b| {
            let d = b.case_dir("sphinx-arpa");
            std::fs::write(d.join("lm.bin"), "\\data\\\nngram 1=1\n").unwrap();
            (
                sphinx_args(&d.join("lm.bin"), &d.join("out.arpa")),
                Expect::Fails(strs(&[
                    "sphinx-arpa/lm.bin",
                    "not a pocketsphinx binary trie LM",
                ])),
            )
        };

    sphinx_cut: "lm from-sphinx: a binary LM cut short"
        => |b| {
            let d = b.case_dir("sphinx-cut");
            let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../ctx-core/tests/data/sphinx_lm/small.lm.bin.gz");
            let bytes = ctx_core::io::read_bytes(&fixture).unwrap();
            std::fs::write(d.join("lm.bin"), &bytes[..bytes.len() / 2]).unwrap();
            (
                sphinx_args(&d.join("lm.bin"), &d.join("out.arpa")),
                Expect::Fails(strs(&["sphinx-cut/lm.bin", "truncated", "the 2-gram back-off table"])),
            )
        };

    disjoint: "score: no hypothesis id in the reference"
        => |b| {
            let d = b.case_dir("disjoint");
            std::fs::write(d.join("ref"), "u1 a b\nu2 c\n").unwrap();
            std::fs::write(d.join("hyp"), "x1 a b\nx2 c\n").unwrap();
            (
                score_args(&d.join("ref"), &d.join("hyp")),
                Expect::Fails(strs(&["no hypothesis utterance id", "x1"])),
            )
        };
}

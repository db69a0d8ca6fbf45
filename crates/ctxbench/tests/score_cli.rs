//! `ctxbench score` end to end: the Earnings-21 references against themselves and against
//! hypotheses with a known error pattern, Kaldi text with entities, missing utterances, bad input.

mod common;
use common::*;

use ctx_core::corpus::EarningsDoc;
use ctx_core::metrics::TextNorm;
use ctxbench::score::{run_score, Format, ScoreArgs};
use std::path::{Path, PathBuf};

fn earnings_refs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/earnings21/nlp_references")
}

fn args(reference: &Path, hyp: &Path) -> ScoreArgs {
    ScoreArgs::new(reference, hyp)
}

#[test]
fn earnings21_references_score_zero_against_themselves() {
    let refs = earnings_refs();
    let r = run_score(&args(&refs, &refs)).unwrap();
    assert_eq!(r.format, Format::Nlp);
    assert_eq!(r.items.len(), 44);
    let t = &r.totals;
    assert_eq!(t.all.errors(), 0);
    assert!(t.all.ref_words > 350_000, "{}", t.all.ref_words);
    // PERSON + ORG: the thesis counts 5,189 occurrences; spans nest, and entities made only of
    // non-speech tags vanish, so ours is close to that.
    assert!((4_900..=5_300).contains(&t.entities), "{}", t.entities);
    assert_eq!(t.ne_acc(), Some(100.0));
    assert_eq!(r.missing_hyps.len() + r.extra_hyps.len(), 0);
}

/// Writes `.nlp` hypotheses for `ids` with a known error pattern and returns the expected
/// (ref words, S, D, I, NE words, NE S, NE D).
fn mutate(ids: &[&str], out: &Path) -> [u64; 7] {
    let mut exp = [0u64; 7];
    for id in ids {
        let doc = EarningsDoc::load(&earnings_refs().join(format!("{id}.nlp.gz"))).unwrap();
        let norm = |t: &str| TextNorm::Fstalign.token(t);
        let toks = &doc.nlp.tokens;
        let is_ne = |i: usize| {
            toks[i]
                .wer_tags
                .iter()
                .any(|t| matches!(doc.entity_classes[t].as_str(), "PERSON" | "ORG"))
        };
        let mut lines = vec!["token|speaker|ts|endTs|punctuation|case|tags|wer_tags".to_string()];
        let row = |w: &str| format!("{w}|0||||LC|[]|[]");
        for (i, t) in toks.iter().enumerate() {
            let Some(w) = norm(&t.token) else { continue };
            let plain = t.label.is_none()
                && (i == 0 || norm(&toks[i - 1].token) != Some(w.clone()))
                && (i + 1 == toks.len() || norm(&toks[i + 1].token) != Some(w.clone()));
            if t.label.is_none() {
                exp[0] += 1;
                if is_ne(i) {
                    exp[4] += 1;
                }
            }
            match i % 30 {
                10 if plain => {
                    exp[1] += 1;
                    exp[5] += u64::from(is_ne(i));
                    lines.push(row("zzsub"));
                }
                20 if plain => {
                    exp[2] += 1;
                    exp[6] += u64::from(is_ne(i));
                }
                0 if plain => {
                    exp[3] += 1;
                    lines.push(row(&t.token));
                    lines.push(row("zzins"));
                }
                _ => lines.push(row(&t.token)),
            }
        }
        std::fs::write(out.join(format!("{id}.nlp")), lines.join("\n") + "\n").unwrap();
    }
    exp
}

#[test]
fn earnings_hypotheses_with_a_known_error_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let refdir = dir.path().join("ref");
    std::fs::create_dir_all(&refdir).unwrap();
    let ids = ["4320211", "4341191", "4384683"];
    for id in ids {
        for (sub, suffix) in [
            ("nlp_references", ".nlp.gz"),
            ("wer_tags", ".wer_tag.json.gz"),
            ("normalizations", ".norm.json.gz"),
        ] {
            let src = earnings_refs()
                .join("..")
                .join(sub)
                .join(format!("{id}{suffix}"));
            std::fs::copy(&src, refdir.join(format!("{id}{suffix}"))).unwrap();
        }
    }
    let hypdir = dir.path().join("hyp");
    std::fs::create_dir_all(&hypdir).unwrap();
    let [_, s, d, i, _, ne_s, ne_d] = mutate(&ids, &hypdir);
    assert!(s > 100 && d > 100 && i > 100);
    let r = run_score(&args(&refdir, &hypdir)).unwrap();
    let t = &r.totals;
    assert_eq!(
        (t.all.substitutions, t.all.deletions, t.all.insertions),
        (s, d, i)
    );
    // Entity errors are charged per reference token; fstalign never charges insertions to them.
    assert_eq!(
        (t.ne.substitutions, t.ne.deletions, t.ne.insertions),
        (ne_s, ne_d, 0)
    );
    assert_eq!(t.unbiased.insertions, i);
    assert_eq!(t.all.ref_words, t.ne.ref_words + t.unbiased.ref_words);
}

#[test]
fn normalisation_candidates_match_verbalisations() {
    let dir = tempfile::tempdir().unwrap();
    let (r, h) = (dir.path().join("ref"), dir.path().join("hyp"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&h).unwrap();
    let header = "token|speaker|ts|endTs|punctuation|case|tags|wer_tags\n";
    std::fs::write(
        r.join("d1.nlp"),
        format!("{header}In|0||||UC|[]|[]\nfiscal|0||||LC|[]|['1']\n2020|0|||.|CA|['0:YEAR']|['0', '1']\nAcme|0||||UC|[]|['2']\n"),
    )
    .unwrap();
    std::fs::write(
        r.join("d1.wer_tag.json"),
        r#"{"0": {"entity_type": "YEAR"}, "1": {"entity_type": "DATE"}, "2": {"entity_type": "ORG"}}"#,
    )
    .unwrap();
    std::fs::write(
        r.join("d1.norm.json"),
        r#"{"0": {"class": "YEAR", "candidates": [{"probability": 0.9, "verbalization": ["twenty", "twenty"]}]}}"#,
    )
    .unwrap();
    let hyp = |words: &[&str]| {
        let rows: String = words
            .iter()
            .map(|w| format!("{w}|0||||LC|[]|[]\n"))
            .collect();
        std::fs::write(h.join("d1.nlp"), format!("{header}{rows}")).unwrap();
        run_score(&args(&r, &h)).unwrap()
    };
    let rep = hyp(&["in", "fiscal", "twenty", "twenty", "acme"]);
    assert_eq!(rep.totals.all.errors(), 0);
    assert_eq!(
        rep.totals.all.ref_words, 5,
        "the chosen verbalisation's words are the reference"
    );
    let rep = hyp(&["In", "Fiscal", "2020.", "ACME"]);
    assert_eq!((rep.totals.all.errors(), rep.totals.all.ref_words), (0, 4));
    let rep = hyp(&["in", "fiscal", "twenty", "twelve", "acne"]);
    assert_eq!(rep.totals.all.substitutions, 2);
    assert_eq!(rep.totals.per_class["YEAR"].substitutions, 1);
    assert_eq!(rep.totals.per_class["DATE"].substitutions, 1);
    assert_eq!(
        (rep.totals.ne.ref_words, rep.totals.ne.substitutions),
        (1, 1)
    );
}

#[test]
fn kaldi_text_with_entities_missing_hyps_and_strict() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("ref"), "u1 lufthansa one two climb flight level one two zero\nu2 contact ruzyne radar\nu3 good day\n").unwrap();
    std::fs::write(
        p("hyp"),
        "u1 lufthansa one three climb flight level one two zero\nu2 contact ruzyne radar hello\n",
    )
    .unwrap();
    std::fs::write(
        p("ents"),
        "u1\t[callsign] lufthansa one two\nu2\t[place] ruzyne radar\n",
    )
    .unwrap();
    let (r, h, e, j, a) = (p("ref"), p("hyp"), p("ents"), p("out.json"), p("ali.tsv"));
    let out = ctxbench(&[
        "score",
        "--ref",
        r.to_str().unwrap(),
        "--hyp",
        h.to_str().unwrap(),
        "--entities",
        e.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
        "--alignment",
        a.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 reference utterance(s) have no hypothesis") && stderr.contains("u3"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    // 14 reference words (5 in entities); errors: u1 one substitution in the callsign, u2 one
    // insertion after the entity (not inside it), u3 two deletions.
    assert_eq!(v["counts"]["ref_words"], 14);
    assert!((v["wer"].as_f64().unwrap() - 100.0 * 4.0 / 14.0).abs() < 1e-9);
    assert!((v["ne_wer"].as_f64().unwrap() - 100.0 / 5.0).abs() < 1e-9);
    assert!((v["u_wer"].as_f64().unwrap() - 100.0 * 3.0 / 9.0).abs() < 1e-9);
    assert_eq!(v["ne_acc"], 50.0);
    assert_eq!(v["per_class"]["callsign"]["substitutions"], 1);
    assert_eq!(v["per_utterance"]["u3"]["counts"]["deletions"], 2);
    assert_eq!(v["missing_hyps"][0], "u3");
    let ali = std::fs::read_to_string(&a).unwrap();
    let lines: Vec<&str> = ali.lines().collect();
    assert_eq!(lines.len(), 15);
    assert_eq!(lines[2], "u1\ttwo\tthree\tS");
    assert_eq!(lines[12], "u2\t*\thello\tI");
    assert_eq!(lines[14], "u3\tday\t*\tD");

    let out = ctxbench(&[
        "score",
        "--ref",
        r.to_str().unwrap(),
        "--hyp",
        h.to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("u3") && stderr.contains("--strict"),
        "{stderr}"
    );
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("ref"), "u1 a b c\n").unwrap();
    std::fs::write(p("hyp"), "u1 a b c\nu1 a\n").unwrap();
    std::fs::write(p("ents"), "u1\t[x] b d\n").unwrap();
    let s = |a: &[&str]| {
        let o = ctxbench(a);
        assert_eq!(o.status.code(), Some(1), "{a:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let (r, h, e) = (p("ref"), p("hyp"), p("ents"));
    let err = s(&[
        "score",
        "--ref",
        r.to_str().unwrap(),
        "--hyp",
        h.to_str().unwrap(),
    ]);
    assert!(err.contains("hyp:2") && err.contains("twice"), "{err}");
    let err = s(&[
        "score",
        "--ref",
        r.to_str().unwrap(),
        "--hyp",
        r.to_str().unwrap(),
        "--entities",
        e.to_str().unwrap(),
    ]);
    assert!(err.contains("u1") && err.contains("\"b d\""), "{err}");
    let err = s(&[
        "score",
        "--ref",
        p("nope").to_str().unwrap(),
        "--hyp",
        r.to_str().unwrap(),
    ]);
    assert!(err.contains("nope"), "{err}");
    assert!(!err.contains("panicked"));
}

/// A hypothesis `.nlp` as ASR vendors deliver them for Earnings-21: 7 columns with timings, an
/// empty `tags` column, CRLF line ends, cased tokens with their punctuation glued on, speaker
/// `UU`. About every 40th scored word (outside normalisation spans) is dropped: exactly those deletions and nothing else.
#[test]
fn vendor_hypothesis_nlp_files_are_read_and_scored() {
    let id = "4320211";
    let doc = EarningsDoc::load(&earnings_refs().join(format!("{id}.nlp.gz"))).unwrap();
    let norm = TextNorm::Fstalign;
    let mut rows = vec!["token|speaker|ts|endTs|punctuation|case|tags".to_string()];
    let (mut kept, mut dropped) = (0u64, 0u64);
    for (k, t) in doc.nlp.tokens.iter().enumerate() {
        let scored = norm.token(&t.token).is_some();
        // Tokens of normalisation spans stay: a dropped one lets the aligner pick another
        // verbalisation, and the count is no longer a plain deletion.
        if scored && t.label.is_none() && (kept + dropped) % 40 == 39 {
            dropped += 1;
            continue;
        }
        if scored {
            kept += 1;
        }
        let ts = k as f64 * 0.31;
        rows.push(format!(
            "{}{}|UU|{ts:.2}|{:.2}||{}|",
            t.token,
            t.punctuation,
            ts + 0.25,
            t.case
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, h) = (dir.path().join("ref"), dir.path().join("hyp"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&h).unwrap();
    std::fs::copy(
        earnings_refs().join(format!("{id}.nlp.gz")),
        r.join(format!("{id}.nlp.gz")),
    )
    .unwrap();
    std::fs::write(h.join(format!("{id}.nlp")), rows.join("\r\n") + "\r\n").unwrap();
    let rep = run_score(&args(&r, &h)).unwrap();
    let t = &rep.totals.all;
    assert!(dropped > 100, "{dropped}");
    assert_eq!(
        (t.substitutions, t.deletions, t.insertions),
        (0, dropped, 0)
    );
    assert_eq!(t.ref_words, kept + dropped);
}

/// `--format fbai` prints exactly what the LibriSpeech biasing benchmark's `score.py` printed on
/// the committed subset (tests/data/fbai: three systems on two sets, and a crafted file whose
/// inserted rare words count toward B-WER, scored with --lenient); without --lenient a missing
/// hypothesis is an error naming the utterance, as in the script.
#[test]
fn fbai_format_reproduces_score_py_exactly() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fbai");
    let mut n = 0;
    for e in std::fs::read_dir(d.join("hyp")).unwrap() {
        let h = e.unwrap().path();
        let name = h.file_name().unwrap().to_str().unwrap().to_string();
        let set = name.split('.').next().unwrap();
        let r = d.join(format!("ref/{set}.tsv"));
        let lenient = name.contains("lenient");
        let mut a = vec![
            "score",
            "--format",
            "fbai",
            "--ref",
            r.to_str().unwrap(),
            "--hyp",
            h.to_str().unwrap(),
        ];
        if lenient {
            a.push("--lenient");
        }
        let o = ctxbench(&a);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let want = std::fs::read_to_string(d.join(format!("results/{name}.result"))).unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), want, "{name}");
        if lenient {
            // The inserted rare words: B-WER insertions (4 of the 5 align as insertions).
            assert!(want.lines().nth(2).unwrap().contains("ins=4"), "{want}");
            let o = ctxbench(&a[..a.len() - 1]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(
                err.contains("missing in hyps") && err.contains("--lenient"),
                "{err}"
            );
        }
        n += 1;
    }
    assert_eq!(n, 7);
}

//! One definition of each metric across the front doors (issue 58): on the same hypotheses,
//! `decode` through a registry entry (the runner's path), `decode` with `--entities` flags and
//! `score` give the same WER and NE-WER — they used to disagree (NE-WER 13.8 against 18.2)
//! because the flag path never charged insertions inside an entity while `score` and the
//! exported registry did.

mod common;
use common::*;

fn csv_col(path: &std::path::Path, col: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    row[head.iter().position(|c| *c == col).unwrap()]
        .parse()
        .unwrap()
}

#[test]
fn decode_run_and_score_give_the_same_ne_wer() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x");
    // 40 utterances: enough for entity insertions under the frame-correlated noise (12 had none).
    export_quick(&out, 40, &[]);
    let reg_text = std::fs::read_to_string(out.join("datasets.toml")).unwrap();
    assert!(
        reg_text.contains("ne_insertions_inside = true"),
        "{reg_text}"
    );
    let field = |k: &str| {
        reg_text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .unwrap()
            .trim()
            .trim_matches('"')
            .to_string()
    };
    let p = |s: &str| out.join(s).to_str().unwrap().to_string();
    let run = |args: &[String]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = ctxbench(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let dir = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    // The registry entry (what `run` reads).
    run(&[
        "decode",
        "--registry",
        &p("datasets.toml"),
        "--dataset",
        "atco2-sim-1h-files",
        "--methods",
        "none",
        "--hyp-dir",
        &dir("h1"),
        "--points-out",
        &dir("p1.csv"),
    ]
    .map(String::from));
    // The same files as flags.
    let silence = field("silence_columns")
        .trim_matches(['[', ']'])
        .replace(' ', "");
    let flags = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = vec![
            "decode".into(),
            "--scores".into(),
            p(&field("scores")),
            "--graph".into(),
            p(&field("graph")),
            "--words".into(),
            p(&field("words")),
            "--data".into(),
            p(&field("data")),
            "--frame-shift".into(),
            field("frame_shift_s"),
            "--acoustic-scale".into(),
            field("acoustic_scale"),
            "--silence-columns".into(),
            silence.clone(),
            "--entities".into(),
            p(&field("entities")),
            "--methods".into(),
            "none".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    run(&flags(&[
        "--hyp-dir",
        &dir("h2"),
        "--points-out",
        &dir("p2.csv"),
    ]));
    // `score` on the first decode's hypotheses.
    let j = tmp.path().join("score.json");
    let score = |extra: &[&str]| -> serde_json::Value {
        let mut a: Vec<String> = [
            "score",
            "--ref",
            &p("data/text"),
            "--hyp",
            &format!("{}/none.txt", dir("h1")),
            "--entities",
            &p(&field("entities")),
            "--json",
            j.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        run(&a);
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap()
    };
    let json = score(&[]);
    let (reg, flagged) = (tmp.path().join("p1.csv"), tmp.path().join("p2.csv"));
    let ne = [
        csv_col(&reg, "ne_wer"),
        csv_col(&flagged, "ne_wer"),
        json["ne_wer"].as_f64().unwrap(),
    ];
    let wer = [
        csv_col(&reg, "wer"),
        csv_col(&flagged, "wer"),
        json["wer"].as_f64().unwrap(),
    ];
    assert!(ne[0] > 0.0, "no entity errors to compare: {ne:?}");
    for k in 1..3 {
        // (points.csv keeps four decimals.)
        assert!(
            (ne[k] - ne[0]).abs() < 1e-3,
            "NE-WER registry / flags / score: {ne:?}"
        );
        assert!(
            (wer[k] - wer[0]).abs() < 1e-3,
            "WER registry / flags / score: {wer:?}"
        );
    }
    // And `never` is one flag away on both doors.
    let never = score(&["--ne-insertions", "never"]);
    run(&flags(&[
        "--ne-insertions",
        "never",
        "--points-out",
        &dir("p3.csv"),
    ]));
    let n = never["ne_wer"].as_f64().unwrap();
    assert!(
        n < ne[0],
        "never charging insertions lowers NE-WER: {n} vs {}",
        ne[0]
    );
    assert!((csv_col(&tmp.path().join("p3.csv"), "ne_wer") - n).abs() < 1e-3);
}

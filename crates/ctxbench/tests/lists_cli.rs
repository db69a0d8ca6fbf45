//! Phrase files as users hold them, through the CLI: NeMo's context files and their spellings.

mod common;
use common::*;

/// NeMo's context files (`nemo:PATH`, `WORD_SPELLING1_SPELLING2`): CTC-WS and open-vocabulary
/// contexts read a phrase's spellings and write the phrase itself, where the same words as a
/// list of ours (`file:PATH`) write what was spotted; a file of ours keeps an underscore inside
/// a word (an empty spelling: `bad_input::settings::nemo_list_empty_spelling`).
#[test]
fn nemo_context_files_spot_spellings_and_write_the_phrase() {
    let dir = tempfile::tempdir().unwrap();
    let nemo = dir.path().join("nemo.txt");
    let ours = dir.path().join("ours.txt");
    std::fs::write(&nemo, "ryanair_ryan\nlufthansa_hansa\n").unwrap();
    std::fs::write(&ours, "ryan\nhansa\n").unwrap();
    let count = |text: &str, w: &str| text.split_whitespace().filter(|x| *x == w).count();
    for (method, key, extra) in [
        ("e2e+ctc-ws", "ws_list", &["model=ctc"][..]),
        (
            "ctc-wfst+open-vocab",
            "open_vocab",
            &["graph=tlg-normal", "open_vocab_weight=8"],
        ),
    ] {
        let mut texts = Vec::new();
        for list in [
            format!("nemo:{}", nemo.display()),
            format!("file:{}", ours.display()),
        ] {
            let d = dir.path().join(format!("{method}-{}", texts.len()));
            let set = format!("{key}={list}");
            let mut args = vec![
                "decode",
                "--dataset",
                "atco2-sim-1h",
                "--quick",
                "--method",
                method,
                "--set",
                &set,
                "--hyp-dir",
                d.to_str().unwrap(),
            ];
            for e in extra {
                args.extend(["--set", e]);
            }
            let out = ctxbench(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            texts.push(std::fs::read_to_string(d.join("none.txt")).unwrap());
        }
        let (n, o) = (&texts[0], &texts[1]);
        assert!(
            count(n, "ryanair") >= 3 && count(n, "ryan") == 0,
            "{method}: {n}"
        );
        assert!(
            count(o, "ryan") == count(n, "ryanair") && count(o, "ryanair") == 0,
            "{method}"
        );
        assert_eq!(count(n, "lufthansa"), count(o, "hansa"), "{method}");
    }
}

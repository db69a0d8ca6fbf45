//! Bad inputs: numeric settings (issue 58: accepted silently, wrong figures).

use super::*;

bad_inputs! {
    frame_shift_nan: "--frame-shift nan (used to give WER 138.2)"
        => |b| {
            let d = b.case_dir("frame-shift-nan");
            let mut a = b.decode(&b.ark(&d, |_| {}), &b.data, &[]);
            let i = a.iter().position(|x| x == "--frame-shift").unwrap();
            a[i + 1] = "nan".into();
            (
                a,
                Expect::Fails(strs(&["frame shift NaN", "--frame-shift", "above 0"])),
            )
        };

    open_vocab_entry_minus_1e30: "--open-vocab-entry -1e30 (used to give WER 273.7)"
        => |b| {
            (
                b.decode_registry(&[
                    "--open-vocab",
                    "sequences",
                    "--open-vocab-entry",
                    "-1e30",
                ]),
                Expect::Fails(strs(&["--open-vocab-entry", "-1e30", "at most 1000"])),
            )
        };

    open_vocab_weight_inf: "--open-vocab-weight inf"
        => |b| {
            (
                b.decode_registry(&["--open-vocab", "sequences", "--open-vocab-weight", "inf"]),
                // A setting flag's value is parsed as experiment files' are: refused at
                // the door as a usage error naming the flag.
                Expect::Usage(strs(&["--open-vocab-weight", "'inf' is not a number"])),
            )
        };

    word_boost_score_nan: "--word-boost-score nan (used to report 'word 49')"
        => |b| {
            (
                b.decode_registry(&["--word-boost", "sequences", "--word-boost-score", "nan"]),
                Expect::Usage(strs(&["--word-boost-score", "'nan' is not a number"])),
            )
        };

    bias_both: "--bias-list with --bias-utt (the first used to be ignored)"
        => |b| {
            let d = b.case_dir("bias-both");
            let l = d.join("list.txt");
            std::fs::write(&l, "lufthansa\n").unwrap();
            let u = d.join("utt.tsv");
            std::fs::write(&u, format!("{}\tlufthansa\n", b.id(0))).unwrap();
            (
                b.decode(
                    &b.ark(&d, |_| {}),
                    &b.data,
                    &[
                        "--bias-list",
                        l.to_str().unwrap(),
                        "--bias-utt",
                        u.to_str().unwrap(),
                    ],
                ),
                Expect::Usage(strs(&["--bias-utt", "--bias-list", "cannot be used with"])),
            )
        };

    ne_classes_no_entity_has: "score --ne-classes naming a class no entity has"
        => |b| {
            let x = b.dir.join("x");
            let (t, e) = (x.join("data/text"), x.join("entities.txt"));
            (
                strs(&[
                    "score",
                    "--ref",
                    t.to_str().unwrap(),
                    "--hyp",
                    t.to_str().unwrap(),
                    "--entities",
                    e.to_str().unwrap(),
                    "--ne-classes",
                    "NOSUCH",
                ]),
                Expect::Fails(strs(&[
                    "--ne-classes",
                    "NOSUCH",
                    "CALLSIGN",
                    "NE-WER would be empty",
                ])),
            )
        };

    dup_utt2dur: "a duplicate utt2dur line"
        => |b| {
            let d = b.case_dir("dup-utt2dur");
            let data = b.data_copy(&d);
            let p = data.join("utt2dur");
            let mut t = std::fs::read_to_string(&p).unwrap();
            let first = t.lines().next().unwrap().to_string();
            t.push_str(&format!("{first}\n"));
            std::fs::write(&p, t).unwrap();
            (
                b.decode(&b.ark(&d, |_| {}), &data, &[]),
                Expect::Fails(strs(&["utt2dur", "duplicate line for", "first on line 1"])),
            )
        };

    silence_beyond: "a silence column beyond the scores' width (used to be accepted)"
        => |b| {
            let d = b.case_dir("silence-beyond");
            let mut a = b.decode(&b.ark(&d, |_| {}), &b.data, &[]);
            let i = a.iter().position(|x| x == "--silence-columns").unwrap();
            a[i + 1] = "9999".into();
            (
                a,
                Expect::Fails(vec![
                    b.id(0),
                    "silence column 9999".into(),
                    "--silence-columns".into(),
                ]),
            )
        };

    limit_zero: "--limit 0 names the limit"
        => |b| {
            (
                b.decode_registry(&["--limit", "0"]),
                Expect::Fails(strs(&["limit 0", "--limit", "at least 1"])),
            )
        };

    open_vocab_empty: "an empty --open-vocab file: (used to decode unbiased, labelled open-vocab)"
        => |b| {
            let d = b.case_dir("open-vocab-empty");
            let f = d.join("phrases.txt");
            std::fs::write(&f, "\n\n").unwrap();
            let arg = format!("file:{}", f.display());
            (
                b.decode_registry(&["--open-vocab", &arg]),
                Expect::Fails(strs(&["phrases.txt", "holds no phrase"])),
            )
        };

    bias_utt_missing: "a --bias-utt file missing an utterance (used to say nothing)"
        => |b| {
            let d = b.case_dir("bias-utt-missing");
            let u = d.join("utt.tsv");
            std::fs::write(&u, format!("{}\tlufthansa\n", b.id(0))).unwrap();
            (
                b.decode(
                    &b.ark(&d, |_| {}),
                    &b.data,
                    &["--bias-utt", u.to_str().unwrap()],
                ),
                Expect::Warns(vec![
                    "have no list in".into(),
                    b.id(1),
                    "decode unbiased".into(),
                ]),
            )
        };

    nemo_list_empty_spelling: "a NeMo context file (nemo:PATH) with an empty spelling"
        => |b| {
            let d = b.case_dir("nemo-empty-spelling");
            let f = d.join("nemo.txt");
            std::fs::write(&f, "ryanair_ryan\nklm_\n").unwrap();
            let set = format!("ws_list=nemo:{}", f.display());
            (
                strs(&[
                    "decode", "--dataset", "atco2-sim-1h", "--quick", "--method", "e2e+ctc-ws",
                    "--set", "model=ctc", "--set", &set,
                ]),
                Expect::Fails(strs(&["nemo.txt:2", "spelling 1 is empty"])),
            )
        };

    kb_alternatives_zero: "kb_alternatives = 0 (no tokenisation of a keyword at all)"
        => |_| {
            (
                strs(&[
                    "decode", "--dataset", "atco2-sim-1h", "--quick", "--method", "e2e+kb",
                    "--set", "model=rnnt", "--set", "kb_list=sequences",
                    "--set", "kb_alternatives=0",
                ]),
                Expect::Fails(strs(&["kb_alternatives 0", "at least 1"])),
            )
        };

    kb_dropout_one: "kb_dropout = 1 (every merge dropped: characters only)"
        => |_| {
            (
                strs(&[
                    "decode", "--dataset", "atco2-sim-1h", "--quick", "--method", "e2e+kb",
                    "--set", "model=rnnt", "--set", "kb_list=sequences", "--set", "kb_dropout=1",
                ]),
                Expect::Fails(strs(&["kb_dropout 1", "between 0 and 1"])),
            )
        };

    kb_unk_score_nan: "kb_unk_score = nan"
        => |_| {
            (
                strs(&[
                    "decode", "--dataset", "atco2-sim-1h", "--quick", "--method", "e2e+kb",
                    "--set", "model=rnnt", "--set", "kb_list=sequences",
                    "--set", "kb_unk_score=nan",
                ]),
                Expect::Fails(strs(&["kb_unk_score=nan", "is not a number"])),
            )
        };
}

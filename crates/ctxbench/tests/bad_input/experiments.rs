//! Bad inputs: experiment files.

use super::*;

bad_inputs! {
    dup_rows: "an experiment with the same [[rows]] entry twice"
        => |b| {
            let d = b.case_dir("dup-rows");
            let e = d.join("dup.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\n[[rows]]\nrow = \"A\"\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["row 'A'", "the same point twice"])),
            )
        };

    row_swept: "a row that sets a key the experiment's [sweep] also sweeps (issue 70: the row's value was lost)"
        => |b| {
            let d = b.case_dir("row-swept");
            let e = d.join("swept.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [sweep]\nbeam = [11.0, 13.0]\n[table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\n\
                 beam = 9.0\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["swept.toml [[rows]] #1 ('A'", "sets 'beam'", "[sweep] also sweeps"])),
            )
        };

    row_pipe: "a row label holding '|' (issue 70: it broke its table.md row)"
        => |b| {
            let d = b.case_dir("row-pipe");
            let e = d.join("pipe.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A | B\"\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["pipe.toml", "'A | B'", "splits a Markdown table cell"])),
            )
        };

    dup_label: "two [[rows]] with one label and different methods (one vanished from table.md)"
        => |b| {
            let d = b.case_dir("dup-label");
            let e = d.join("dup.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\n[[rows]]\nrow = \"A\"\n\
                 method = \"lattice-biasing\"\nbias_list = \"sequences\"\n",
            )
            .unwrap();
            // Refused by the plan (a dry run), not after decoding.
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&[
                    "dup-label/dup.toml",
                    "two points for one table cell — row 'A'",
                    "its points 1 and 2",
                ])),
            )
        };

    no_experiments: "run from a folder without experiments/: results written, exit 0, the index skipped"
        => |b| {
            let d = b.case_dir("no-experiments");
            let e = d.join("one.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 subset = \"quick\"\n[table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\n",
            )
            .unwrap();
            (
                strs(&[
                    "run",
                    e.to_str().unwrap(),
                    "--out",
                    d.join("out").to_str().unwrap(),
                    "--experiments-dir",
                    d.join("experiments").to_str().unwrap(),
                ]),
                Expect::Warns(strs(&["wrote", "the results index) not updated"])),
            )
        };

    ragged_points: "a points.csv with a row shorter than its header (polars read it, padding nulls)"
        => |b| {
            let d = b.case_dir("ragged-points");
            let e = d.join("t.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\n",
            )
            .unwrap();
            std::fs::create_dir_all(d.join("out/t")).unwrap();
            std::fs::write(d.join("out/t/points.csv"), "experiment,row,wer\nt,A,1.0\nt,B\n").unwrap();
            (
                strs(&["table", e.to_str().unwrap(), "--out", d.join("out").to_str().unwrap()]),
                Expect::Fails(strs(&[
                    "ragged-points/out/t/points.csv",
                    "line 3: 2 fields where the header has 3",
                ])),
            )
        };

    quick_settings: "an experiment whose [quick.settings] sets what no row reads"
        => |b| {
            let d = b.case_dir("quick-settings");
            let e = d.join("q.toml");
            std::fs::write(
                &e,
                "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [quick.settings]\ngboost_discount = -1.0\n[table]\nmeasures = [\"wer\"]\n\
                 [[rows]]\nrow = \"A\"\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", "--quick", e.to_str().unwrap()]),
                Expect::Fails(strs(&[
                    "q.toml [quick.settings]",
                    "no row's method reads 'gboost_discount'",
                ])),
            )
        };

    table_baseline: "an experiment whose [table] baseline names no row"
        => |b| {
            let d = b.case_dir("table-baseline");
            let e = d.join("bl.toml");
            std::fs::write(
                &e,
                "title = \"t\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nbaseline = \"Nope\"\n[[rows]]\nrow = \"A\"\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["bl.toml [table]", "baseline 'Nope' is not a row"])),
            )
        };

    resources_bogus: "an end-to-end row with resources neither full, low nor in-domain"
        => |b| {
            let d = b.case_dir("resources-bogus");
            let e = d.join("r.toml");
            std::fs::write(
                &e,
                "title = \"t\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\nmethod = \"e2e\"\n\
                 model = \"rnnt\"\nresources = \"tiny\"\n",
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["resources 'tiny' (full, low or in-domain)"])),
            )
        };

    resources_uncalibrated: "a low-resource model the dataset has no calibration for"
        => |b| {
            let d = b.case_dir("resources-uncalibrated");
            let e = d.join("r.toml");
            std::fs::write(
                &e,
                "title = \"t\"\n[settings]\ndataset = \"atco2-sim-1h\"\nlimit = 1\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\nmethod = \"e2e\"\n\
                 model = \"tdt\"\nresources = \"low\"\n",
            )
            .unwrap();
            let out = d.join("results");
            (
                strs(&["run", "--quick", "--out", out.to_str().unwrap(), e.to_str().unwrap()]),
                Expect::Fails(strs(&[
                    "dataset atco2-sim-1h has no low-resource tdt model",
                    "[atco2-sim-1h.acoustic_tdt]",
                ])),
            )
        };

    in_domain_uncalibrated: "an in-domain model the dataset has no calibration for"
        => |b| {
            let d = b.case_dir("in-domain-uncalibrated");
            let e = d.join("r.toml");
            std::fs::write(
                &e,
                "title = \"t\"\n[settings]\ndataset = \"atco2-sim-1h\"\nlimit = 1\n\
                 [table]\nmeasures = [\"wer\"]\n[[rows]]\nrow = \"A\"\nmethod = \"e2e\"\n\
                 model = \"tdt\"\nresources = \"in-domain\"\n",
            )
            .unwrap();
            let out = d.join("results");
            (
                strs(&["run", "--quick", "--out", out.to_str().unwrap(), e.to_str().unwrap()]),
                Expect::Fails(strs(&[
                    "dataset atco2-sim-1h has no in-domain tdt model",
                    "[atco2-sim-1h.acoustic_tdt]",
                ])),
            )
        };

    fidelity_no_report: "fidelity --check where no report was ever written"
        => |b| {
            let d = b.case_dir("fidelity-no-report");
            let ex = d.join("experiments");
            std::fs::create_dir_all(&ex).unwrap();
            let out = d.join("results");
            (
                strs(&[
                    "fidelity",
                    "--check",
                    "--experiments-dir",
                    ex.to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                ]),
                Expect::Fails(strs(&[
                    "fidelity-no-report/results/fidelity/effects.csv",
                    "no fidelity report",
                ])),
            )
        };

    quick_prune: "a registry whose quick_prune is not a list of counts"
        => |b| {
            let d = b.case_dir("quick-prune");
            let reg = std::fs::read_to_string(common::root().join("datasets.toml"))
                .unwrap()
                .replace("quick_prune = [3, 3]", "quick_prune = \"3\"");
            assert!(reg.contains("quick_prune = \"3\""));
            let r = d.join("datasets.toml");
            std::fs::write(&r, reg).unwrap();
            (
                strs(&[
                    "graph",
                    "build",
                    "--dataset",
                    "earnings21",
                    "--quick",
                    "--registry",
                    r.to_str().unwrap(),
                ]),
                // The entry and the key holding the bad value are named (serde's tagged
                // entries alone reported the table's header).
                Expect::Fails(strs(&[
                    "datasets.toml",
                    "[earnings21]",
                    "quick_prune",
                    "expected a sequence",
                ])),
            )
        };

    ctc_as_hybrid: "CTC log-probabilities decoded as a hybrid model's scores (used to give WER 84.4 without a word)"
        => |b| {
            let e = b.case_dir("ctc-as-hybrid").join("export");
            let out = common::ctxbench(&[
                "export",
                "--dataset",
                "atco2-sim-1h",
                "--quick",
                "--limit",
                "3",
                "--kind",
                "tlg-normal",
                "--out",
                e.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let r = e.join("datasets.toml");
            let reg = std::fs::read_to_string(&r).unwrap();
            assert!(reg.contains("model = \"ctc\""), "{reg}");
            std::fs::write(&r, reg.replace("model = \"ctc\"", "model = \"hybrid\"")).unwrap();
            (
                strs(&[
                    "decode",
                    "--registry",
                    r.to_str().unwrap(),
                    "--dataset",
                    "atco2-sim-1h-files",
                    "--methods",
                    "none",
                ]),
                Expect::Warns(strs(&["look like a CTC model's", "--model ctc"])),
            )
        };

    flag_the_method_does_not_read: "a setting flag the method does not read (it would be dropped from the point)"
        => |b| {
            (
                b.decode_registry(&["--lm-alpha", "0.3"]),
                Expect::Fails(strs(&["--lm-alpha 0.3", "method baseline has no setting"])),
            )
        };

    registry_type: "a registry value of the wrong type (used to name the table, not the key)"
        => |b| {
            (
                b.decode_registry_with("registry-type", "frame_shift_s = \"0.03\""),
                Expect::Fails(strs(&[
                    "[atco2-sim-1h-files] frame_shift_s = \"0.03\"",
                    "invalid type: string",
                ])),
            )
        };

    registry_nan_shift: "a registry's frame shift NaN (used to give WER 138.2, as the flag did)"
        => |b| {
            (
                b.decode_registry_with("registry-nan-shift", "frame_shift_s = nan"),
                Expect::Fails(strs(&[
                    "dataset atco2-sim-1h-files",
                    "frame shift NaN (frame_shift_s",
                ])),
            )
        };

    audio_context: "an audio entry's phone context that does not exist"
        => |b| {
            (
                audio_registry(b, "audio-context", "phone_context = \"cross-words\""),
                Expect::Fails(strs(&[
                    "dataset ps",
                    "phone_context 'cross-words' is neither cross-word nor word-internal",
                ])),
            )
        };

    audio_silprob: "an audio entry's silence probability above 1"
        => |b| {
            (
                audio_registry(b, "audio-silprob", "silence_prob = 1.5"),
                Expect::Fails(strs(&[
                    "dataset ps",
                    "silence_prob 1.5 must be a probability in (0, 1]",
                ])),
            )
        };

    audio_wip: "an audio entry's word insertion probability of 0"
        => |b| {
            (
                audio_registry(b, "audio-wip", "word_insertion_prob = 0"),
                Expect::Fails(strs(&[
                    "dataset ps",
                    "word_insertion_prob 0 must be a probability in (0, 1]",
                ])),
            )
        };

    audio_bestpath: "an audio entry's best-path language weight below 0"
        => |b| {
            (
                audio_registry(b, "audio-bestpath", "bestpath_language_weight = -1.0"),
                Expect::Fails(strs(&[
                    "dataset ps",
                    "bestpath_language_weight -1 must be finite and positive",
                ])),
            )
        };

    audio_ctxlex: "a context lexicon with a phone the model lacks"
        => |b| {
            let dir = b.case_dir("audio-ctxlex");
            std::fs::write(dir.join("ctx.txt"), "zork Z AO QQ K\n").unwrap();
            std::fs::write(dir.join("phrases.txt"), "zork\t5\n").unwrap();
            let line = format!("context_lexicon = \"{}\"", dir.join("ctx.txt").display());
            let mut args = audio_registry(b, "audio-ctxlex", &line);
            args.extend(strs(&[
                "--open-vocab",
                &format!("file:{}", dir.join("phrases.txt").display()),
            ]));
            (
                args,
                Expect::Fails(strs(&[
                    "dataset ps: context_lexicon",
                    "word 'zork': phone QQ is not in the model",
                ])),
            )
        };

    registry_silence: "a registry's silence column below 0"
        => |b| {
            (
                b.decode_registry_with("registry-silence", "silence_columns = [-1]"),
                Expect::Fails(strs(&[
                    "[atco2-sim-1h-files] silence_columns = [-1]",
                    "expected u32",
                ])),
            )
        };

    registry_am_scale: "a registry's acoustic scale of 1e30 (used to give WER 182 without a word)"
        => |b| {
            (
                b.decode_registry_with("registry-am-scale", "acoustic_scale = 1e30"),
                Expect::Fails(strs(&[
                    "dataset atco2-sim-1h-files",
                    "acoustic scale 1000000000000000000000000000000 (acoustic_scale",
                    "at most 100",
                ])),
            )
        };

    open_vocab_list_unknown_kind: "an open-vocabulary list of an unknown kind"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--open-vocab",
                    "bogus",
                ]),
                Expect::Fails(strs(&["open_vocab 'bogus'", "list:NAME"])),
            )
        };

    open_vocab_global_list_missing_hclg: "an open-vocabulary global list the dataset lacks, in hclg-boost's pipeline"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--method",
                    "hclg-boost",
                    "--open-vocab",
                    "list:nosuch",
                ]),
                Expect::Fails(strs(&["open_vocab 'list:nosuch'", "has no list"])),
            )
        };

    lattice_biasing_without_lattices: "lattice biasing asked of a decode without lattices"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--limit",
                    "2",
                    "--lattice",
                    "false",
                    "--methods",
                    "unigrams",
                ]),
                Expect::Fails(strs(&["bias_list", "needs lattice = true"])),
            )
        };

    keyword_list_kind_needs_a_graph: "a CTC-WS or keyword list of a kind that needs a graph"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--method",
                    "e2e+ctc-ws",
                    "--set",
                    "model=ctc",
                    "--set",
                    "ws_list=test-words",
                ]),
                Expect::Fails(strs(&["ws_list 'test-words'", "KIND+file:PATH"])),
            )
        };

    ctc_ws_with_beam_search: "CTC-WS joined with beam search"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--method",
                    "e2e+beam+ctc-ws",
                    "--set",
                    "model=ctc",
                    "--set",
                    "ws_list=sequences",
                ]),
                Expect::Fails(strs(&["e2e+beam+ctc-ws", "greedy hypothesis"])),
            )
        };

    ctc_ws_list_missing: "a CTC-WS list the dataset lacks, among distractors"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--method",
                    "e2e+ctc-ws",
                    "--set",
                    "model=ctc",
                    "--set",
                    "ws_list=list:nosuch+file:datasets/scale-lists/invented-names-1000.txt.gz",
                ]),
                Expect::Fails(strs(&["ws_list", "has no list 'nosuch'"])),
            )
        };

    open_vocab_global_list_missing: "an open-vocabulary global list the dataset lacks"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--open-vocab",
                    "list:nosuch",
                ]),
                Expect::Fails(strs(&[
                    "open_vocab 'list:nosuch'",
                    "has no list 'nosuch'",
                ])),
            )
        };

    open_file: "an open-vocabulary phrase file with a weight that is not a number"
        => |b| {
            let d = b.case_dir("open-file");
            let p = d.join("names.tsv");
            std::fs::write(&p, "acme corp\t2\nzorblax\theavy\n").unwrap();
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--open-vocab",
                    &format!("file:{}", p.display()),
                ]),
                Expect::Fails(strs(&["names.tsv:2:", "'heavy' is not a number"])),
            )
        };

    word_boost_file: "a word-boosting phrase file with a weight that is not a number (issue 68: file: lists for every method)"
        => |b| {
            let d = b.case_dir("word-boost-file");
            let p = d.join("words.tsv");
            std::fs::write(&p, "climb\n\ndescend\tlots\n").unwrap();
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--word-boost",
                    &format!("file:{}", p.display()),
                ]),
                Expect::Fails(strs(&["word_boost", "words.tsv:3:", "'lots' is not a number"])),
            )
        };

    phrase_boost_missing: "a phrase-boosting file that does not exist"
        => |b| {
            let d = b.case_dir("phrase-boost-missing");
            let p = d.join("nothing-here.txt");
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--kind",
                    "tlg-normal",
                    "--method",
                    "ctc-wfst+phrase-boosting",
                    "--set",
                    &format!("phrase_boost=file:{}", p.display()),
                ]),
                Expect::Fails(strs(&["phrase_boost", "nothing-here.txt"])),
            )
        };

    open_vocab_class_cost_unknown: "an open-vocabulary class cost that is not a known one"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--open-vocab",
                    "sequences",
                    "--set",
                    "open_vocab_class_cost=zipf",
                ]),
                Expect::Fails(strs(&["open_vocab_class_cost", "'zipf'", "none or uniform"])),
            )
        };

    open_neg: "negative open-vocabulary weights on in-vocabulary phrases, in hclg-boost's pipeline"
        => |b| {
            let d = b.case_dir("open-neg");
            let p = d.join("neg.tsv");
            std::fs::write(&p, "climb\t-3\n").unwrap();
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--limit",
                    "2",
                    "--method",
                    "hclg-boost",
                    "--open-vocab",
                    &format!("file:{}", p.display()),
                ]),
                Expect::Fails(strs(&[
                    "negative weight",
                    "decode them with the wfst family",
                ])),
            )
        };

    class_slot_cost_not_a_number: "a class slot entry cost that is not a number"
        => |_| {
            (
                strs(&[
                    "decode",
                    "--dataset",
                    "atco2-sim-1h",
                    "--quick",
                    "--open-vocab",
                    "gt",
                    "--open-vocab-entry",
                    "nan",
                ]),
                Expect::Usage(strs(&["--open-vocab-entry", "'nan' is not a number"])),
            )
        };

    sweep: "a sweep of a million points"
        => |b| {
            let d = b.case_dir("sweep");
            let e = d.join("big.toml");
            let vals: Vec<String> = (0..1000)
                .map(|i| format!("{}", 5.0 + i as f64 * 0.01))
                .collect();
            std::fs::write(
                &e,
                format!(
                    "title = \"t\"\ndescription = \"d\"\n[settings]\ndataset = \"atco2-sim-1h\"\n\
                     [sweep]\nbeam = [{v}]\nlattice_beam = [{v}]\n[table]\nmeasures = [\"wer\"]\n\
                     [[rows]]\nrow = \"A\"\n",
                    v = vals.join(", ")
                ),
            )
            .unwrap();
            (
                strs(&["run", "--dry-run", e.to_str().unwrap()]),
                Expect::Fails(strs(&["big.toml", "1000000 points", "--allow-large"])),
            )
        };
}

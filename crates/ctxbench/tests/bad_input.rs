//! Malformed and edge-case inputs, one table: each case mutates a good input (an exported quick
//! set: graph, scores, data folder; an experiment file; a reference), runs the CLI, and states
//! the outcome — refused with exit 1 and a message naming the file, utterance, line or offset,
//! or accepted with a warning that counts what was left out. Never a panic (exit 101), never
//! silence. A new input kind joins by adding rows to `cases()`.

mod common;

use common::ctxbench;
use ctx_core::scores::{write_ark, write_npy, ScoreMatrix};
use std::path::{Path, PathBuf};

/// What a case must produce.
enum Expect {
    /// Exit 1, every needle in stderr.
    Fails(Vec<String>),
    /// Exit 0, every needle in stderr.
    Warns(Vec<String>),
    /// Exit 0, none of the needles in stderr.
    Clean(Vec<String>),
    /// A usage error (clap's exit 2), every needle in stderr.
    Usage(Vec<String>),
}

/// The good inputs every case starts from.
struct Base {
    dir: PathBuf,
    graph: PathBuf,
    words: PathBuf,
    data: PathBuf,
    frame_shift: String,
    silence: String,
    /// The utterances' ids and score matrices, in the archive's order.
    scores: Vec<(String, ScoreMatrix)>,
}

impl Base {
    fn make() -> (tempfile::TempDir, Base) {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("x");
        common::export_quick(&out, 4, &[]);
        let reg = std::fs::read_to_string(out.join("datasets.toml")).unwrap();
        let field = |k: &str| {
            reg.lines()
                .find_map(|l| l.strip_prefix(&format!("{k} = ")))
                .unwrap_or_else(|| panic!("no {k} in {reg}"))
                .trim()
                .to_string()
        };
        let silence = field("silence_columns")
            .trim_matches(|c| c == '[' || c == ']')
            .replace(' ', "");
        let scores_file = out.join(field("scores").trim_matches('"'));
        let table = ctx_core::score_table::ScoreTable::open(&scores_file).unwrap();
        let scores = table
            .ids()
            .iter()
            .map(|u| (u.clone(), table.get(u).unwrap().unwrap()))
            .collect();
        let base = Base {
            dir: tmp.path().to_path_buf(),
            graph: out.join(field("graph").trim_matches('"')),
            words: out.join("graph/words.txt"),
            data: out.join("data"),
            frame_shift: field("frame_shift_s"),
            silence,
            scores,
        };
        (tmp, base)
    }

    /// A case's own folder.
    fn case_dir(&self, name: &str) -> PathBuf {
        let d = self.dir.join("cases").join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A copy of the data folder, for a case that edits it.
    fn data_copy(&self, d: &Path) -> PathBuf {
        let to = d.join("data");
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&self.data).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        to
    }

    /// `decode` of `scores` with `data`, plus `extra` flags.
    fn decode(&self, scores: &Path, data: &Path, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = [
            "decode",
            "--scores",
            scores.to_str().unwrap(),
            "--graph",
            self.graph.to_str().unwrap(),
            "--words",
            self.words.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--frame-shift",
            &self.frame_shift,
            "--silence-columns",
            &self.silence,
            "--methods",
            "none",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// `decode` of the exported set through its registry entry, plus `extra` flags.
    /// `decode_registry` on a copy of the exported registry whose line for `line`'s key
    /// (`key = value`) is replaced by `line`, written beside it (its paths are relative) as
    /// `<case>.toml`.
    fn decode_registry_with(&self, case: &str, line: &str) -> Vec<String> {
        let key = line.split(" = ").next().unwrap();
        let reg = std::fs::read_to_string(self.dir.join("x/datasets.toml")).unwrap();
        let reg: Vec<&str> = reg
            .lines()
            .map(|l| if l.starts_with(key) { line } else { l })
            .collect();
        assert!(reg.contains(&line), "no {key} in the registry");
        let r = self.dir.join("x").join(format!("{case}.toml"));
        std::fs::write(&r, reg.join("\n")).unwrap();
        let mut a = self.decode_registry(&[]);
        a[2] = r.to_str().unwrap().to_string();
        a
    }

    fn decode_registry(&self, extra: &[&str]) -> Vec<String> {
        let reg = self.dir.join("x/datasets.toml");
        let mut a = strs(&[
            "decode",
            "--registry",
            reg.to_str().unwrap(),
            "--dataset",
            "atco2-sim-1h-files",
            "--methods",
            "none",
        ]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// `decode` of the good scores with graph `g` in place of the exported one.
    fn decode_graph(&self, d: &Path, g: &Path) -> Vec<String> {
        let mut a = self.decode(&self.ark(d, |_| {}), &self.data, &[]);
        let i = a.iter().position(|x| x == "--graph").unwrap();
        a[i + 1] = g.to_str().unwrap().to_string();
        a
    }

    /// The good scores with `edit` applied, written as a binary archive in `d`.
    fn ark(&self, d: &Path, edit: impl FnOnce(&mut Vec<(String, ScoreMatrix)>)) -> PathBuf {
        let mut e = self.scores.clone();
        edit(&mut e);
        let p = d.join("scores.ark");
        write_ark(&p, e.iter().map(|(u, m)| (u.as_str(), m)), true).unwrap();
        p
    }

    fn id(&self, i: usize) -> String {
        self.scores[i].0.clone()
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The header of a binary Kaldi float matrix entry: key, `\0B`, `FM `, rows, cols.
fn ark_header(key: &str, rows: i32, cols: i32) -> Vec<u8> {
    let mut b = format!("{key} \0BFM ").into_bytes();
    for d in [rows, cols] {
        b.push(4);
        b.extend(d.to_le_bytes());
    }
    b
}

/// An `.npy` file with a raw header dictionary and body.
fn npy(path: &Path, dict: &str, body: &[u8]) {
    let mut h = dict.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h.as_bytes());
    b.extend(body);
    std::fs::write(path, b).unwrap();
}

/// A folder of `.npy` score files, the good ones, with utterance 0's replaced by `bad`.
fn npy_folder(base: &Base, d: &Path, bad: impl FnOnce(&Path)) -> PathBuf {
    let f = d.join("npy");
    std::fs::create_dir_all(&f).unwrap();
    for (u, m) in &base.scores[1..] {
        write_npy(&f.join(format!("{u}.npy")), m).unwrap();
    }
    bad(&f.join(format!("{}.npy", base.id(0))));
    f
}

type Case = (&'static str, Box<dyn Fn(&Base) -> (Vec<String>, Expect)>);

/// The exported graph with `edit` applied, written as an OpenFst file in `d`.
fn graph_with(base: &Base, d: &Path, edit: impl FnOnce(&mut ctx_graph::StdFst)) -> PathBuf {
    use ctx_graph::rustfst::prelude::*;
    let mut g = ctx_graph::StdFst::read(&base.graph).unwrap();
    edit(&mut g);
    let p = d.join("HCLG.fst");
    g.write(&p).unwrap();
    p
}

/// State `s`'s arcs with weight `w(i)` for its i-th arc.
fn reweigh(g: &mut ctx_graph::StdFst, s: u32, w: impl Fn(usize) -> f32) {
    use ctx_graph::rustfst::prelude::*;
    let trs = g.pop_trs(s).unwrap();
    for (i, mut t) in trs.into_iter().enumerate() {
        t.weight = TropicalWeight::new(w(i));
        g.add_tr(s, t).unwrap();
    }
}

fn cases() -> Vec<Case> {
    use ctx_graph::rustfst::prelude::*;
    vec![
        // --- graphs ---
        (
            "a zero-cost epsilon self-loop on the start state (used to hang)",
            Box::new(|b| {
                let d = b.case_dir("zero-eps-cycle");
                let g = graph_with(b, &d, |g| {
                    let s = g.start().unwrap();
                    g.add_tr(s, Tr::new(0, 0, TropicalWeight::new(0.0), s))
                        .unwrap();
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Fails(strs(&[
                        "zero-eps-cycle/HCLG.fst",
                        "zero or negative cost",
                        "through state 0 (0 -> 0)",
                    ])),
                )
            }),
        ),
        (
            "-inf weights on the start state's arcs (used to run seconds per utterance, WER 100)",
            Box::new(|b| {
                let d = b.case_dir("neg-inf-arcs");
                let g = graph_with(b, &d, |g| {
                    let s = g.start().unwrap();
                    reweigh(g, s, |_| f32::NEG_INFINITY);
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Fails(strs(&["HCLG.fst", "from state", "weight -inf"])),
                )
            }),
        ),
        (
            "a NaN arc weight (used to say 'no token survived', blaming the scores)",
            Box::new(|b| {
                let d = b.case_dir("nan-arc");
                let g = graph_with(b, &d, |g| {
                    let s = g.start().unwrap();
                    reweigh(g, s, |i| if i == 0 { f32::NAN } else { 0.5 });
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Fails(strs(&["HCLG.fst", "weight NaN"])),
                )
            }),
        ),
        (
            "a NaN final weight",
            Box::new(|b| {
                let d = b.case_dir("nan-final");
                let g = graph_with(b, &d, |g| {
                    let f = (0..g.num_states() as u32)
                        .find(|&s| g.is_final(s).unwrap())
                        .unwrap();
                    g.set_final(f, f32::NAN).unwrap();
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Fails(strs(&["HCLG.fst", "final weight NaN"])),
                )
            }),
        ),
        (
            "a graph with no final state decodes, and says so",
            Box::new(|b| {
                let d = b.case_dir("no-final");
                let g = graph_with(b, &d, |g| {
                    for s in 0..g.num_states() as u32 {
                        g.delete_final_weight(s).unwrap();
                    }
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Warns(strs(&["HCLG.fst", "no final state is reached"])),
                )
            }),
        ),
        (
            "an arc to a state beyond the graph names the file",
            Box::new(|b| {
                let d = b.case_dir("arc-out-of-range");
                let mut n = 0;
                let g = graph_with(b, &d, |g| {
                    let s = g.start().unwrap();
                    n = g.num_states() as u32;
                    let mut trs = g.pop_trs(s).unwrap();
                    trs[0].nextstate = n + 5;
                    for t in trs {
                        g.add_tr(s, t).unwrap();
                    }
                });
                (
                    b.decode_graph(&d, &g),
                    Expect::Fails(vec![
                        "arc-out-of-range/HCLG.fst".into(),
                        "(from state ".into(),
                        format!("goes to state {}, beyond the graph's", n + 5),
                    ]),
                )
            }),
        ),
        // --- numeric settings (issue 58: accepted silently, wrong figures) ---
        (
            "--frame-shift nan (used to give WER 138.2)",
            Box::new(|b| {
                let d = b.case_dir("frame-shift-nan");
                let mut a = b.decode(&b.ark(&d, |_| {}), &b.data, &[]);
                let i = a.iter().position(|x| x == "--frame-shift").unwrap();
                a[i + 1] = "nan".into();
                (
                    a,
                    Expect::Fails(strs(&["frame shift NaN", "--frame-shift", "above 0"])),
                )
            }),
        ),
        (
            "--open-vocab-entry -1e30 (used to give WER 273.7)",
            Box::new(|b| {
                (
                    b.decode_registry(&[
                        "--open-vocab",
                        "sequences",
                        "--open-vocab-entry",
                        "-1e30",
                    ]),
                    Expect::Fails(strs(&["--open-vocab-entry", "-1e30", "at most 1000"])),
                )
            }),
        ),
        (
            "--open-vocab-weight inf",
            Box::new(|b| {
                (
                    b.decode_registry(&["--open-vocab", "sequences", "--open-vocab-weight", "inf"]),
                    // A setting flag's value is parsed as experiment files' are: refused at
                    // the door as a usage error naming the flag.
                    Expect::Usage(strs(&["--open-vocab-weight", "'inf' is not a number"])),
                )
            }),
        ),
        (
            "--word-boost-score nan (used to report 'word 49')",
            Box::new(|b| {
                (
                    b.decode_registry(&["--word-boost", "sequences", "--word-boost-score", "nan"]),
                    Expect::Usage(strs(&["--word-boost-score", "'nan' is not a number"])),
                )
            }),
        ),
        (
            "--bias-list with --bias-utt (the first used to be ignored)",
            Box::new(|b| {
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
            }),
        ),
        (
            "score --ne-classes naming a class no entity has",
            Box::new(|b| {
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
            }),
        ),
        (
            "a duplicate utt2dur line",
            Box::new(|b| {
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
            }),
        ),
        (
            "a silence column beyond the scores' width (used to be accepted)",
            Box::new(|b| {
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
            }),
        ),
        (
            "--limit 0 names the limit",
            Box::new(|b| {
                (
                    b.decode_registry(&["--limit", "0"]),
                    Expect::Fails(strs(&["limit 0", "--limit", "at least 1"])),
                )
            }),
        ),
        (
            "an empty --open-vocab file: (used to decode unbiased, labelled open-vocab)",
            Box::new(|b| {
                let d = b.case_dir("open-vocab-empty");
                let f = d.join("phrases.txt");
                std::fs::write(&f, "\n\n").unwrap();
                let arg = format!("file:{}", f.display());
                (
                    b.decode_registry(&["--open-vocab", &arg]),
                    Expect::Fails(strs(&["phrases.txt", "holds no phrase"])),
                )
            }),
        ),
        (
            "a --bias-utt file missing an utterance (used to say nothing)",
            Box::new(|b| {
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
            }),
        ),
        // --- score matrices ---
        (
            "ark matrix header of 2^31 × 2^31 values",
            Box::new(|b| {
                let d = b.case_dir("huge-ark");
                let p = d.join("huge.ark");
                let mut bytes = std::fs::read(b.ark(&d, |e| e.truncate(1))).unwrap();
                bytes.extend(ark_header(&b.id(1), i32::MAX, i32::MAX));
                std::fs::write(&p, bytes).unwrap();
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Fails(vec![
                        "huge.ark".into(),
                        b.id(1),
                        "2147483647×2147483647".into(),
                        "more than memory holds".into(),
                    ]),
                )
            }),
        ),
        (
            "ark matrix header of 10^5 × 10^5 values, 40 bytes of them there",
            Box::new(|b| {
                let d = b.case_dir("big-ark");
                let p = d.join("big.ark");
                let mut bytes = std::fs::read(b.ark(&d, |e| e.truncate(1))).unwrap();
                bytes.extend(ark_header(&b.id(1), 100_000, 100_000));
                bytes.extend([0u8; 40]);
                std::fs::write(&p, bytes).unwrap();
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Fails(vec![
                        "big.ark".into(),
                        b.id(1),
                        "truncated".into(),
                        "holds 40 more".into(),
                    ]),
                )
            }),
        ),
        (
            ".npy whose shape overflows (2^62 × 4, Fortran order, no body)",
            Box::new(|b| {
                let d = b.case_dir("npy-overflow");
                let f = npy_folder(b, &d, |p| {
                    npy(
                        p,
                        "{'descr': '<f4', 'fortran_order': True, 'shape': (4611686018427387904, 4), }",
                        &[],
                    )
                });
                (
                    b.decode(&f, &b.data, &[]),
                    Expect::Fails(vec![format!("{}.npy", b.id(0)), "more than 2^64".into()]),
                )
            }),
        ),
        (
            ".npy whose size wraps to 160 bytes ((2^62 + 1) × 40)",
            Box::new(|b| {
                let d = b.case_dir("npy-wrap");
                let f = npy_folder(b, &d, |p| {
                    npy(
                        p,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 40), }",
                        &[0u8; 160],
                    )
                });
                (
                    b.decode(&f, &b.data, &[]),
                    Expect::Fails(vec![format!("{}.npy", b.id(0)), "the file has 160".into()]),
                )
            }),
        ),
        (
            "scores one column wider than the graph reads",
            Box::new(|b| {
                let d = b.case_dir("wide");
                let p = b.ark(&d, |e| {
                    let (u, m) = &e[2];
                    let mut data = Vec::new();
                    for t in 0..m.rows() {
                        data.push(-30.0);
                        data.extend_from_slice(m.row(t));
                    }
                    e[2] = (
                        u.clone(),
                        ScoreMatrix::new(m.rows(), m.cols() + 1, data).unwrap(),
                    );
                });
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Fails(vec![b.id(2), "41 columns".into(), "--score-columns".into()]),
                )
            }),
        ),
        (
            "scores wider than the graph, the model's width declared",
            Box::new(|b| {
                let d = b.case_dir("wide-declared");
                let p = b.ark(&d, |e| {
                    for (_, m) in e.iter_mut() {
                        let mut data = Vec::new();
                        for t in 0..m.rows() {
                            data.extend_from_slice(m.row(t));
                            data.push(-30.0);
                        }
                        *m = ScoreMatrix::new(m.rows(), m.cols() + 1, data).unwrap();
                    }
                });
                (
                    b.decode(&p, &b.data, &["--score-columns", "41"]),
                    Expect::Clean(strs(&["warning"])),
                )
            }),
        ),
        (
            "flat scores of 1e6 (path costs past f32's precision): bounded, said",
            Box::new(|b| {
                let d = b.case_dir("flat");
                let p = b.ark(&d, |e| {
                    let m = &e[0].1;
                    e[0].1 = ScoreMatrix::new(m.rows(), m.cols(), vec![1e6; m.rows() * m.cols()])
                        .unwrap();
                });
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Warns(vec![b.id(0), "shifted by its maximum".into()]),
                )
            }),
        ),
        (
            "an archive entry for an utterance not in text",
            Box::new(|b| {
                let d = b.case_dir("stray");
                let p = b.ark(&d, |e| {
                    let m = e[0].1.clone();
                    e.push(("not-an-utterance".into(), m));
                });
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Warns(strs(&["1 score entr", "not-an-utterance", "not decoded"])),
                )
            }),
        ),
        (
            "an archive entry for an utterance not in text, --strict",
            Box::new(|b| {
                let d = b.case_dir("stray-strict");
                let p = b.ark(&d, |e| {
                    let m = e[0].1.clone();
                    e.push(("not-an-utterance".into(), m));
                });
                (
                    b.decode(&p, &b.data, &["--strict"]),
                    Expect::Fails(strs(&["not-an-utterance", "strict"])),
                )
            }),
        ),
        (
            "one frame for an utterance of seconds",
            Box::new(|b| {
                let d = b.case_dir("one-frame");
                let p = b.ark(&d, |e| {
                    let m = &e[1].1;
                    e[1].1 = ScoreMatrix::new(1, m.cols(), m.row(0).to_vec()).unwrap();
                });
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Fails(vec![b.id(1), "1 frames".into(), "frame shift".into()]),
                )
            }),
        ),
        (
            "utt2dur durations × 1000",
            Box::new(|b| {
                let d = b.case_dir("dur1000");
                let data = b.data_copy(&d);
                let t = std::fs::read_to_string(data.join("utt2dur")).unwrap();
                let t: String = t
                    .lines()
                    .map(|l| {
                        let (u, s) = l.split_once(' ').unwrap();
                        format!("{u} {}\n", s.parse::<f64>().unwrap() * 1000.0)
                    })
                    .collect();
                std::fs::write(data.join("utt2dur"), t).unwrap();
                let p = b.ark(&d, |_| {});
                (
                    b.decode(&p, &data, &[]),
                    // Every utterance is wrong: the first in the set is named.
                    Expect::Fails(vec![b.id(0), "its duration is".into()]),
                )
            }),
        ),
        (
            "an scp whose offset is not a matrix's",
            Box::new(|b| {
                let d = b.case_dir("scp");
                let p = b.ark(&d, |_| {});
                let scp = d.join("s.scp");
                let idx = ctx_core::score_table::ScoreTable::open(&p).unwrap();
                let mut s = String::new();
                for (k, u) in idx.ids().iter().enumerate() {
                    // The real offsets come from an index; utterance 2's is off by 7 bytes.
                    let off = offsets(&p)[k] + if k == 2 { 7 } else { 0 };
                    s.push_str(&format!("{u} {}:{off}\n", p.display()));
                }
                std::fs::write(&scp, s).unwrap();
                (
                    b.decode(&scp, &b.data, &[]),
                    Expect::Fails(vec![b.id(2), "byte offset".into(), "scp".into()]),
                )
            }),
        ),
        (
            "an scp row range past its matrix (issue 70: Kaldi ranges were read as a file name; the negative offset is in ctx-core's reader test)",
            Box::new(|b| {
                let d = b.case_dir("scp-ranges");
                let p = b.ark(&d, |_| {});
                let scp = d.join("s.scp");
                let idx = ctx_core::score_table::ScoreTable::open(&p).unwrap();
                let mut s = String::new();
                for (k, u) in idx.ids().iter().enumerate() {
                    // Utterance 1 keeps rows 0..=999999 of its matrix: past its end.
                    let range = if k == 1 { "[0:999999]" } else { "" };
                    s.push_str(&format!("{u} {}:{}{range}\n", p.display(), offsets(&p)[k]));
                }
                std::fs::write(&scp, s).unwrap();
                (
                    b.decode(&scp, &b.data, &[]),
                    Expect::Fails(vec![b.id(1), "[0:999999".into(), "past its".into()]),
                )
            }),
        ),
        (
            "a binary entry whose header says one row more than it holds",
            Box::new(|b| {
                let d = b.case_dir("rows-off");
                let p = b.ark(&d, |_| {});
                let mut bytes = std::fs::read(&p).unwrap();
                // Utterance 1's rows field: the header starts at its key.
                let key = format!("{} \0BFM ", b.id(1));
                let at = bytes
                    .windows(key.len())
                    .position(|w| w == key.as_bytes())
                    .unwrap()
                    + key.len()
                    + 1;
                let rows = i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                bytes[at..at + 4].copy_from_slice(&(rows + 1).to_le_bytes());
                std::fs::write(&p, bytes).unwrap();
                (
                    b.decode(&p, &b.data, &[]),
                    Expect::Fails(vec![
                        "expected an utterance key".into(),
                        format!("the entry before, utterance {}", b.id(1)),
                    ]),
                )
            }),
        ),
        (
            "a missing score file: the OS error said once",
            Box::new(|b| {
                let d = b.case_dir("missing");
                (
                    b.decode(&d.join("nothing.ark"), &b.data, &[]),
                    Expect::Fails(strs(&[
                        "nothing.ark",
                        "No such file or directory (os error 2)",
                    ])),
                )
            }),
        ),
        // --- data folders and lists ---
        (
            "segments naming a recording wav.scp does not list",
            Box::new(|b| {
                let d = b.case_dir("segments");
                let data = b.data_copy(&d);
                let t = std::fs::read_to_string(data.join("utt2dur")).unwrap();
                let mut seg = String::new();
                for (k, l) in t.lines().enumerate() {
                    let (u, s) = l.split_once(' ').unwrap();
                    let rec = if k == 3 { "rec-lost" } else { "rec-a" };
                    seg.push_str(&format!("{u} {rec} 0.0 {s}\n"));
                }
                std::fs::write(data.join("segments"), seg).unwrap();
                std::fs::write(data.join("wav.scp"), "rec-a /dev/null\n").unwrap();
                let p = b.ark(&d, |_| {});
                (
                    b.decode(&p, &data, &[]),
                    Expect::Fails(vec!["segments:4".into(), b.id(3), "rec-lost".into()]),
                )
            }),
        ),
        (
            "a byte-order mark before the first id of text",
            Box::new(|b| {
                let d = b.case_dir("bom");
                let data = b.data_copy(&d);
                let t = std::fs::read_to_string(data.join("text")).unwrap();
                std::fs::write(data.join("text"), format!("\u{feff}{t}")).unwrap();
                let p = b.ark(&d, |_| {});
                (
                    b.decode(&p, &data, &[]),
                    Expect::Clean(strs(&["have no scores", "warning"])),
                )
            }),
        ),
        (
            "--bias-utt naming an utterance text does not have",
            Box::new(|b| {
                let d = b.case_dir("bias-utt");
                let l = d.join("lists.tsv");
                std::fs::write(&l, format!("{}\tcontact radar\nutt-typo\tclimb\n", b.id(0)))
                    .unwrap();
                let p = b.ark(&d, |_| {});
                (
                    b.decode(&p, &b.data, &["--bias-utt", l.to_str().unwrap()]),
                    Expect::Fails(strs(&["lists.tsv", "utt-typo", "is not in"])),
                )
            }),
        ),
        (
            "a biasing list of only out-of-vocabulary phrases",
            Box::new(|b| {
                let d = b.case_dir("oov-list");
                let l = d.join("list.txt");
                std::fs::write(&l, "zqxv wubble\nflorp\n").unwrap();
                let p = b.ark(&d, |_| {});
                let mut a = b.decode(&p, &b.data, &["--bias-list", l.to_str().unwrap()]);
                let m = a.iter().position(|x| x == "none").unwrap();
                a[m] = "none,list:global".into();
                (
                    a,
                    Expect::Warns(strs(&[
                        "phrases of its biasing lists have a word outside the vocabulary",
                        "decoded unbiased",
                    ])),
                )
            }),
        ),
        // --- experiment files ---
        (
            "an experiment with the same [[rows]] entry twice",
            Box::new(|b| {
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
            }),
        ),
        (
            "a row that sets a key the experiment's [sweep] also sweeps (issue 70: the row's value was lost)",
            Box::new(|b| {
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
            }),
        ),
        (
            "a row label holding '|' (issue 70: it broke its table.md row)",
            Box::new(|b| {
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
            }),
        ),
        (
            "two [[rows]] with one label and different methods (one vanished from table.md)",
            Box::new(|b| {
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
            }),
        ),
        (
            "run from a folder without experiments/: results written, exit 0, the index skipped",
            Box::new(|b| {
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
            }),
        ),
        (
            "an experiment whose [quick.settings] sets what no row reads",
            Box::new(|b| {
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
            }),
        ),
        (
            "an experiment whose [table] baseline names no row",
            Box::new(|b| {
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
            }),
        ),
        (
            "an end-to-end row with resources neither full nor low",
            Box::new(|b| {
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
                    Expect::Fails(strs(&["resources 'tiny' (full or low)"])),
                )
            }),
        ),
        (
            "a low-resource model the dataset has no calibration for",
            Box::new(|b| {
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
            }),
        ),
        (
            "fidelity --check where no report was ever written",
            Box::new(|b| {
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
            }),
        ),
        (
            "a registry whose quick_prune is not a list of counts",
            Box::new(|b| {
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
            }),
        ),
        (
            "CTC log-probabilities decoded as a hybrid model's scores (used to give WER 84.4 without a word)",
            Box::new(|b| {
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
            }),
        ),
        (
            "a setting flag the method does not read (it would be dropped from the point)",
            Box::new(|b| {
                (
                    b.decode_registry(&["--lm-alpha", "0.3"]),
                    Expect::Fails(strs(&["--lm-alpha 0.3", "method baseline has no setting"])),
                )
            }),
        ),
        (
            "a registry value of the wrong type (used to name the table, not the key)",
            Box::new(|b| {
                (
                    b.decode_registry_with("registry-type", "frame_shift_s = \"0.03\""),
                    Expect::Fails(strs(&[
                        "[atco2-sim-1h-files] frame_shift_s = \"0.03\"",
                        "invalid type: string",
                    ])),
                )
            }),
        ),
        (
            "a registry's frame shift NaN (used to give WER 138.2, as the flag did)",
            Box::new(|b| {
                (
                    b.decode_registry_with("registry-nan-shift", "frame_shift_s = nan"),
                    Expect::Fails(strs(&[
                        "dataset atco2-sim-1h-files",
                        "frame shift NaN (frame_shift_s",
                    ])),
                )
            }),
        ),
        (
            "an audio entry's phone context that does not exist",
            Box::new(|b| {
                (
                    audio_registry(b, "audio-context", "phone_context = \"cross-words\""),
                    Expect::Fails(strs(&[
                        "dataset ps",
                        "phone_context 'cross-words' is neither cross-word nor word-internal",
                    ])),
                )
            }),
        ),
        (
            "an audio entry's silence probability above 1",
            Box::new(|b| {
                (
                    audio_registry(b, "audio-silprob", "silence_prob = 1.5"),
                    Expect::Fails(strs(&[
                        "dataset ps",
                        "silence_prob 1.5 must be a probability in (0, 1]",
                    ])),
                )
            }),
        ),
        (
            "an audio entry's word insertion probability of 0",
            Box::new(|b| {
                (
                    audio_registry(b, "audio-wip", "word_insertion_prob = 0"),
                    Expect::Fails(strs(&[
                        "dataset ps",
                        "word_insertion_prob 0 must be a probability in (0, 1]",
                    ])),
                )
            }),
        ),
        (
            "an audio entry's best-path language weight below 0",
            Box::new(|b| {
                (
                    audio_registry(b, "audio-bestpath", "bestpath_language_weight = -1.0"),
                    Expect::Fails(strs(&[
                        "dataset ps",
                        "bestpath_language_weight -1 must be finite and positive",
                    ])),
                )
            }),
        ),
        (
            "a context lexicon with a phone the model lacks",
            Box::new(|b| {
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
            }),
        ),
        (
            "a registry's silence column below 0",
            Box::new(|b| {
                (
                    b.decode_registry_with("registry-silence", "silence_columns = [-1]"),
                    Expect::Fails(strs(&[
                        "[atco2-sim-1h-files] silence_columns = [-1]",
                        "expected u32",
                    ])),
                )
            }),
        ),
        (
            "a registry's acoustic scale of 1e30 (used to give WER 182 without a word)",
            Box::new(|b| {
                (
                    b.decode_registry_with("registry-am-scale", "acoustic_scale = 1e30"),
                    Expect::Fails(strs(&[
                        "dataset atco2-sim-1h-files",
                        "acoustic scale 1000000000000000000000000000000 (acoustic_scale",
                        "at most 100",
                    ])),
                )
            }),
        ),
        (
            "an open-vocabulary list of an unknown kind",
            Box::new(|_| {
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
            }),
        ),
        (
            "an open-vocabulary global list the dataset lacks, in hclg-boost's pipeline",
            Box::new(|_| {
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
            }),
        ),
        (
            "lattice biasing asked of a decode without lattices",
            Box::new(|_| {
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
            }),
        ),
        (
            "a CTC-WS or keyword list of a kind that needs a graph",
            Box::new(|_| {
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
            }),
        ),
        (
            "CTC-WS joined with beam search",
            Box::new(|_| {
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
            }),
        ),
        (
            "a CTC-WS list the dataset lacks, among distractors",
            Box::new(|_| {
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
            }),
        ),
        (
            "an open-vocabulary global list the dataset lacks",
            Box::new(|_| {
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
            }),
        ),
        (
            "an open-vocabulary phrase file with a weight that is not a number",
            Box::new(|b| {
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
            }),
        ),
        (
            "a word-boosting phrase file with a weight that is not a number (issue 68: file: lists for every method)",
            Box::new(|b| {
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
            }),
        ),
        (
            "a phrase-boosting file that does not exist",
            Box::new(|b| {
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
            }),
        ),
        (
            "an open-vocabulary class cost that is not a known one",
            Box::new(|_| {
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
            }),
        ),
        (
            "negative open-vocabulary weights on in-vocabulary phrases, in hclg-boost's pipeline",
            Box::new(|b| {
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
            }),
        ),
        (
            "a class slot entry cost that is not a number",
            Box::new(|_| {
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
            }),
        ),
        (
            "a sweep of a million points",
            Box::new(|b| {
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
            }),
        ),
        // --- scoring ---
        (
            "score: an .nlp reference with CR-only line ends scores like LF",
            Box::new(|b| {
                let d = b.case_dir("nlp-cr");
                let (r, h) = nlp_pair(&d, "\r");
                (
                    score_args(&r, &h),
                    Expect::Clean(strs(&["no tokens", "scored as deletions"])),
                )
            }),
        ),
        (
            "score: an .nlp reference of only its header",
            Box::new(|b| {
                let d = b.case_dir("nlp-header");
                let (r, h) = nlp_pair(&d, "\n");
                std::fs::write(r.join("d1.nlp"), format!("{NLP_HEADER}\n")).unwrap();
                (
                    score_args(&r, &h),
                    Expect::Fails(strs(&["d1.nlp", "no tokens after the header"])),
                )
            }),
        ),
        (
            "score: .nlp with wer_tags but no normalizations",
            Box::new(|b| {
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
            }),
        ),
        (
            "score: an empty reference",
            Box::new(|b| {
                let d = b.case_dir("empty-ref");
                std::fs::write(d.join("ref"), "").unwrap();
                std::fs::write(d.join("hyp"), "u1 a b\n").unwrap();
                (
                    score_args(&d.join("ref"), &d.join("hyp")),
                    Expect::Fails(strs(&["empty-ref/ref", "the reference has no words"])),
                )
            }),
        ),
        (
            "lm train --prune with more values than the LM has orders above 1 (issue 70: extras were ignored)",
            Box::new(|b| {
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
            }),
        ),
        (
            "lm arrays with a negative label id (issue 70: blamed on a vocabulary mismatch)",
            Box::new(|b| {
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
            }),
        ),
        (
            "an ARPA file with a positive log10 probability (issue 70: it was accepted)",
            Box::new(|b| {
                let d = b.case_dir("arpa-positive");
                let lm = unigram_arpa(&d, "0.5");
                let text = d.join("text.txt");
                std::fs::write(&text, "a\n").unwrap();
                (
                    ppl_args(&lm, &text),
                    Expect::Fails(strs(&["lm.arpa", ":6", "0.5 is above 0", "above 1"])),
                )
            }),
        ),
        (
            "an ARPA back-off weight on an n-gram of the highest order (issue 70 hunt: ignored)",
            Box::new(|b| {
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
            }),
        ),
        (
            "lm from-sphinx: an ARPA file given as pocketsphinx's binary LM",
            Box::new(|b| {
                let d = b.case_dir("sphinx-arpa");
                std::fs::write(d.join("lm.bin"), "\\data\\\nngram 1=1\n").unwrap();
                (
                    sphinx_args(&d.join("lm.bin"), &d.join("out.arpa")),
                    Expect::Fails(strs(&[
                        "sphinx-arpa/lm.bin",
                        "not a pocketsphinx binary trie LM",
                    ])),
                )
            }),
        ),
        (
            "lm from-sphinx: a binary LM cut short",
            Box::new(|b| {
                let d = b.case_dir("sphinx-cut");
                let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../ctx-core/tests/data/sphinx_lm/small.lm.bin.gz");
                let bytes = ctx_core::io::read_bytes(&fixture).unwrap();
                std::fs::write(d.join("lm.bin"), &bytes[..bytes.len() / 2]).unwrap();
                (
                    sphinx_args(&d.join("lm.bin"), &d.join("out.arpa")),
                    Expect::Fails(strs(&["sphinx-cut/lm.bin", "truncated", "the 2-gram back-off table"])),
                )
            }),
        ),
        (
            "score: no hypothesis id in the reference",
            Box::new(|b| {
                let d = b.case_dir("disjoint");
                std::fs::write(d.join("ref"), "u1 a b\nu2 c\n").unwrap();
                std::fs::write(d.join("hyp"), "x1 a b\nx2 c\n").unwrap();
                (
                    score_args(&d.join("ref"), &d.join("hyp")),
                    Expect::Fails(strs(&["no hypothesis utterance id", "x1"])),
                )
            }),
        ),
    ]
}

/// `lm from-sphinx --bin B --out O`.
/// `decode` of pocketsphinx-test through a registry of one audio entry `ps` with `line` added.
fn audio_registry(b: &Base, case: &str, line: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap();
    let r = b.case_dir(case).join("datasets.toml");
    let d = |p: &str| root.join(p).to_str().unwrap().to_string();
    std::fs::write(
        &r,
        format!(
            "[ps]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"{}\"\nlexicon = \"{}\"\nlm = \"{}\"\n{line}\n",
            d("datasets/sphinx-en-us"),
            d("datasets/pocketsphinx-test/data"),
            d("datasets/pocketsphinx-test/lexicon.txt"),
            d("datasets/pocketsphinx-test/lm.arpa"),
        ),
    )
    .unwrap();
    strs(&[
        "decode",
        "--registry",
        r.to_str().unwrap(),
        "--dataset",
        "ps",
        "--methods",
        "none",
    ])
}

fn sphinx_args(bin: &Path, out: &Path) -> Vec<String> {
    vec![
        "lm".into(),
        "from-sphinx".into(),
        "--bin".into(),
        bin.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ]
}

/// `lm ppl --lm LM --text TEXT`.
fn ppl_args(lm: &Path, text: &Path) -> Vec<String> {
    vec![
        "lm".into(),
        "ppl".into(),
        "--lm".into(),
        lm.display().to_string(),
        "--text".into(),
        text.display().to_string(),
    ]
}

/// `score --ref R --hyp H`.
fn score_args(r: &Path, h: &Path) -> Vec<String> {
    strs(&[
        "score",
        "--ref",
        r.to_str().unwrap(),
        "--hyp",
        h.to_str().unwrap(),
    ])
}

const NLP_HEADER: &str = "token|speaker|ts|endTs|punctuation|case|tags|wer_tags";

/// A one-document `.nlp` reference and hypothesis with line ends `eol`.
fn nlp_pair(d: &Path, eol: &str) -> (PathBuf, PathBuf) {
    let (r, h) = (d.join("ref"), d.join("hyp"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&h).unwrap();
    let rows = [
        "Good|0||||UC|[]|[]",
        "morning|0||||LC|[]|[]",
        "Acme|0||||UC|[]|['2']",
    ];
    let text = |rows: &[&str]| format!("{NLP_HEADER}{eol}{}{eol}", rows.join(eol));
    std::fs::write(r.join("d1.nlp"), text(&rows)).unwrap();
    std::fs::write(h.join("d1.nlp"), text(&rows)).unwrap();
    (r, h)
}

/// The byte offset of each entry's matrix in an archive.
fn offsets(p: &Path) -> Vec<u64> {
    let mut r = ctx_core::scores::ArkReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some((_, at, _)) = r.next_with_offset().unwrap() {
        v.push(at);
    }
    v
}

#[test]
fn every_bad_input_is_refused_or_warned_about_never_a_panic() {
    let (_tmp, base) = Base::make();
    let mut failures = Vec::new();
    for (name, case) in cases() {
        let (args, expect) = case(&base);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let t = std::time::Instant::now();
        let o = ctxbench(&a);
        let secs = t.elapsed().as_secs_f64();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let code = o.status.code();
        if std::env::var_os("CTX_BAD_INPUT_SHOW").is_some() {
            eprintln!("=== {name} (exit {code:?}, {secs:.1} s)\n{err}");
        }
        let problem = match &expect {
            _ if err.contains("panicked") || code == Some(101) => Some("panicked".to_string()),
            Expect::Fails(n) => (code != Some(1))
                .then(|| format!("exit {code:?}, expected 1"))
                .or_else(|| {
                    n.iter()
                        .find(|x| !err.contains(x.as_str()))
                        .map(|x| format!("no '{x}'"))
                }),
            Expect::Warns(n) => (code != Some(0))
                .then(|| format!("exit {code:?}, expected 0"))
                .or_else(|| {
                    n.iter()
                        .find(|x| !err.contains(x.as_str()))
                        .map(|x| format!("no '{x}'"))
                }),
            Expect::Usage(n) => (code != Some(2))
                .then(|| format!("exit {code:?}, expected 2"))
                .or_else(|| {
                    n.iter()
                        .find(|x| !err.contains(x.as_str()))
                        .map(|x| format!("no '{x}'"))
                }),
            Expect::Clean(n) => (code != Some(0))
                .then(|| format!("exit {code:?}, expected 0"))
                .or_else(|| {
                    n.iter()
                        .find(|x| err.contains(x.as_str()))
                        .map(|x| format!("'{x}' said"))
                }),
        };
        // An OS error's text is said once, not repeated through the error chain.
        let problem = problem.or_else(|| {
            (err.matches("(os error").count() > 1).then(|| "an OS error said twice".to_string())
        });
        // A case that takes long is a hang in the making (the quick set decodes in < 1 s).
        let problem = problem.or_else(|| (secs > 60.0).then(|| format!("took {secs:.0} s")));
        if let Some(p) = problem {
            failures.push(format!("{name}: {p}\n  stderr: {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `dir/lm.arpa`: a unigram ARPA over `<s>`, `a` (log10 probability `a_prob`, line 6) and `</s>`.
fn unigram_arpa(dir: &Path, a_prob: &str) -> PathBuf {
    let lm = dir.join("lm.arpa");
    let text = format!(
        "\\data\\\nngram 1=3\n\n\\1-grams:\n-99\t<s>\n{a_prob}\ta\n-0.3\t</s>\n\n\\end\\\n"
    );
    std::fs::write(&lm, text).unwrap();
    lm
}

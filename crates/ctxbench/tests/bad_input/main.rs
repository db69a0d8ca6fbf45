//! Malformed and edge-case inputs, one named test each: a case mutates a good input (an
//! exported quick set: graph, scores, data folder; an experiment file; a reference), runs the
//! CLI, and states the outcome — refused with exit 1 and a message naming the file, utterance,
//! line or offset, or accepted with a warning that counts what was left out. Never a panic (exit
//! 101), never silence. A new input kind joins by adding a case to its module's `bad_inputs!`;
//! one case runs alone with `cargo test --test bad_input NAME`.

#[path = "../common/mod.rs"]
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
    /// The good inputs, exported once per test process into a folder of its own under cargo's
    /// test scratch space (a folder left by a process that no longer runs is removed first).
    fn shared() -> &'static Base {
        static BASE: std::sync::OnceLock<Base> = std::sync::OnceLock::new();
        BASE.get_or_init(Base::make)
    }

    fn make() -> Base {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-input");
        if let Ok(rd) = std::fs::read_dir(&root) {
            for e in rd.flatten() {
                let pid = e.file_name().to_string_lossy().into_owned();
                if Path::new("/proc").exists() && !Path::new("/proc").join(&pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = root.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("x");
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
        Base {
            dir,
            graph: out.join(field("graph").trim_matches('"')),
            words: out.join("graph/words.txt"),
            data: out.join("data"),
            frame_shift: field("frame_shift_s"),
            silence,
            scores,
        }
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

/// One named test per case: `$name: "what it is" => |b| { ... (args, expectation) };`.
macro_rules! bad_inputs {
    ($($name:ident: $desc:literal => $case:expr;)*) => {
        $(
            #[doc = $desc]
            #[test]
            fn $name() {
                $crate::check($desc, $case)
            }
        )*
    };
}
// The cases, by what they break (after the macro: its scope is textual).
mod data;
mod experiments;
mod graphs;
mod scores;
mod scoring;
mod settings;

/// Runs one case's command and fails with what went wrong: a panic, the wrong exit, a needle
/// missing from (or present in) stderr, an OS error said twice, or more than 60 s.
fn check(name: &str, case: impl FnOnce(&Base) -> (Vec<String>, Expect)) {
    let (args, expect) = case(Base::shared());
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
        panic!("{name}: {p}\n  stderr: {err}");
    }
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

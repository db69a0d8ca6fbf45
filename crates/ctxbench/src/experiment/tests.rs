//! Experiment files parsed, checked and expanded: the settings order, quick settings, the
//! errors bad files get, method names and the shipped files.

use super::*;
use crate::methods::catalog;

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn err(path: &Path) -> String {
    format!("{:#}", Experiment::load(path, catalog()).unwrap_err())
}

#[test]
fn settings_resolve_in_order_and_the_grid_expands_rows_outer() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "configs/p.toml",
        "[settings]\nbeam = 11\nthreads = 1\ndiscount = -1.0\n",
    );
    let p = write(
        d.path(),
        "experiments/x.toml",
        r#"
include = ["p"]
[settings]
dataset = "a"
threads = 3
[sweep]
beam = [9, 10]
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "sequences"
threads = 4
sweep = { discount = [-2, -3] }
"#,
    );
    let e = Experiment::load(&p, catalog()).unwrap();
    let pts = e.points(&Overrides::default()).unwrap();
    let labels: Vec<String> = pts.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        [
            "base, beam=9",
            "base, beam=10",
            "lat, beam=9, discount=-2",
            "lat, beam=9, discount=-3",
            "lat, beam=10, discount=-2",
            "lat, beam=10, discount=-3",
        ]
    );
    // preset < [settings] < row; the baseline drops the lattice setting it does not read.
    assert_eq!(pts[0].settings["threads"], Value::Int(3));
    assert_eq!(pts[2].settings["threads"], Value::Int(4));
    assert!(!pts[0].settings.contains_key("discount"));
    assert_eq!(pts[0].settings["lattice_beam"], Value::Float(6.0));
    // --set wins and replaces a sweep of the same key.
    let over = Overrides::parse(&["beam=13".into(), "discount=-5".into()], catalog()).unwrap();
    let pts = e.points(&over).unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[1].settings["beam"], Value::Float(13.0));
    assert_eq!(pts[1].settings["discount"], Value::Float(-5.0));
    assert_eq!(pts[1].label(), "lat");
}

#[test]
fn quick_settings_apply_only_on_the_quick_subsets_and_only_where_read() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "experiments/q.toml",
        r#"
tour = true
[settings]
dataset = "a"
beam = 12
[quick.settings]
beam = 9
discount = -4.0
[[rows]]
row = "base"
[[rows]]
row = "lat"
method = "lattice-biasing"
bias_list = "sequences"
discount = -1.0
sweep = { lattice_beam = [5, 6] }
"#,
    );
    let e = Experiment::load(&p, catalog()).unwrap();
    assert!(e.tour && !e.reproduce);
    // The full subsets: [quick] is not read.
    let full = e.points(&Overrides::default()).unwrap();
    assert_eq!(full[0].settings["beam"], Value::Float(12.0));
    assert_eq!(full[1].settings["discount"], Value::Float(-1.0));
    // The quick subsets: over [settings] and the row's own settings; a row whose method
    // lacks the key (the baseline reads no discount) is left without it; sweeps still win.
    let quick = Overrides(vec![("subset".into(), Value::Str("quick".into()))]);
    let pts = e.points(&quick).unwrap();
    assert_eq!(pts.len(), 3);
    assert_eq!(pts[0].settings["beam"], Value::Float(9.0));
    assert!(!pts[0].settings.contains_key("discount"));
    assert_eq!(pts[1].settings["discount"], Value::Float(-4.0));
    assert_eq!(pts[2].settings["lattice_beam"], Value::Float(6.0));
    // --set wins over [quick].
    let mut over = Overrides::parse(&["beam=14".into()], catalog()).unwrap();
    over.0.extend(quick.0);
    assert_eq!(
        e.points(&over).unwrap()[0].settings["beam"],
        Value::Float(14.0)
    );
    // A key no row reads, the subset itself, or a misspelt key: refused, naming the file.
    for (i, (q, needle)) in [
        (
            "gboost_discount = -1.0",
            "no row's method reads 'gboost_discount'",
        ),
        ("subset = \"full\"", "'subset' is what [quick] depends on"),
        ("beem = 1", "unknown setting 'beem'"),
    ]
    .iter()
    .enumerate()
    {
        let p = write(
            d.path(),
            &format!("experiments/bad{i}.toml"),
            &format!("[settings]\ndataset = \"a\"\n[quick.settings]\n{q}\n[[rows]]\nrow = \"a\"\n"),
        );
        let e = err(&p);
        assert!(
            e.contains(needle) && e.contains(&format!("bad{i}.toml")),
            "{e}"
        );
    }
}

#[test]
fn bad_files_name_the_key_and_the_file() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("[settings]\nbeem = 3\n[[rows]]\nrow = \"a\"\n", "unknown setting 'beem'"),
        ("sweeps = 1\n[[rows]]\nrow = \"a\"\n", "unknown field `sweeps`"),
        ("[settings]\nbeam = \"wide\"\n[[rows]]\nrow = \"a\"\n", "'beam': expected float"),
        (
            "[settings]\ndataset = \"a\"\n[sweep]\ngboost_discount = [-1, -2]\n[[rows]]\nrow = \"a\"\n",
            "method baseline has no setting 'gboost_discount'",
        ),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"lattice-biasing\"\n",
            "'bias_list' is not set",
        ),
        ("[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boost\"\n", "unknown method 'g-boost'"),
        ("include = [\"nope\"]\n[[rows]]\nrow = \"a\"\n", "include 'nope'"),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"sequences\"\ngboost_scope = \"utterance\"\n",
            "gboost_scope 'utterance' needs gboost_mode 'on-the-fly'",
        ),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"sequences\"\ngboost_mode = \"lazy\"\n",
            "gboost_mode 'lazy' (static, on-the-fly or on-the-fly-lm)",
        ),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\nmethod = \"g-boosting\"\ngboost_list = \"rare\"\ngboost_mode = \"on-the-fly\"\ngboost_scope = \"utterance\"\n",
            "gboost_list 'rare' per utterance",
        ),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\n[[paper]]\nrow = \"b\"\nwer = 1\n",
            "row 'b' is not a row",
        ),
        (
            "[settings]\ndataset = \"a\"\n[[rows]]\nrow = \"a\"\n[[paper]]\nrow = \"a\"\nwerr = 1\n",
            "unknown measure 'werr'",
        ),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("experiments/e{i}.toml"), text);
        let e = err(&p);
        assert!(e.contains(needle), "case {i}: expected '{needle}' in: {e}");
        assert!(
            e.contains(&format!("e{i}.toml")),
            "case {i}: no file in: {e}"
        );
    }
    assert!(format!(
        "{:#}",
        Overrides::parse(&["beam".into()], catalog()).unwrap_err()
    )
    .contains("KEY=VALUE"));
    let e = Overrides::parse(&["bem=3".into()], catalog()).unwrap_err();
    assert!(format!("{e:#}").contains("unknown setting 'bem'"));
    let e = Overrides::parse(&["threads=-1".into()], catalog()).unwrap_err();
    assert!(format!("{e:#}").contains("non-negative"));
}

#[test]
fn methods_parse_in_canonical_order() {
    let m = catalog().method("lattice-biasing+g-boosting").unwrap();
    assert_eq!(m.to_string(), "g-boosting+lattice-biasing");
    assert!(m.has("lattice-biasing") && !m.has("hclg-boosting"));
    assert!(catalog().method("lattice-biasing+lattice-biasing").is_err());
    assert_eq!(
        catalog().method("baseline").unwrap().to_string(),
        "baseline"
    );
    let c = catalog().method("word-boosting+ctc-wfst").unwrap();
    assert_eq!(c.to_string(), "ctc-wfst+word-boosting");
    assert_eq!(catalog().family(&c).name(), "ctc-wfst");
    assert_eq!(catalog().family(&m).name(), "wfst");
    // A component two families share goes to the one whose marker is named, or to the
    // unmarked default family.
    let w = catalog().method("word-boosting").unwrap();
    assert_eq!(catalog().family(&w).name(), "wfst");
    assert!(catalog().reads(&w, "word_boost") && catalog().reads(&w, "blank_penalty"));
    assert!(catalog().reads(&c, "word_boost") && catalog().reads(&c, "blank_penalty"));
    assert!(!catalog().reads(&w, "phrase_boost") && !catalog().reads(&m, "word_boost"));
    let e = catalog().method("phrase-boosting").unwrap_err().to_string();
    assert!(e.contains("write ctc-wfst+phrase-boosting"), "{e}");
    let e = catalog()
        .method("ctc-wfst+lattice-biasing")
        .unwrap_err()
        .to_string();
    assert!(e.contains("two families"), "{e}");
}

#[test]
fn shipped_experiments_and_presets_load() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"));
    let files = discover(dir).unwrap();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let e = Experiment::load(&f, catalog()).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(!e.points(&Overrides::default()).unwrap().is_empty());
    }
}

#[test]
fn a_misspelt_key_is_refused_by_name_with_every_valid_key() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "experiments/typo.toml",
        "[settings]\ndataset = \"a\"\nlatice_beam = 6\n[[rows]]\nrow = \"a\"\n",
    );
    let e = err(&p);
    assert!(e.contains("unknown setting 'latice_beam'"), "{e}");
    assert!(e.contains("typo.toml"), "{e}");
    let known = e
        .split("known: ")
        .nth(1)
        .expect("the valid keys are listed");
    let listed: Vec<&str> = known
        .trim_end_matches(|c: char| c == ')' || c.is_whitespace())
        .split(", ")
        .collect();
    let names: Vec<&str> = catalog().settings().iter().map(|s| s.name).collect();
    assert_eq!(listed, names, "{e}");
}

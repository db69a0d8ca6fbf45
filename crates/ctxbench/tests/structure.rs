//! The workspace's structure, checked: no crate's modules import each other in a circle, and the
//! code version hashes every workspace crate a point can depend on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module path of a source file under `src/` (`methods/wfst.rs` → `methods::wfst`,
/// `methods/mod.rs` → `methods`).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The identifiers of a path written at `i` in `text` (`a::b::C` → [a, b, C]).
fn path_at(text: &str, i: usize) -> Vec<String> {
    let rest = &text[i..];
    let mut out = Vec::new();
    for seg in rest.split("::") {
        let id: String = seg
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let whole = id.len() == seg.len();
        if id.is_empty() {
            break;
        }
        out.push(id);
        if !whole {
            break;
        }
    }
    out
}

/// Module → the modules its code (test modules left out) names, from `crate::`, `super::`
/// and child-module paths.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(src).unwrap()))
        .collect();
    // The longest module a path starts with.
    let resolve = |segs: &[String]| -> Option<String> {
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut graph = BTreeMap::new();
    for f in &files {
        let me = module_of(f.strip_prefix(src).unwrap());
        if me == "lib" || me == "main" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap();
        // `super::` of `a::b` (file a/b.rs, or a/b/mod.rs) is `a`.
        let mut parent: Vec<String> = me.split("::").map(String::from).collect();
        parent.pop();
        let mut deps = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            if let Some(m) = resolve(&path_at(text, i + "crate::".len())) {
                deps.insert(m);
            }
        }
        for (i, _) in text.match_indices("super::") {
            let mut segs = parent.clone();
            segs.extend(path_at(text, i + "super::".len()));
            // `super::x` naming an item (not a module) is the parent module itself.
            let m = resolve(&segs).or_else(|| (!parent.is_empty()).then(|| parent.join("::")));
            if let Some(m) = m {
                deps.insert(m);
            }
        }
        // Child modules named by a bare path (`wfst::Wfst` in methods/mod.rs).
        for m in &modules {
            if let Some(child) = m.strip_prefix(&format!("{me}::")) {
                if !child.contains("::") && text.contains(&format!("{child}::")) {
                    deps.insert(m.clone());
                }
            }
        }
        deps.remove(&me);
        graph.insert(me, deps);
    }
    graph
}

/// A circle of the graph, if any (as a path that starts and ends at one module).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|x| x == d).unwrap();
                    let mut c = stack[from..].to_vec();
                    c.push(d.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(d, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_module_of_the_top_crate_imports_one_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&src);
    if let Some(c) = find_cycle(&graph) {
        panic!("import circle: {}", c.join(" -> "));
    }
    // The checker itself sees the edges it must: the runner reaches the families, a family
    // its shared helpers, and the families are listed where they are defined.
    assert!(graph["run"].contains("methods"), "{:?}", graph["run"]);
    assert!(graph["methods::wfst"].contains("methods::family"));
    assert!(graph["methods"].contains("methods::wfst"));
}

#[test]
fn the_cycle_finder_finds_a_planted_circle() {
    fn edge(g: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str) {
        g.entry(a.into()).or_default().insert(b.into());
    }
    let mut g = BTreeMap::new();
    edge(&mut g, "run", "methods");
    edge(&mut g, "methods", "experiment");
    edge(&mut g, "experiment", "results");
    assert_eq!(find_cycle(&g), None);
    edge(&mut g, "experiment", "methods");
    assert_eq!(
        find_cycle(&g).unwrap(),
        ["experiment", "methods", "experiment"]
    );
}

/// The workspace crates `ctxbench` depends on (normal and build dependencies, transitively),
/// by `cargo metadata` (`--no-deps`: the workspace's own manifests, nothing to download).
fn workspace_deps_by_cargo_metadata() -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each workspace package's workspace dependencies (those with a path).
    let deps: BTreeMap<String, Vec<String>> = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let local = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["path"].is_string())
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (p["name"].as_str().unwrap().to_string(), local)
        })
        .collect();
    let mut seen = BTreeSet::new();
    let mut todo = vec!["ctxbench".to_string()];
    while let Some(name) = todo.pop() {
        for d in &deps[&name] {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn the_code_version_hashes_every_workspace_crate_a_point_depends_on() {
    let hashed: BTreeSet<String> = ctxbench::version::HASHED_CRATES
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let expected = workspace_deps_by_cargo_metadata();
    // The crate whose omission once reused stale points, and the engine below it.
    assert!(expected.contains("hclg-boost") && expected.contains("wfst-search"));
    let missing: Vec<_> = expected.difference(&hashed).collect();
    let extra: Vec<_> = hashed.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "build.rs hashes {hashed:?}; cargo metadata says {expected:?} (missing {missing:?}, extra {extra:?})"
    );
}

#[test]
fn no_module_of_any_crate_is_in_an_import_circle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 13, "{names:?}");
    for c in &names {
        let graph = import_graph(&crates.join(c).join("src"));
        if let Some(cyc) = find_cycle(&graph) {
            panic!("{c}: import circle: {}", cyc.join(" -> "));
        }
    }
    // The search engine's rooms: the search, the lattice and the decoder share the token types
    // and the search space through leaves, and none imports another back.
    let search = import_graph(&crates.join("wfst-search/src"));
    assert!(search["search"].contains("tokens") && search["search"].contains("space"));
    assert!(search["lattice"].contains("tokens"));
    assert!(search["decoder"].contains("search") && !search["search"].contains("decoder"));
    // The checker sees their edges: a dataset reads the registry, a corpus reader builds
    // utterances, scoring aligns against references.
    let data = import_graph(&crates.join("ctx-data/src"));
    assert!(
        data["dataset"].contains("registry"),
        "{:?}",
        data["dataset"]
    );
    assert!(
        data["earnings"].contains("utterance"),
        "{:?}",
        data["earnings"]
    );
    let core = import_graph(&crates.join("ctx-core/src"));
    assert!(core["metrics::align"].contains("metrics::reference"));
}

/// Non-test source files of `dir` (recursively) with their text before `#[cfg(test)]`.
fn code_of(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let t = std::fs::read_to_string(&f).unwrap();
            let code = t.split("#[cfg(test)]").next().unwrap().to_string();
            (f, code)
        })
        .collect()
}

/// Files of the workspace still over 900 lines, each with why it has not been split yet. A file
/// leaves this list when it is split; none joins it.
const LONG_FILES: &[(&str, &str)] = &[
    (
        "crates/ctx-data/src/registry.rs",
        "every dataset kind's registry schema in one serde tree",
    ),
    (
        "crates/wfst-search/src/cuda/mod.rs",
        "the device decoder's setup; waits for the constant/per-step parameter split",
    ),
];

/// Every `.rs` file under the crates' `src/` and `tests/` folders, relative to the root.
fn workspace_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        for sub in ["src", "tests"] {
            let d = c.path().join(sub);
            if d.is_dir() {
                sources(&d, &mut files);
            }
        }
    }
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(&f).unwrap())
        })
        .collect()
}

#[test]
fn no_source_or_test_file_is_over_900_lines() {
    let files = workspace_sources();
    let long: Vec<String> = files
        .iter()
        .filter_map(|(f, text)| {
            let n = text.lines().count();
            let allowed = LONG_FILES.iter().any(|(a, _)| a == f);
            (n > 900 && !allowed).then(|| format!("{f} ({n} lines)"))
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
    let stale: Vec<&str> = LONG_FILES
        .iter()
        .filter(|(a, _)| {
            files
                .iter()
                .any(|(f, t)| f == a && t.lines().count() <= 900)
        })
        .map(|(a, _)| *a)
        .collect();
    assert!(
        stale.is_empty(),
        "no longer long, take off LONG_FILES: {stale:?}"
    );
    assert!(files.len() > 150, "the checker saw {} files", files.len());
}

/// Comments and help text explain the code, not its history: no "issue NN" in any crate's
/// `src` or in kernels/ (history is in git and docs/).
#[test]
fn no_source_narrates_issue_numbers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<(String, String)> = workspace_sources()
        .into_iter()
        .filter(|(f, _)| f.contains("/src/"))
        .collect();
    for e in std::fs::read_dir(root.join("kernels")).unwrap().flatten() {
        if let Ok(t) = std::fs::read_to_string(e.path()) {
            files.push((e.path().display().to_string(), t));
        }
    }
    let mut hits = Vec::new();
    for (f, text) in &files {
        for (i, line) in text.lines().enumerate() {
            let l = line.to_ascii_lowercase();
            let narrates = l
                .match_indices("issue ")
                .any(|(at, _)| l[at + 6..].starts_with(|c: char| c.is_ascii_digit()));
            if narrates {
                hits.push(format!("{f}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(hits.is_empty(), "{}", hits.join("\n"));
}

/// A setting is named by its block's field (`settings_block!`, `key!`), never as a string:
/// no `"key"` literal of a setting in the top crate's code, except where the same word names
/// something else (a method component, a folder, a field of another command's JSON).
#[test]
fn no_setting_is_looked_up_by_a_string_key() {
    let cat = ctxbench::methods::catalog();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // (file, word): the same word with another meaning there.
    let other_meaning: &[(&str, &str)] = &[
        ("methods/ngpu.rs", "beam"),              // the beam-search component
        ("methods/components/ctc_ws.rs", "beam"), // the components CTC-WS does not join
        ("export.rs", "graph"),                   // the export's graph folder
        ("lm.rs", "batch"),                       // `lm arrays --json` fields
        ("lm.rs", "threads"),
        ("score.rs", "targets"),      // `score --json` field
        ("decode/mod.rs", "dataset"), // `decode --json` fields
        ("decode/mod.rs", "backend"),
    ];
    let mut found = Vec::new();
    let mut keys = 0;
    for sp in cat.settings() {
        keys += 1;
        let quoted = format!("\"{}\"", sp.name);
        for (f, code) in code_of(&src) {
            let rel = f
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if other_meaning.contains(&(rel.as_str(), sp.name)) || rel.ends_with("tests.rs") {
                continue;
            }
            for (i, line) in code.lines().enumerate() {
                // Clap attributes name the command's own arguments.
                let l = line.trim_start();
                if line.contains(&quoted) && !l.starts_with("#[arg(") && !l.starts_with("//") {
                    found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(keys > 50, "the catalog lists {keys} settings");
    assert!(found.is_empty(), "settings named by string: {found:#?}");
}

/// Functions of the crates' `src` still over 120 lines, each with why it has not been split yet.
/// A function leaves this list when it is split; none joins it.
const LONG_FNS: &[(&str, &str, &str)] = &[
    (
        "crates/ctx-core/src/sphinx_lm.rs",
        "read_sphinx_bin",
        "one pass over Sphinx's binary DMP layout, section by section; to split into a reader per section",
    ),
    (
        "crates/ctx-core/src/transition.rs",
        "model",
        "Kaldi's TransitionModel reader, token by token; to split into topology and triples",
    ),
    (
        "crates/ctx-data/src/atc.rs",
        "generate",
        "the ATCO2-style traffic generator's one seeded pass (the draw order fixes every committed figure)",
    ),
    (
        "crates/ctx-data/src/kneser_ney.rs",
        "estimate",
        "modified Kneser-Ney counting, discounting and interpolation in one pass; to split by stage",
    ),
    (
        "crates/ctxbench/src/experiment/mod.rs",
        "load",
        "experiment TOML validation, one error per key; to split by section",
    ),
    (
        "crates/ctxbench/src/export.rs",
        "run_export",
        "the export command's formats (ark, npy, graphs, registry); to split per format",
    ),
    (
        "crates/ctxbench/src/lm.rs",
        "run_arrays",
        "the `lm arrays` command: load, convert, report, write; to split",
    ),
    (
        "crates/ctxbench/src/methods/hclg.rs",
        "run_group",
        "the hclg-boost family's group: setup, contexts, decode, measures; to split as the e2e family's was",
    ),
    (
        "crates/ctxbench/src/methods/load.rs",
        "simulate",
        "the load simulation's event loop",
    ),
    (
        "crates/ctxbench/src/pipeline/setup.rs",
        "load",
        "a dataset's setup: graph, acoustic model, lists",
    ),
    (
        "crates/ctxbench/src/score.rs",
        "run_score",
        "the score command: hypotheses, references, entities, every measure",
    ),
    (
        "crates/ctxbench/src/table.rs",
        "grid",
        "the table layout: sections, groups, paper blocks",
    ),
    (
        "crates/wfst-search/src/cuda/mod.rs",
        "run_rows",
        "the device decoder's per-row driver; waits for the constant/per-step parameter split",
    ),
    (
        "crates/wfst-search/src/cuda/mod.rs",
        "prepare",
        "the device decoder's setup; waits for the constant/per-step parameter split",
    ),
    (
        "crates/wfst-search/src/cuda/step.rs",
        "collect",
        "reading a step's device buffers back into tokens",
    ),
    (
        "crates/wfst-search/src/lattice.rs",
        "prune",
        "Kaldi's lattice pruning, forward and backward in one",
    ),
    (
        "crates/wfst-search/src/lattice.rs",
        "word_lattice",
        "the word lattice from the token lattice",
    ),
    (
        "crates/wfst-search/src/search/expand.rs",
        "step_row_with",
        "the token passing core; its split into named steps is open work",
    ),
    (
        "crates/wfst-search/src/search/closure.rs",
        "closure",
        "the token passing core's epsilon closure; its split into named steps is open work",
    ),
    (
        "crates/wfst-search/src/search/mod.rs",
        "finish_frame",
        "the token passing core's end of frame; its split into named steps is open work",
    ),
    (
        "crates/sphinx-am/src/mdef.rs",
        "read",
        "Sphinx's model definition reader, line by line",
    ),
    (
        "crates/ctx-graph/src/csr.rs",
        "nonpositive_eps_cycle",
        "the epsilon-cycle check (Bellman-Ford over epsilon arcs) with its error path",
    ),
    (
        "crates/ctx-graph/src/determinize.rs",
        "determinize_functional_eps_free",
        "weighted determinization's subset loop",
    ),
    (
        "crates/ctx-graph/src/grammar.rs",
        "build_grammar_fst_with",
        "G from ARPA: states, back-offs and boosting in one pass",
    ),
    (
        "crates/ctx-graph/src/lexicon_fst.rs",
        "build_lexicon_fst_impl",
        "L with disambiguation symbols and optional silence",
    ),
    (
        "crates/ngpu-lm/src/arrays.rs",
        "from_arpa",
        "ARPA to NGPU-LM's arrays: states, arcs, back-offs",
    ),
    (
        "crates/ngpu-lm/src/boost.rs",
        "boosting_tree",
        "the Aho-Corasick tree: trie, failure and output links, arrays per matching rule",
    ),
];

/// Every function of `text` (non-test code) with its length in lines: from its `fn` line to the
/// closing brace at the `fn` line's indentation (rustfmt's layout).
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let t = line.trim_start();
        let after_quals = t
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("const ")
            .trim_start_matches("async ")
            .trim_start_matches("unsafe ")
            .trim_start_matches("extern \"C\" ");
        let Some(rest) = after_quals.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The signature's end: a body opening, or a `;` (a declaration).
        let mut k = i;
        while k < lines.len() && !lines[k].contains('{') && !lines[k].trim_end().ends_with(';') {
            k += 1;
        }
        if k >= lines.len() || !lines[k].contains('{') || lines[k].trim_end().ends_with('}') {
            i = k + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let end = (k + 1..lines.len())
            .find(|&j| lines[j] == close)
            .unwrap_or(lines.len() - 1);
        out.push((name, end - i + 1));
        i += 1;
    }
    out
}

#[test]
fn the_function_finder_measures_a_function_and_skips_declarations() {
    let text = "trait T {\n    fn decl(&self);\n}\n\npub fn two(\n    a: u32,\n) -> u32 {\n    let b = a;\n    b\n}\nfn one() {}\n";
    assert_eq!(functions(text), vec![("two".to_string(), 6)]);
}

#[test]
fn no_source_function_is_over_120_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut long = Vec::new();
    let mut seen = 0;
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        for (f, code) in code_of(&c.path().join("src")) {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            for (name, n) in functions(&code) {
                seen += 1;
                if n > 120 {
                    long.push((rel.clone(), name, n));
                }
            }
        }
    }
    let new: Vec<String> = long
        .iter()
        .filter(|(f, name, _)| !LONG_FNS.iter().any(|(a, b, _)| a == f && b == name))
        .map(|(f, name, n)| format!("{f}: {name} ({n} lines)"))
        .collect();
    assert!(new.is_empty(), "split these: {new:#?}");
    let stale: Vec<String> = LONG_FNS
        .iter()
        .filter(|(a, b, _)| !long.iter().any(|(f, name, _)| f == a && name == b))
        .map(|(a, b, _)| format!("{a}: {b}"))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer long, take off LONG_FNS: {stale:?}"
    );
    assert!(seen > 1500, "the finder saw {seen} functions");
}

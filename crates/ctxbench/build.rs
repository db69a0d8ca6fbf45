//! Computes `CTXBENCH_SOURCE_HASH`: an FNV-1a hash of every source file that can change a
//! figure of `ctxbench run` — every workspace crate `ctxbench` depends on, directly or not
//! (read from the Cargo manifests, so a new crate is hashed the day it becomes a dependency),
//! the runner's own figure-deciding modules (`pipeline/`, `audio.rs`, `methods/`), the kernels and
//! Cargo.lock. Results are keyed by it, so a code change reruns the points while re-rendering
//! tables does not. `CTXBENCH_HASHED_CRATES` lists the crates hashed (a test holds it against
//! `cargo metadata`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "rs" || x == "toml" || x == "cu")
        {
            out.push(p);
        }
    }
}

fn manifest(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("build.rs: cannot read {}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("build.rs: {} is not TOML: {e}", path.display()))
}

/// The workspace crates a manifest's `[dependencies]` (and `[build-dependencies]`) name, as
/// their folders: `x.workspace = true` resolved through `[workspace.dependencies]`, or a
/// `path = ...` of its own.
fn local_deps(dir: &Path, ws: &BTreeMap<String, PathBuf>) -> Vec<(String, PathBuf)> {
    let m = manifest(&dir.join("Cargo.toml"));
    let mut out = Vec::new();
    for section in ["dependencies", "build-dependencies"] {
        let Some(deps) = m.get(section).and_then(|d| d.as_table()) else {
            continue;
        };
        for (name, spec) in deps {
            let t = spec.as_table();
            if let Some(p) = t.and_then(|t| t.get("path")).and_then(|p| p.as_str()) {
                out.push((name.clone(), dir.join(p)));
            } else if t.and_then(|t| t.get("workspace")).and_then(|w| w.as_bool()) == Some(true) {
                if let Some(p) = ws.get(name) {
                    out.push((name.clone(), p.clone()));
                }
            }
        }
    }
    out
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..").canonicalize().unwrap();
    let here = here.canonicalize().unwrap();
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.toml").display()
    );
    // [workspace.dependencies] entries with a path: the workspace's own crates.
    let ws: BTreeMap<String, PathBuf> = manifest(&root.join("Cargo.toml"))
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .map(|d| {
            d.iter()
                .filter_map(|(k, v)| {
                    let p = v.as_table()?.get("path")?.as_str()?;
                    Some((k.clone(), root.join(p)))
                })
                .collect()
        })
        .unwrap_or_default();
    // Every workspace crate reachable from ours through normal (and build) dependencies.
    let mut crates: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut todo = local_deps(&here, &ws);
    while let Some((name, dir)) = todo.pop() {
        let dir = dir.canonicalize().unwrap_or(dir);
        if dir == here || crates.contains_key(&name) {
            continue;
        }
        todo.extend(local_deps(&dir, &ws));
        crates.insert(name, dir);
    }
    let mut list = Vec::new();
    for dir in crates.values() {
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("Cargo.toml").display()
        );
        files(&dir.join("src"), &mut list);
        list.push(dir.join("Cargo.toml"));
    }
    for f in ["src/audio.rs", "Cargo.toml"] {
        list.push(here.join(f));
    }
    for dir in ["src/methods", "src/pipeline", "src/settings"] {
        println!("cargo:rerun-if-changed={}", here.join(dir).display());
        files(&here.join(dir), &mut list);
    }
    println!("cargo:rerun-if-changed={}", root.join("kernels").display());
    files(&root.join("kernels"), &mut list);
    list.push(root.join("Cargo.lock"));
    for f in &list {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    list.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &list {
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let data = std::fs::read(f).unwrap_or_default();
        for b in rel.bytes().chain(data.iter().copied()) {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=CTXBENCH_SOURCE_HASH={h:016x}");
    let names: BTreeSet<&str> = crates.keys().map(String::as_str).collect();
    println!(
        "cargo:rustc-env=CTXBENCH_HASHED_CRATES={}",
        names.into_iter().collect::<Vec<_>>().join(",")
    );
}

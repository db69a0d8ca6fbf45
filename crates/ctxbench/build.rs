//! Computes `CTXBENCH_SOURCE_HASH`: an FNV-1a hash of every source file that can change a
//! figure of `ctxbench run` (the library crates, `pipeline.rs`, `methods/`, the kernels, Cargo.lock). Results are
//! keyed by it, so a code change reruns the points while re-rendering tables does not.

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

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = here.join("../..").canonicalize().unwrap();
    let here = here.canonicalize().unwrap();
    let mut list = Vec::new();
    for c in [
        "ctx-core",
        "ctx-graph",
        "ctx-data",
        "wfst-search",
        "lattice-rescorer",
        "ctc-wfst",
        "ctx-cuda",
        "ngpu-lm",
    ] {
        let dir = root.join("crates").join(c);
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        files(&dir.join("src"), &mut list);
        list.push(dir.join("Cargo.toml"));
    }
    for f in ["src/pipeline.rs", "Cargo.toml"] {
        list.push(here.join(f));
    }
    println!(
        "cargo:rerun-if-changed={}",
        here.join("src/methods").display()
    );
    files(&here.join("src/methods"), &mut list);
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
}

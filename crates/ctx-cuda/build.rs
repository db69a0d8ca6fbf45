//! Compiles every `kernels/*.cu` twice over: embedded as source for NVRTC (at run time, on a
//! GPU), and as C++ against `kernels/shim.h` for the CPU shim device (here, now). Generates the
//! table of kernel sources and the table of shim entry points (`CTX_EXPORT(name, ...)` and `CTX_EXPORT_BLOCK(name, ...)` lines).

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../kernels");
    let root = root.canonicalize().expect("kernels/ next to crates/");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut cus: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read kernels/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    cus.sort();
    let mut sources = String::from(
        "/// Every kernel file: (file name, source).\npub const SOURCES: &[(&str, &str)] = &[\n",
    );
    let mut externs = String::from("unsafe extern \"C\" {\n");
    let mut table = String::from("/// Every kernel the shim runs: (name, entry point).\npub(crate) const SHIM_KERNELS: &[(&str, ShimFn)] = &[\n");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .define("CTX_SHIM", None)
        .include(&root)
        .flag_if_supported("-ffp-contract=off")
        .flag_if_supported("-fno-fast-math")
        .opt_level(2)
        .warnings(false);
    for cu in &cus {
        println!("cargo:rerun-if-changed={}", cu.display());
        let name = cu.file_name().unwrap().to_string_lossy().to_string();
        writeln!(
            sources,
            "    ({name:?}, include_str!({:?})),",
            cu.display().to_string()
        )
        .unwrap();
        let text = std::fs::read_to_string(cu).unwrap();
        for line in text.lines() {
            let l = line.trim();
            if let Some(rest) = l
                .strip_prefix("CTX_EXPORT(")
                .or_else(|| l.strip_prefix("CTX_EXPORT_BLOCK("))
            {
                let k = rest.split(',').next().unwrap().trim();
                writeln!(
                    externs,
                    "    fn ctx_shim_{k}(gx: u32, gy: u32, bx: u32, params: *const u8, schedule: u64, first: u64, stride: u64);"
                )
                .unwrap();
                writeln!(table, "    ({k:?}, ctx_shim_{k}),").unwrap();
            }
        }
        // Compile the .cu as C++ (cc picks the language from the flag, not the extension).
        build.file(cu);
    }
    build.flag("-x").flag("c++");
    sources.push_str("];\n");
    externs.push_str("}\n");
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("sources.rs"), sources).unwrap();
    std::fs::write(out.join("shim_table.rs"), format!("{externs}\n{table}")).unwrap();
    println!("cargo:rerun-if-changed={}", root.join("shim.h").display());
    build.compile("ctx_kernels_shim");
}

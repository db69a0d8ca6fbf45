//! Compiles every `kernels/*.cu` twice over: embedded as source for NVRTC (at run time, on a
//! GPU), and as C++ against `kernels/shim.h` for the CPU shim device (here, now). Generates the
//! table of kernel sources and the table of shim entry points (`CTX_EXPORT(name, ...)` and `CTX_EXPORT_BLOCK(name, ...)` lines).
//! Each `.cu` is compiled through a wrapper that also exports, for every parameter struct its
//! kernels take, the struct's size and each field's offset as the C++ compiler lays them out
//! (`ctx_layout_<Struct>`), so that a test can hold the Rust structs to them field by field
//! and the shim can refuse a parameter block of the wrong length.

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
    let mut table = String::from("/// Every kernel the shim runs: (name, entry point, parameter struct).\npub(crate) const SHIM_KERNELS: &[(&str, ShimFn, &str)] = &[\n");
    let mut layouts = String::from("/// Every kernel parameter struct: (name, field names in order, layout function).\npub(crate) const PARAM_LAYOUTS: &[(&str, &[&str], LayoutFn)] = &[\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
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
        let mut types: Vec<String> = Vec::new();
        for line in text.lines() {
            let l = line.trim();
            if let Some(rest) = l
                .strip_prefix("CTX_EXPORT(")
                .or_else(|| l.strip_prefix("CTX_EXPORT_BLOCK("))
            {
                let mut parts = rest.trim_end_matches(')').split(',');
                let k = parts.next().unwrap().trim();
                let ty = parts.next().expect("CTX_EXPORT(name, Params)").trim();
                writeln!(
                    externs,
                    "    fn ctx_shim_{k}(gx: u32, gy: u32, bx: u32, params: *const u8, schedule: u64, first: u64, stride: u64);"
                )
                .unwrap();
                writeln!(table, "    ({k:?}, ctx_shim_{k}, {ty:?}),").unwrap();
                if !types.iter().any(|t| t == ty) {
                    types.push(ty.to_string());
                }
            }
        }
        // The wrapper: the .cu itself, then a layout function per parameter struct.
        let mut wrapper = format!(
            "#include {:?}\n#include <cstddef>\n",
            cu.display().to_string()
        );
        for ty in &types {
            let fields = struct_fields(&text, ty);
            writeln!(
                wrapper,
                "extern \"C\" unsigned long long ctx_layout_{ty}(unsigned long long* out) {{"
            )
            .unwrap();
            for (i, f) in fields.iter().enumerate() {
                writeln!(wrapper, "  out[{i}] = offsetof({ty}, {f});").unwrap();
            }
            writeln!(wrapper, "  return sizeof({ty});\n}}").unwrap();
            writeln!(externs, "    fn ctx_layout_{ty}(out: *mut u64) -> u64;").unwrap();
            let names: Vec<String> = fields.iter().map(|f| format!("{f:?}")).collect();
            writeln!(
                layouts,
                "    ({ty:?}, &[{}], ctx_layout_{ty}),",
                names.join(", ")
            )
            .unwrap();
        }
        let stem = cu.file_stem().unwrap().to_string_lossy();
        let w = out.join(format!("{stem}_shim.cc"));
        std::fs::write(&w, wrapper).unwrap();
        // Compile the wrapper as C++ (cc picks the language from the flag, not the extension).
        build.file(w);
    }
    build.flag("-x").flag("c++");
    sources.push_str("];\n");
    externs.push_str("}\n");
    table.push_str("];\n");
    layouts.push_str("];\n");
    std::fs::write(out.join("sources.rs"), sources).unwrap();
    std::fs::write(
        out.join("shim_table.rs"),
        format!("{externs}\n{table}\n{layouts}"),
    )
    .unwrap();
    println!("cargo:rerun-if-changed={}", root.join("shim.h").display());
    build.compile("ctx_kernels_shim");
}

/// The field names of `struct NAME { ... };` in `text`, in order: the last identifier of each
/// declaration (`const u32* e_off;`, `u32 lanes;  // comment`), one per line.
fn struct_fields(text: &str, name: &str) -> Vec<String> {
    let head = format!("struct {name} {{");
    let start = text
        .find(&head)
        .unwrap_or_else(|| panic!("kernels: no `{head}` for a CTX_EXPORT parameter struct"));
    let mut fields = Vec::new();
    for line in text[start + head.len()..].lines() {
        let l = line.split("//").next().unwrap().trim();
        if l.starts_with("};") {
            return fields;
        }
        if l.is_empty() {
            continue;
        }
        let decl = l
            .strip_suffix(';')
            .unwrap_or_else(|| panic!("kernels: struct {name}: one declaration per line: {l}"));
        assert!(
            !decl.contains(','),
            "kernels: struct {name}: one field per line: {l}"
        );
        let f: String = decl
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        fields.push(f);
    }
    panic!("kernels: struct {name} has no end");
}

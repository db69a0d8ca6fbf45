//! Tells the tests whether this crate is optimised, so a timing budget is loosened only where
//! the code really runs unoptimised (opt-level 0), not under the CI profile's debug assertions.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ctx_unoptimised)");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        println!("cargo::rustc-cfg=ctx_unoptimised");
    }
    println!("cargo::rerun-if-changed=build.rs");
}

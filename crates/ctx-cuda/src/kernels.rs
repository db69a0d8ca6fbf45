//! The kernel sources of `kernels/`, embedded at build time (NVRTC compiles them at run time).

include!(concat!(env!("OUT_DIR"), "/sources.rs"));

/// The names of the kernels a source exports (its `CTX_EXPORT(name, ...)` and block-cooperative
/// `CTX_EXPORT_BLOCK(name, ...)` lines).
pub fn exported(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("CTX_EXPORT(")
                .or_else(|| l.strip_prefix("CTX_EXPORT_BLOCK("))
        })
        .filter_map(|r| r.split(',').next())
        .map(str::trim)
        .collect()
}

//! The code version results are keyed by.

/// The crate version and a hash of every source file that can change a figure (computed by
/// build.rs: every workspace crate ctxbench depends on, `pipeline/`, `settings/`, `methods/`, the kernels,
/// Cargo.lock; orchestration and rendering are left out, so re-rendering a table never reruns a
/// sweep).
pub const CODE_VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("CTXBENCH_SOURCE_HASH"));

/// The workspace crates build.rs hashed into [`CODE_VERSION`], comma-separated (derived from
/// the Cargo manifests; a test holds it against `cargo metadata`).
pub const HASHED_CRATES: &str = env!("CTXBENCH_HASHED_CRATES");

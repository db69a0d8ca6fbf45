//! Every kernel of `kernels/` compiles through NVRTC for the GPUs we measure on (Ampere and
//! Hopper), on any machine with NVRTC (the `.venv-nvrtc` that `make test` makes); and a broken
//! kernel comes back as an error carrying NVRTC's log.

use ctx_cuda::{kernels, nvrtc, CudaError};

fn nvrtc_or_skip() -> bool {
    if nvrtc::available() {
        return true;
    }
    // The Makefile's install succeeded (it leaves .venv-nvrtc/.ok): NVRTC must load, or CI's
    // only kernel compile check would pass as skipped (issue 58).
    let installed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv-nvrtc/.ok");
    assert!(
        !installed.exists(),
        "make nvrtc-venv installed NVRTC ({}) but it cannot be loaded from {:?}: the kernel \
         compile check cannot run",
        installed.display(),
        nvrtc::wheel_dirs()
    );
    eprintln!(
        "SKIPPED: NVRTC not found (system library path, $CTX_NVRTC_LIB_DIR, .venv-nvrtc: {:?}); \
         `make nvrtc-venv` installs it from PyPI",
        nvrtc::wheel_dirs()
    );
    false
}

#[test]
fn every_kernel_compiles_for_ampere_and_hopper() {
    if !nvrtc_or_skip() {
        return;
    }
    eprintln!("NVRTC {:?}", nvrtc::version().unwrap());
    assert!(!kernels::SOURCES.is_empty());
    for arch in ["sm_80", "sm_90"] {
        for (file, src) in kernels::SOURCES {
            let ptx = nvrtc::compile(file, src, arch).unwrap_or_else(|e| panic!("{e}"));
            // Every exported kernel is an entry of the PTX.
            for k in kernels::exported(src) {
                assert!(
                    ptx.contains(&format!(".entry {k}(")),
                    "{file}: kernel {k} missing from the {arch} PTX"
                );
            }
            // No FMA contraction: costs must round as on the CPU.
            assert!(
                !ptx.contains("fma.rn.f32"),
                "{file}: fused multiply-add in {arch} PTX"
            );
        }
    }
}

#[test]
fn a_compile_error_carries_the_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let bad = "extern \"C\" __global__ void k(int* p) { p[0] = undefined_name; }";
    match nvrtc::compile("bad.cu", bad, "sm_90") {
        Err(CudaError::Compile { file, log, .. }) => {
            assert_eq!(file, "bad.cu");
            assert!(log.contains("undefined_name"), "{log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

//! Backend choice and device discovery never panic: without a driver `cuda` is a typed error
//! naming what is missing and `auto` falls back to the CPU; the shim device copies, fills and
//! bounds-checks like a device.

use ctx_cuda::shim::ShimDevice;
use ctx_cuda::{open, Backend, CudaError, Device, Opened};

#[test]
fn backends_parse_and_print() {
    for (s, b) in [
        ("cpu", Backend::Cpu),
        ("cuda", Backend::Cuda),
        ("auto", Backend::Auto),
        ("shim", Backend::Shim),
    ] {
        assert_eq!(s.parse::<Backend>().unwrap(), b);
        assert_eq!(b.to_string(), s);
    }
    let e = "tpu".parse::<Backend>().unwrap_err();
    assert!(
        e.contains("tpu") && e.contains("cpu, cuda, auto or shim"),
        "{e}"
    );
}

#[test]
fn cuda_without_a_gpu_is_an_error_and_auto_falls_back() {
    if ctx_cuda::cuda::probe().is_ok() {
        eprintln!("a GPU answers here: checking that cuda and auto open it");
        assert!(matches!(open(Backend::Cuda).unwrap(), Opened::Device(d) if d.is_gpu()));
        assert!(matches!(open(Backend::Auto).unwrap(), Opened::Device(d) if d.is_gpu()));
        return;
    }
    match open(Backend::Cuda) {
        Err(e @ (CudaError::NoDriver | CudaError::NoDevice | CudaError::Device { .. })) => {
            let m = e.to_string();
            assert!(m.contains("driver") || m.contains("device"), "{m}");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("cuda opened without a GPU"),
    }
    assert!(matches!(open(Backend::Auto).unwrap(), Opened::Cpu));
    assert!(matches!(open(Backend::Cpu).unwrap(), Opened::Cpu));
    assert!(matches!(open(Backend::Shim).unwrap(), Opened::Device(d) if !d.is_gpu()));
}

#[test]
fn shim_memory_behaves_like_a_device() {
    let mut d = ShimDevice::new();
    let p = d.alloc(10, 0xff, "test buffer").unwrap();
    let mut out = [0u8; 10];
    d.download(p, 0, &mut out).unwrap();
    assert_eq!(out, [0xff; 10]);
    d.upload(p, 3, &[1, 2, 3]).unwrap();
    d.fill(p, 8, 2, 7).unwrap();
    d.download(p, 0, &mut out).unwrap();
    assert_eq!(out, [0xff, 0xff, 0xff, 1, 2, 3, 0xff, 0xff, 7, 7]);
    let e = d.upload(p, 8, &[0; 3]).unwrap_err().to_string();
    assert!(e.contains("outside the 10-byte buffer"), "{e}");
    let e = d.launch("no_such_kernel", (1, 1), 1, &[]).unwrap_err();
    assert!(matches!(e, CudaError::UnknownKernel(_)));
    d.free(p);
}

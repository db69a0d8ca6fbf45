//! The shim's block-cooperative kernels: a block's threads run as fibers that meet at every
//! `__syncthreads`. The block scan of kernels/decoder.cu (`cta_scan`, `selftest_scan`) must give
//! the exclusive prefix sums at every block size — one thread, a power of two, an odd size,
//! more threads than items — whatever order the fibers take at each barrier, and on several OS
//! threads at once; on a GPU when one answers.

use ctx_cuda::device::{as_bytes, as_bytes_mut};
use ctx_cuda::shim::ShimDevice;
use ctx_cuda::Device;

ctx_cuda::kernel_params! {
    /// `struct ScanTest` of kernels/decoder.cu.
    struct ScanTest {
        x: u64,
        n: u32,
        unused: u32,
    }
}

fn scan_on(dev: &mut dyn Device, x: &[u32], block: u32) -> Vec<u32> {
    let n = x.len();
    let mut buf = x.to_vec();
    buf.resize(2 * n + 2, 0xdead_beef);
    let p = dev.alloc(4 * buf.len(), 0, "scan test").unwrap();
    dev.upload(p, 0, as_bytes(&buf)).unwrap();
    let params = ScanTest {
        x: p.addr,
        n: n as u32,
        unused: 0,
    };
    // SAFETY: repr(C), no padding (u64 then two u32).
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&params as *const ScanTest).cast::<u8>(),
            std::mem::size_of::<ScanTest>(),
        )
    };
    dev.launch("selftest_scan", (1, 1), block, bytes).unwrap();
    dev.download(p, 0, as_bytes_mut(&mut buf)).unwrap();
    dev.free(p);
    buf[n + 1..].to_vec()
}

#[test]
fn the_block_scan_gives_prefix_sums_at_every_block_size_and_thread_order() {
    let mut devices: Vec<(String, Box<dyn Device>)> = vec![
        ("in order".into(), Box::new(ShimDevice::with_schedule(0))),
        ("reversed".into(), Box::new(ShimDevice::with_schedule(1))),
        ("shuffled".into(), Box::new(ShimDevice::with_schedule(77))),
        (
            "shuffled, 2 OS threads".into(),
            Box::new(ShimDevice::with_schedule(77).with_threads(2)),
        ),
    ];
    if let Ok(d) = ctx_cuda::cuda::CudaDevice::open() {
        devices.push(("GPU".into(), Box::new(d)));
    }
    for (label, dev) in devices.iter_mut() {
        for block in [1u32, 2, 5, 8, 32, 256] {
            for n in [0usize, 1, 3, 31, 64, 257, 5000] {
                let x: Vec<u32> = (0..n).map(|i| ((i * 7 + 3) % 11) as u32).collect();
                let mut want = Vec::with_capacity(n + 1);
                let mut run = 0u32;
                for &v in &x {
                    want.push(run);
                    run += v;
                }
                want.push(run);
                assert_eq!(
                    scan_on(dev.as_mut(), &x, block),
                    want,
                    "{label}: block {block}, {n} items"
                );
            }
        }
    }
}

/// The scan's parameters are laid out as the kernels' struct, and a launch with a parameter
/// block of another length is refused by name instead of read past its end.
#[test]
fn parameter_blocks_are_checked_against_the_kernels_structs() {
    let size = std::mem::size_of::<ScanTest>();
    ctx_cuda::shim::check_layout("ScanTest", ScanTest::FIELDS, size).unwrap();
    let err = ctx_cuda::shim::check_layout("ScanTest", &ScanTest::FIELDS[..2], size).unwrap_err();
    assert_eq!(
        err,
        "struct ScanTest: the kernels have 3 fields, Rust has 2"
    );
    let swapped = [("x", 0), ("unused", 8), ("n", 12)];
    let err = ctx_cuda::shim::check_layout("ScanTest", &swapped, size).unwrap_err();
    assert_eq!(
        err,
        "struct ScanTest, field 1: the kernels have n at 8, Rust has unused at 8"
    );
    let mut dev = ShimDevice::new();
    let err = dev
        .launch("selftest_scan", (1, 1), 1, &[0u8; 12])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel selftest_scan takes a 16-byte ScanTest but was given 12 bytes"
    );
}

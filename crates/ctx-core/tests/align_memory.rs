//! The aligner's memory grows with the band, not with n·√n (issue 58): the heap this test binary
//! holds at its peak while aligning long lines, counted by a wrapping global allocator. (One test
//! in this binary, so no other thread allocates meanwhile.)

use ctx_core::metrics::{align_words, EditOp};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Peak heap above what was live before, in MB, while `f` runs.
fn peak_mb<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = f();
    (r, (PEAK.load(Relaxed) - base) as f64 / 1e6)
}

fn words(n: usize) -> Vec<String> {
    let mut x = 1u64;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            format!("w{}", (x >> 33) % 5000)
        })
        .collect()
}

#[test]
fn long_alignments_stay_within_a_few_megabytes_of_their_input_and_output() {
    // 120k words against themselves: the full table would be 58 GB, √n checkpoints of full rows
    // took 372 MB; the steps alone are 13 MB and the reference as blocks 7 MB.
    let w = words(120_000);
    let (steps, mb) = peak_mb(|| align_words(&w, &w));
    assert_eq!(steps.len(), 120_000);
    assert!(steps.iter().all(|s| s.op == EditOp::Match));
    eprintln!("120k words, itself: peak {mb:.1} MB");
    assert!(mb < 35.0, "120k-word self-alignment peaked at {mb:.1} MB");

    // 20k words against their reversal: the band spans the whole hypothesis (20k cells a row),
    // so rows cost their full width: √n checkpoints (11 MB) and the pieces' levels below them.
    let rev: Vec<String> = w[..20_000].iter().rev().cloned().collect();
    let (steps, mb) = peak_mb(|| align_words(&w[..20_000], &rev));
    let errors = steps.iter().filter(|s| s.op != EditOp::Match).count();
    assert!(errors > 19_000, "{errors}");
    eprintln!("20k words, reversed: peak {mb:.1} MB");
    assert!(
        mb < 25.0,
        "20k-word reversed alignment peaked at {mb:.1} MB"
    );
}

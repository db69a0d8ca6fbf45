//! The process's peak resident memory, measured per group of points.

/// Peak resident memory of this process in MB (Linux `VmHWM`; `None` elsewhere).
pub fn peak_mem_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Resets the peak-resident-memory counter of this process (Linux `clear_refs` 5), so
/// [`peak_mem_mb`] measures from here; false where that is not possible.
pub fn reset_peak_mem() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

//! FNV-1a (64-bit): the one stable hash of the workspace, for seeds, cache keys and fingerprints
//! that must be equal on every machine, build and run (the standard library's hasher is not).
//!
//! ```
//! use ctx_core::hash::{fnv1a, Fnv1a};
//! assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
//! assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
//! let mut h = Fnv1a::new();
//! h.write(b"ab");
//! h.write(b"c");
//! assert_eq!(h.finish(), fnv1a(b"abc"));
//! ```

/// FNV-1a's 64-bit offset basis.
pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a's 64-bit prime.
pub const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a over bytes written in any number of pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(OFFSET)
    }
}

impl Fnv1a {
    /// The empty hash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mixes in `bytes`.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(PRIME);
        }
    }

    /// The hash of everything written.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::new();
    h.write(bytes);
    h.finish()
}

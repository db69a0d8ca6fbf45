//! CPU lattice rescoring.

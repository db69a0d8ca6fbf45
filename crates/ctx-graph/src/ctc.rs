//! CTC token topologies T (Galvez et al. 2023, Fig. 2 and 3; Laptev et al. 2022).
//!
//! Input labels read score columns (label = column + 1): column 0 is blank (label 1), column `u`
//! is unit `u` (label `u + 1`). Output labels are unit ids (pieces), blank outputs ε.
//! - **normal**: exact CTC rules. State 0 is "after blank or at start"; state `u` is "just emitted
//!   `u`". Arcs: `0 -blank:ε-> 0`, `0 -u:u-> u`, `u -u:ε-> u` (a held token), `u -blank:ε-> 0`,
//!   `u -v:v-> v` for every `v ≠ u` (a repeat of `u` needs a blank in between). All states final.
//! - **compact**: one loop state 0 with `blank:ε`; per unit `0 -u:u-> s_u`, `s_u -u:ε-> s_u`,
//!   `s_u -ε:ε-> 0`. It does not enforce the repeat rule ("a a" may read as two tokens), has about
//!   V arcs instead of V², and gave better WER in the paper.
//!
//! Unit disambiguation symbols `#k` pass as self-loops (input label `num_units + 2 + k`, output
//! the unit-table id) on every state where a token may end, to be removed after composing with LG.

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::prelude::*;

/// Which CTC topology to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtcTopology {
    /// Exact CTC rules (V² arcs).
    Normal,
    /// One loop state, repeats not collapsed (about 3·V arcs).
    Compact,
}

impl CtcTopology {
    /// Parses `normal` or `compact`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "normal" => Some(Self::Normal),
            "compact" => Some(Self::Compact),
            _ => None,
        }
    }

    /// The name used on the command line and in cache keys.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Compact => "compact",
        }
    }
}

/// Input label of the blank column.
pub const BLANK_LABEL: u32 = 1;

/// The input label of unit `u` (column `u`).
pub fn unit_label(u: u32) -> u32 {
    u + 1
}

/// The input label of disambiguation symbol `#k` in T (beyond every score column).
pub fn disambig_label(num_units: u32, k: u32) -> u32 {
    num_units + 2 + k
}

/// Builds T for units 1..=`num_units` with `num_disambig` pass-through disambiguation symbols.
pub fn build_t(topo: CtcTopology, num_units: u32, num_disambig: u32) -> Result<StdFst> {
    if num_units == 0 {
        return Err(GraphError::Invalid(
            "a CTC topology needs at least one unit".into(),
        ));
    }
    let err = |e| GraphError::fst("T", e);
    let mut fst = StdFst::new();
    let s0 = fst.add_state();
    fst.set_start(s0).map_err(err)?;
    fst.set_final(s0, TropicalWeight::one()).map_err(err)?;
    fst.add_tr(s0, Tr::new(BLANK_LABEL, 0, 0.0, s0))
        .map_err(err)?;
    let add_disambig = |fst: &mut StdFst, s: StateId| -> Result<()> {
        for k in 0..num_disambig {
            fst.add_tr(
                s,
                Tr::new(disambig_label(num_units, k), num_units + 1 + k, 0.0, s),
            )
            .map_err(err)?;
        }
        Ok(())
    };
    add_disambig(&mut fst, s0)?;
    match topo {
        CtcTopology::Normal => {
            fst.add_states(num_units as usize);
            let st = |u: u32| u as StateId; // state u for unit u
            for u in 1..=num_units {
                fst.add_tr(s0, Tr::new(unit_label(u), u, 0.0, st(u)))
                    .map_err(err)?;
            }
            for u in 1..=num_units {
                let s = st(u);
                fst.set_final(s, TropicalWeight::one()).map_err(err)?;
                fst.add_tr(s, Tr::new(unit_label(u), 0, 0.0, s))
                    .map_err(err)?;
                fst.add_tr(s, Tr::new(BLANK_LABEL, 0, 0.0, s0))
                    .map_err(err)?;
                for v in 1..=num_units {
                    if v != u {
                        fst.add_tr(s, Tr::new(unit_label(v), v, 0.0, st(v)))
                            .map_err(err)?;
                    }
                }
                add_disambig(&mut fst, s)?;
            }
        }
        CtcTopology::Compact => {
            for u in 1..=num_units {
                let s = fst.add_state();
                fst.add_tr(s0, Tr::new(unit_label(u), u, 0.0, s))
                    .map_err(err)?;
                fst.add_tr(s, Tr::new(unit_label(u), 0, 0.0, s))
                    .map_err(err)?;
                fst.add_tr(s, Tr::new(0, 0, 0.0, s0)).map_err(err)?;
            }
        }
    }
    Ok(fst)
}

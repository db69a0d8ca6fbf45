//! The biasing FST of a phrase list (003 §3.1.1, Fig. 3.2; docs/design.md §3).
//!
//! State 0 is the start, final and loop state: every vocabulary word loops on it at cost 0. The
//! phrases form a trie hanging off state 0 whose every arc carries the discount (e.g. −2.0), and
//! every trie state has an ε arc back to state 0 at cost 0, so a matched prefix keeps the discount
//! of the words it matched. A full phrase of n words thus earns n × discount, a prefix of k words
//! k × discount, and unrelated words nothing. Composing a word lattice (or HCLG) with it and
//! taking the best path is lattice biasing (or HCLG boosting by composition).

use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::algorithms::tr_compares::ILabelCompare;
use rustfst::algorithms::tr_sort;
use rustfst::prelude::*;
use std::collections::HashMap;

/// Builds the biasing FST over word labels `vocab` for phrases given as word-label sequences.
///
/// Empty phrases and labels 0 are refused; duplicate phrases share their trie path.
pub fn build_biasing_fst(vocab: &[u32], phrases: &[Vec<u32>], discount: f32) -> Result<StdFst> {
    if !discount.is_finite() {
        return Err(GraphError::Invalid(format!(
            "discount {discount} is not finite"
        )));
    }
    let err = |e| GraphError::fst("biasing FST", e);
    let mut fst = StdFst::new();
    let root = fst.add_state();
    fst.set_start(root).map_err(err)?;
    fst.set_final(root, TropicalWeight::one()).map_err(err)?;
    for &w in vocab {
        if w == 0 {
            return Err(GraphError::Invalid(
                "biasing vocabulary contains epsilon".into(),
            ));
        }
        fst.add_tr(root, Tr::new(w, w, 0.0, root)).map_err(err)?;
    }
    let mut child: HashMap<(StateId, u32), StateId> = HashMap::new();
    for (i, phrase) in phrases.iter().enumerate() {
        if phrase.is_empty() {
            return Err(GraphError::Invalid(format!("biasing phrase {i} is empty")));
        }
        let mut s = root;
        for &w in phrase {
            if w == 0 {
                return Err(GraphError::Invalid(format!(
                    "biasing phrase {i} contains epsilon"
                )));
            }
            s = match child.get(&(s, w)) {
                Some(&t) => t,
                None => {
                    let t = fst.add_state();
                    fst.add_tr(s, Tr::new(w, w, discount, t)).map_err(err)?;
                    fst.add_tr(t, Tr::new(0, 0, 0.0, root)).map_err(err)?;
                    child.insert((s, w), t);
                    t
                }
            };
        }
    }
    tr_sort(&mut fst, ILabelCompare {});
    Ok(fst)
}

//! Small-FST path utilities for tests and debugging: the output language with costs, and the
//! best output for an input string.

use crate::compile::compose_sorted;
use crate::error::{GraphError, Result};
use crate::StdFst;
use rustfst::algorithms::rm_epsilon::rm_epsilon;
use rustfst::algorithms::{project, shortest_path, ProjectType};
use rustfst::prelude::*;
use rustfst::utils::{acceptor, decode_linear_fst};
use std::collections::BTreeMap;

/// Every output string of at most `max_len` labels with its lowest cost (cycles are followed
/// as long as the string stays within `max_len`). Exponential: for small FSTs only.
pub fn output_language(fst: &StdFst, max_len: usize) -> Result<BTreeMap<Vec<u32>, f32>> {
    let mut f = fst.clone();
    project(&mut f, ProjectType::ProjectOutput);
    rm_epsilon(&mut f).map_err(|e| GraphError::fst("rm_epsilon", e))?;
    let mut out = BTreeMap::new();
    let Some(start) = f.start() else {
        return Ok(out);
    };
    let mut stack: Vec<(StateId, Vec<u32>, f32)> = vec![(start, Vec::new(), 0.0)];
    while let Some((s, labels, cost)) = stack.pop() {
        if let Some(w) = f.final_weight(s).map_err(|e| GraphError::fst("paths", e))? {
            let c = cost + w.value();
            let e = out.entry(labels.clone()).or_insert(f32::INFINITY);
            if c < *e {
                *e = c;
            }
        }
        if labels.len() == max_len {
            continue;
        }
        for tr in f.get_trs(s).map_err(|e| GraphError::fst("paths", e))?.trs() {
            let mut l = labels.clone();
            l.push(tr.olabel);
            stack.push((tr.nextstate, l, cost + tr.weight.value()));
        }
    }
    Ok(out)
}

/// The best path of the FST for the input string `input`: its output labels (ε dropped) and
/// cost, or `None` when the input is not accepted.
pub fn best_output(fst: &StdFst, input: &[u32]) -> Result<Option<(Vec<u32>, f32)>> {
    let a: StdFst = acceptor(input, TropicalWeight::one());
    let c = compose_sorted(&a, fst, "compose input")?;
    if c.start().is_none() {
        return Ok(None);
    }
    let p: StdFst = shortest_path(&c).map_err(|e| GraphError::fst("shortest path", e))?;
    if p.start().is_none() {
        return Ok(None);
    }
    let path = decode_linear_fst(&p).map_err(|e| GraphError::fst("decode path", e))?;
    let out: Vec<u32> = path.olabels.into_iter().filter(|&l| l != 0).collect();
    Ok(Some((out, *path.weight.value())))
}

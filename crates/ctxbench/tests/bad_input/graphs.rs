//! Bad inputs: graphs.

use super::*;
use ctx_graph::rustfst::prelude::*;

bad_inputs! {
    zero_eps_cycle: "a zero-cost epsilon self-loop on the start state (used to hang)"
        => |b| {
            let d = b.case_dir("zero-eps-cycle");
            let g = graph_with(b, &d, |g| {
                let s = g.start().unwrap();
                g.add_tr(s, Tr::new(0, 0, TropicalWeight::new(0.0), s))
                    .unwrap();
            });
            (
                b.decode_graph(&d, &g),
                Expect::Fails(strs(&[
                    "zero-eps-cycle/HCLG.fst",
                    "zero or negative cost",
                    "through state 0 (0 -> 0)",
                ])),
            )
        };

    neg_inf_arcs: "-inf weights on the start state's arcs (used to run seconds per utterance, WER 100)"
        => |b| {
            let d = b.case_dir("neg-inf-arcs");
            let g = graph_with(b, &d, |g| {
                let s = g.start().unwrap();
                reweigh(g, s, |_| f32::NEG_INFINITY);
            });
            (
                b.decode_graph(&d, &g),
                Expect::Fails(strs(&["HCLG.fst", "from state", "weight -inf"])),
            )
        };

    nan_arc: "a NaN arc weight (used to say 'no token survived', blaming the scores)"
        => |b| {
            let d = b.case_dir("nan-arc");
            let g = graph_with(b, &d, |g| {
                let s = g.start().unwrap();
                reweigh(g, s, |i| if i == 0 { f32::NAN } else { 0.5 });
            });
            (
                b.decode_graph(&d, &g),
                Expect::Fails(strs(&["HCLG.fst", "weight NaN"])),
            )
        };

    nan_final: "a NaN final weight"
        => |b| {
            let d = b.case_dir("nan-final");
            let g = graph_with(b, &d, |g| {
                let f = (0..g.num_states() as u32)
                    .find(|&s| g.is_final(s).unwrap())
                    .unwrap();
                g.set_final(f, f32::NAN).unwrap();
            });
            (
                b.decode_graph(&d, &g),
                Expect::Fails(strs(&["HCLG.fst", "final weight NaN"])),
            )
        };

    no_final: "a graph with no final state decodes, and says so"
        => |b| {
            let d = b.case_dir("no-final");
            let g = graph_with(b, &d, |g| {
                for s in 0..g.num_states() as u32 {
                    g.delete_final_weight(s).unwrap();
                }
            });
            (
                b.decode_graph(&d, &g),
                Expect::Warns(strs(&["HCLG.fst", "no final state is reached"])),
            )
        };

    arc_out_of_range: "an arc to a state beyond the graph names the file"
        => |b| {
            let d = b.case_dir("arc-out-of-range");
            let mut n = 0;
            let g = graph_with(b, &d, |g| {
                let s = g.start().unwrap();
                n = g.num_states() as u32;
                let mut trs = g.pop_trs(s).unwrap();
                trs[0].nextstate = n + 5;
                for t in trs {
                    g.add_tr(s, t).unwrap();
                }
            });
            (
                b.decode_graph(&d, &g),
                Expect::Fails(vec![
                    "arc-out-of-range/HCLG.fst".into(),
                    "(from state ".into(),
                    format!("goes to state {}, beyond the graph's", n + 5),
                ]),
            )
        };
}

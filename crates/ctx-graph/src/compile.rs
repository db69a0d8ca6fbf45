//! Graph compilation: HCLG for hybrid models and TLG for CTC models, with per-step statistics.
//!
//! - LG = min(det(L ∘ G)) — L and G carry disambiguation symbols, so determinization (functional,
//!   over Gallic weights) terminates; minimization encodes labels and weights and minimizes the
//!   resulting acceptor (Kaldi's `fstminimizeencoded`: no weight pushing).
//! - HCLG: Ha ∘ LG, determinized and minimized again, disambiguation inputs replaced by ε, then
//!   HMM self-loops added ([`crate::hmm::add_self_loops`]). C is the identity (monophones and
//!   word-internal triphones) or, for cross-word triphones, [`crate::phone_context`]'s C
//!   ([`compile_hclg_context`]).
//! - TLG: T ∘ LG, disambiguation inputs replaced by ε (001 writes T ∘ det(min(L ∘ G)); minimizing
//!   needs a deterministic input, so det comes first here).
//!
//! Output labels stay on the arcs where determinization placed them (usually the first arc that
//! makes a word certain), which is what arc-index boosting searches for.

use crate::ctc::{self, CtcTopology};
use crate::determinize::determinize_functional_eps_free;
use crate::error::{GraphError, Result};
use crate::gboost::{gboost_edit, GBoost};
use crate::grammar::{build_grammar_fst_with, GrammarEdit, GrammarReport, MissingWords};
use crate::hmm::{self, HmmTopology, UnitHmms};
use crate::lexicon_fst::{build_lexicon_fst_with, LangSymbols, LexiconFst, SilenceOptions};
use crate::phone_context::{add_end_marker, ContextFst};
use crate::StdFst;
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::Lexicon;
use rustfst::algorithms::determinize::{
    determinize_with_config, DeterminizeConfig, DeterminizeType,
};
use rustfst::algorithms::encode::{decode, encode, EncodeType};
use rustfst::algorithms::tr_compares::{ILabelCompare, OLabelCompare};
use rustfst::algorithms::{acceptor_minimize, compose::compose, connect, tr_sort};
use rustfst::prelude::*;
use std::time::Instant;

/// Which decoding graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphKind {
    /// H ∘ C ∘ L ∘ G over pdf-ids (hybrid models).
    Hclg,
    /// T ∘ L ∘ G over CTC tokens with the given topology.
    Tlg(CtcTopology),
}

impl GraphKind {
    /// `hclg`, `tlg-normal` or `tlg-compact`.
    pub fn name(&self) -> String {
        match self {
            GraphKind::Hclg => "hclg".into(),
            GraphKind::Tlg(t) => format!("tlg-{}", t.name()),
        }
    }

    /// Parses the names of [`GraphKind::name`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hclg" => Some(GraphKind::Hclg),
            _ => s
                .strip_prefix("tlg-")
                .and_then(CtcTopology::parse)
                .map(GraphKind::Tlg),
        }
    }
}

/// Size and time of one build step.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildStep {
    /// What ran ("L ∘ G", "det(LG)", ...).
    pub name: String,
    /// States of the result.
    pub states: usize,
    /// Arcs of the result.
    pub arcs: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// A compiled decoding graph with its symbol tables.
#[derive(Debug, Clone)]
pub struct Graph {
    /// What it is.
    pub kind: GraphKind,
    /// The graph: input label k > 0 reads score column k − 1, outputs are word ids.
    pub fst: StdFst,
    /// Word and unit tables.
    pub symbols: LangSymbols,
    /// Score columns the graph reads (pdfs, or tokens incl. blank).
    pub num_columns: u32,
    /// The steps that built it.
    pub steps: Vec<BuildStep>,
}

/// Number of arcs of an FST.
pub fn num_arcs(fst: &StdFst) -> usize {
    (0..fst.num_states() as StateId)
        .map(|s| fst.num_trs(s).unwrap_or(0))
        .sum()
}

struct Steps(Vec<BuildStep>);

impl Steps {
    fn run(&mut self, name: &str, f: impl FnOnce() -> Result<StdFst>) -> Result<StdFst> {
        let t = Instant::now();
        let fst = f()?;
        self.0.push(BuildStep {
            name: name.to_string(),
            states: fst.num_states(),
            arcs: num_arcs(&fst),
            seconds: t.elapsed().as_secs_f64(),
        });
        Ok(fst)
    }
}

/// a ∘ b with a sorted on outputs and b on inputs, trimmed.
pub fn compose_sorted(a: &StdFst, b: &StdFst, step: &str) -> Result<StdFst> {
    let mut a = a.clone();
    let mut b = b.clone();
    tr_sort(&mut a, OLabelCompare {});
    tr_sort(&mut b, ILabelCompare {});
    let mut c: StdFst = compose::<TropicalWeight, StdFst, StdFst, StdFst, _, _>(a, b)
        .map_err(|e| GraphError::fst(step, e))?;
    connect(&mut c).map_err(|e| GraphError::fst(step, e))?;
    Ok(c)
}

/// Functional determinization (the input must be functional, e.g. thanks to disambiguation).
pub fn determinize_functional(fst: &StdFst, step: &str) -> Result<StdFst> {
    let cfg = DeterminizeConfig::default().with_det_type(DeterminizeType::DeterminizeFunctional);
    determinize_with_config(fst, cfg).map_err(|e| GraphError::fst(step, e))
}

/// Minimization of a deterministic transducer as an acceptor over (ilabel, olabel, weight)
/// triples, without weight pushing (Kaldi's `fstminimizeencoded`).
pub fn minimize_encoded(fst: &mut StdFst, step: &str) -> Result<()> {
    let table =
        encode(fst, EncodeType::EncodeWeightsAndLabels).map_err(|e| GraphError::fst(step, e))?;
    acceptor_minimize(fst, true).map_err(|e| GraphError::fst(step, e))?;
    decode(fst, table).map_err(|e| GraphError::fst(step, e))?;
    Ok(())
}

/// The grid of weights in graphs with C: det's own comparison quantum, 2⁻¹⁰.
pub const WEIGHT_QUANTUM: f32 = 1.0 / 1024.0;

/// Every arc and final weight rounded to a multiple of `quantum` (a power of two, so sums of
/// rounded weights stay on the grid and exact in `f32` below 2¹³).
pub fn quantize_weights(fst: &StdFst, quantum: f32) -> Result<StdFst> {
    let err = |e| GraphError::fst("quantize weights", e);
    let q = |w: f32| {
        if w.is_finite() {
            (w / quantum).round() * quantum
        } else {
            w
        }
    };
    let mut out = fst.clone();
    for s in 0..out.num_states() as StateId {
        let mut it = out.tr_iter_mut(s).map_err(err)?;
        for i in 0..it.len() {
            let w = q(*it[i].weight.value());
            it.set_weight(i, TropicalWeight::new(w)).map_err(err)?;
        }
        if let Some(w) = out.final_weight(s).map_err(err)? {
            out.set_final(s, q(*w.value())).map_err(err)?;
        }
    }
    Ok(out)
}

/// Replaces every input label `x > 0` with `map[x − 1] + 1` (e.g. transition-ids with the
/// pdfs they read).
pub fn relabel_inputs(fst: &StdFst, map: &[u32]) -> Result<StdFst> {
    let mut out = fst.clone();
    for s in 0..out.num_states() as StateId {
        let mut it = out
            .tr_iter_mut(s)
            .map_err(|e| GraphError::fst("relabel inputs", e))?;
        for i in 0..it.len() {
            let x = it[i].ilabel;
            if x > 0 {
                let to = *map.get(x as usize - 1).ok_or_else(|| {
                    GraphError::Invalid(format!(
                        "input label {x} has no pdf ({} mapped)",
                        map.len()
                    ))
                })?;
                it.set_ilabel(i, to + 1)
                    .map_err(|e| GraphError::fst("relabel inputs", e))?;
            }
        }
    }
    Ok(out)
}

/// Replaces every input label ≥ `first` (disambiguation symbols) with ε.
pub fn remove_input_labels_from(fst: &StdFst, first: u32) -> Result<StdFst> {
    let mut out = fst.clone();
    for s in 0..out.num_states() as StateId {
        let mut it = out
            .tr_iter_mut(s)
            .map_err(|e| GraphError::fst("remove disambiguation", e))?;
        for i in 0..it.len() {
            if it[i].ilabel >= first {
                it.set_ilabel(i, 0)
                    .map_err(|e| GraphError::fst("remove disambiguation", e))?;
            }
        }
    }
    Ok(out)
}

/// LG = min(det(L ∘ G)), recording steps.
fn build_lg(l: &LexiconFst, g: &StdFst, steps: &mut Steps) -> Result<StdFst> {
    let lg = steps.run("L ∘ G", || compose_sorted(&l.fst, g, "L ∘ G"))?;
    if lg.start().is_none() {
        return Err(GraphError::Invalid(
            "L ∘ G is empty: no word of G has a pronunciation".into(),
        ));
    }
    let lg = steps.run("det(LG)", || determinize_functional(&lg, "det(LG)"))?;
    steps.run("min(LG)", || {
        let mut lg = lg;
        minimize_encoded(&mut lg, "min(LG)")?;
        Ok(lg)
    })
}

/// HCLG from L and G (both over `l.symbols`).
pub fn compile_hclg(l: &LexiconFst, g: &StdFst, topo: &HmmTopology) -> Result<Graph> {
    topo.check()?;
    let units = UnitHmms::uniform(topo, l.symbols.num_units);
    compile_hclg_with(l, g, &units, None, topo.states_per_phone > 1)
}

/// HCLG over per-unit HMMs ([`UnitHmms`]: e.g. a real model's triphones as senone
/// sequences), its units those of `l`.
pub fn compile_hclg_units(l: &LexiconFst, g: &StdFst, units: &UnitHmms) -> Result<Graph> {
    if units.pdfs.len() != l.symbols.num_units as usize {
        return Err(GraphError::Invalid(format!(
            "{} unit HMMs for {} units of the lexicon",
            units.pdfs.len(),
            l.symbols.num_units
        )));
    }
    let multi = units.pdfs.iter().any(|p| p.len() > 1);
    compile_hclg_with(l, g, units, None, multi)
}

/// HCLG with cross-word phone context: H over `c`'s context-dependent labels (`units`, unit
/// `i + 1` the HMM of `c.keys[i]`), C from [`crate::phone_context::build_context_fst`] over
/// `l`'s units. CLG = C ∘ LG (LG made subsequential for C's last unit); H ∘ CLG is then
/// determinized and minimized as Kaldi does.
pub fn compile_hclg_context(
    l: &LexiconFst,
    g: &StdFst,
    c: &ContextFst,
    units: &UnitHmms,
) -> Result<Graph> {
    if c.num_units != l.symbols.num_units || c.num_disambig != l.symbols.num_disambig {
        return Err(GraphError::Invalid(format!(
            "C over {} units and {} disambiguation symbols, L over {} and {}",
            c.num_units, c.num_disambig, l.symbols.num_units, l.symbols.num_disambig
        )));
    }
    if units.pdfs.len() != c.keys.len() {
        return Err(GraphError::Invalid(format!(
            "{} unit HMMs for {} context-dependent labels of C",
            units.pdfs.len(),
            c.keys.len()
        )));
    }
    compile_hclg_with(l, g, units, Some(c), true)
}

fn compile_hclg_with(
    l: &LexiconFst,
    g: &StdFst,
    units: &UnitHmms,
    context: Option<&ContextFst>,
    multi_state: bool,
) -> Result<Graph> {
    let mut steps = Steps(Vec::new());
    let syms = &l.symbols;
    let mut lg = build_lg(l, g, &mut steps)?;
    let mut num_disambig = syms.num_disambig;
    if let Some(c) = context {
        // C delays each unit by one, so det(H ∘ CLG) carries residual weights around cycles
        // (the silence loop); weights on a grid of 2⁻¹⁰ make every sum exact, so the
        // residuals repeat instead of drifting into ever new subsets (det's own quantum).
        lg = quantize_weights(&lg, WEIGHT_QUANTUM)?;
        let lg_end = add_end_marker(&lg, c.end_label())?;
        lg = steps.run("C ∘ LG", || compose_sorted(&c.fst, &lg_end, "C ∘ LG"))?;
        num_disambig = c.num_disambig_in();
    }
    // With C, H reads one label per (context-dependent unit, state) — Kaldi's transition-ids
    // — while determinizing: a pdf shared by two units (a triphone at two word positions) would
    // keep their paths apart for long and blow det(HCLG) up. They become pdfs afterwards.
    let distinct = context.map(|_| units.with_distinct_labels());
    let h_units = distinct.as_ref().map_or(units, |(u, _)| u);
    let h = hmm::build_h_units(h_units, num_disambig)?;
    let num_labels = h_units.num_pdfs();
    let num_pdfs = units.num_pdfs();
    let name = if context.is_some() {
        "H ∘ CLG"
    } else {
        "H ∘ LG"
    };
    let mut hclg = steps.run(name, || compose_sorted(&h, &lg, name))?;
    if multi_state {
        // With one state per phone H only relabels phones as pdfs, so H ∘ LG is as
        // deterministic and minimal as LG already is; with more states, det and min run again.
        hclg = steps.run("det(HCLG)", || match context {
            // rustfst's det splits subsets that C's delay makes merge (crate::determinize).
            Some(_) => determinize_functional_eps_free(&hclg),
            None => determinize_functional(&hclg, "det(HCLG)"),
        })?;
        hclg = steps.run("min(HCLG)", || {
            let mut f = hclg;
            minimize_encoded(&mut f, "min(HCLG)")?;
            Ok(f)
        })?;
    }
    let mut hclg = steps.run("remove disambiguation", || {
        remove_input_labels_from(&hclg, num_labels + 1)
    })?;
    if let Some((_, pdf_of)) = &distinct {
        hclg = steps.run("labels to pdfs", || relabel_inputs(&hclg, pdf_of))?;
    }
    let hclg = steps.run("add self-loops", || {
        hmm::add_self_loops_with(&hclg, num_pdfs, &units.loop_cost, &units.enter_cost)
    })?;
    Ok(Graph {
        kind: GraphKind::Hclg,
        fst: hclg,
        symbols: syms.clone(),
        num_columns: num_pdfs,
        steps: steps.0,
    })
}

/// TLG from L (words spelled in units = CTC tokens) and G.
pub fn compile_tlg(l: &LexiconFst, g: &StdFst, topo: CtcTopology) -> Result<Graph> {
    let mut steps = Steps(Vec::new());
    let syms = &l.symbols;
    let lg = build_lg(l, g, &mut steps)?;
    let t = ctc::build_t(topo, syms.num_units, syms.num_disambig)?;
    let tlg = steps.run("T ∘ LG", || compose_sorted(&t, &lg, "T ∘ LG"))?;
    let first = ctc::disambig_label(syms.num_units, 0);
    let tlg = steps.run("remove disambiguation", || {
        remove_input_labels_from(&tlg, first)
    })?;
    Ok(Graph {
        kind: GraphKind::Tlg(topo),
        fst: tlg,
        symbols: syms.clone(),
        num_columns: syms.num_units + 1,
        steps: steps.0,
    })
}

/// HCLG-boosting by composition (003 §3.1.4): a decoding graph composed with a biasing FST over
/// its output words ([`crate::biasing::build_biasing_fst`]) and trimmed. Input labels (pdfs or
/// tokens) are untouched, so the result decodes with the same scores; a path's cost gains the
/// biasing FST's best score of its word sequence.
pub fn compose_with_biasing(graph: &Graph, bias: &StdFst) -> Result<Graph> {
    let t = Instant::now();
    let fst = compose_sorted(&graph.fst, bias, "graph ∘ biasing FST")?;
    if fst.start().is_none() {
        return Err(GraphError::Invalid(
            "graph ∘ biasing FST is empty: the biasing vocabulary misses the graph's words".into(),
        ));
    }
    let mut steps = graph.steps.clone();
    steps.push(BuildStep {
        name: "∘ biasing FST".into(),
        states: fst.num_states(),
        arcs: num_arcs(&fst),
        seconds: t.elapsed().as_secs_f64(),
    });
    Ok(Graph {
        kind: graph.kind,
        fst,
        symbols: graph.symbols.clone(),
        num_columns: graph.num_columns,
        steps,
    })
}

/// Everything a graph is built from, for [`build_graph`] and the cache key.
#[derive(Debug, Clone)]
pub struct GraphInputs<'a> {
    /// Pronunciations (phones) or spellings (pieces) of the words.
    pub lexicon: &'a Lexicon,
    /// The unit inventory in id order (phones, or pieces without blank).
    pub units: &'a [String],
    /// The LM.
    pub lm: &'a ArpaLm,
    /// What to do with LM words that have no pronunciation.
    pub missing_words: MissingWords,
    /// Optional silence (hybrid graphs).
    pub silence: Option<SilenceOptions>,
    /// HMM topology (hybrid graphs).
    pub hmm: HmmTopology,
    /// G-boosting applied to G before compiling (003 §3.1.3), if any.
    pub gboost: Option<&'a GBoost>,
    /// The context slot and its entry cost: the word
    /// [`CONTEXT_SLOT`](crate::lexicon_fst::CONTEXT_SLOT) as a self-loop
    /// of G's empty-history state costing this much, spelled by its own disambiguation unit in
    /// L, so the graph holds ε:`#CONTEXT` arcs wherever a word may start after backing off.
    /// `None`: no slot (the graph is the same as without the field).
    pub context_slot: Option<f32>,
}

/// Builds L, G and the requested graph; returns it with G's report.
pub fn build_graph(kind: GraphKind, inputs: &GraphInputs<'_>) -> Result<(Graph, GrammarReport)> {
    let t = Instant::now();
    let l = build_lexicon_fst_with(
        inputs.lexicon,
        inputs.units,
        inputs.silence.as_ref(),
        inputs.context_slot.is_some(),
    )?;
    let l_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (edit, boosted) = match inputs.gboost {
        Some(b) => {
            let (edit, r) = gboost_edit(inputs.lm, &l.symbols.words, b)?;
            (edit, Some(r))
        }
        None => (GrammarEdit::default(), None),
    };
    let (mut g, mut report) = build_grammar_fst_with(
        inputs.lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        inputs.missing_words,
        &edit,
    )?;
    if let (Some(cost), Some(w)) = (inputs.context_slot, l.symbols.context_slot()) {
        crate::grammar::add_context_slot(&mut g, w, cost)?;
    }
    report.gboost = boosted;
    let g_secs = t.elapsed().as_secs_f64();
    let mut graph = match kind {
        GraphKind::Hclg => compile_hclg(&l, &g, &inputs.hmm)?,
        GraphKind::Tlg(topo) => compile_tlg(&l, &g, topo)?,
    };
    graph.steps.insert(
        0,
        BuildStep {
            name: "G".into(),
            states: g.num_states(),
            arcs: num_arcs(&g),
            seconds: g_secs,
        },
    );
    graph.steps.insert(
        0,
        BuildStep {
            name: "L".into(),
            states: l.fst.num_states(),
            arcs: num_arcs(&l.fst),
            seconds: l_secs,
        },
    );
    Ok((graph, report))
}

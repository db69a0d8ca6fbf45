//! Graphs from outside the project: OpenFst binary files (vector or const, tropical "standard"
//! arcs) as Kaldi, k2/icefall, riva, pynini or kaldifst write them, and the export of our own
//! graphs in the same form.
//!
//! An external graph comes with its `words.txt`; every output label must be in it (a graph built
//! against another word table decodes to wrong words silently otherwise). Input labels are mapped
//! to score columns by a label map (`map[label] = column + 1`, e.g. a Kaldi transition-id to its
//! pdf-id + 1, [`ctx_core::transition`]); without one, label `k` reads column `k − 1`, the
//! convention of every graph this crate builds (docs/design.md §4).

use crate::compile::{num_arcs, Graph, GraphKind};
use crate::error::{GraphError, Result};
use crate::lexicon_fst::LangSymbols;
use crate::StdFst;
use ctx_core::symbols::SymbolTable;
use rustfst::fst_impls::ConstFst;
use rustfst::prelude::*;
use std::path::Path;

/// OpenFst's binary magic number.
const FST_MAGIC: i32 = 0x7eb2_fdd6;

fn header_string(b: &[u8], at: usize) -> Option<(String, usize)> {
    let n = i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
    if !(0..=256).contains(&n) {
        return None;
    }
    let end = at + 4 + n as usize;
    let s = std::str::from_utf8(b.get(at + 4..end)?).ok()?;
    Some((s.to_string(), end))
}

/// Reads an OpenFst binary FST of type `vector` or `const` with `standard` (tropical) arcs.
/// Any other type, arc type or a file that is not an FST is an error naming the file.
pub fn read_fst(path: &Path) -> Result<StdFst> {
    let b = std::fs::read(path).map_err(|e| GraphError::Io {
        path: path.to_path_buf(),
        err: e,
    })?;
    let bad = |m: String| GraphError::Invalid(format!("{}: {m}", path.display()));
    if b.len() < 8 || i32::from_le_bytes(b[0..4].try_into().expect("4 bytes")) != FST_MAGIC {
        return Err(bad(
            "not an OpenFst binary FST (no magic number; a text FST must go through fstcompile)"
                .into(),
        ));
    }
    let (fst_type, at) = header_string(&b, 4).ok_or_else(|| bad("corrupt FST header".into()))?;
    let (arc_type, _) = header_string(&b, at).ok_or_else(|| bad("corrupt FST header".into()))?;
    if arc_type != "standard" {
        return Err(bad(format!(
            "arc type '{arc_type}': ctxbench reads tropical 'standard' arcs (fstmap --map_type=to_std)"
        )));
    }
    let load = |e: String| bad(format!("cannot read the {fst_type} FST: {e}"));
    match fst_type.as_str() {
        "vector" => StdFst::load(&b).map_err(|e| load(format!("{e:#}"))),
        "const" => {
            let c: ConstFst<TropicalWeight> =
                ConstFst::load(&b).map_err(|e| load(format!("{e:#}")))?;
            Ok(rustfst::algorithms::fst_convert_from_ref(&c))
        }
        t => Err(bad(format!(
            "FST type '{t}': ctxbench reads 'vector' and 'const' (fstconvert --fst_type=vector)"
        ))),
    }
}

/// Symbol bookkeeping for a graph that came with only its word table: `#0` (when present) marks
/// where the real words end, as in Kaldi's and k2's `words.txt`.
pub fn lang_symbols_from_words(words: SymbolTable) -> LangSymbols {
    let word_disambig = words
        .id("#0")
        .unwrap_or_else(|| words.max_id().map_or(1, |m| m + 1));
    LangSymbols {
        words,
        units: SymbolTable::with_epsilon(),
        num_units: 0,
        num_disambig: 0,
        word_disambig,
    }
}

/// Loads an external decoding graph: the FST, its word table, and an optional input-label map
/// (`map[label] = column + 1`). Checks that every output label is a word of `words` and every
/// input label is covered by the map; the result's input labels read columns as usual.
pub fn load_graph(
    fst_path: &Path,
    words_path: &Path,
    label_map: Option<&[u32]>,
    kind: GraphKind,
) -> Result<Graph> {
    let mut fst = read_fst(fst_path)?;
    let words = SymbolTable::read(words_path)?;
    let mut max_col = 0u32;
    for s in 0..fst.num_states() as StateId {
        let mut trs = fst
            .tr_iter_mut(s)
            .map_err(|e| GraphError::fst("relabel", e))?;
        for i in 0..trs.len() {
            let tr = trs.get(i).expect("index below len");
            let (il, ol) = (tr.ilabel, tr.olabel);
            if ol != 0 && words.symbol(ol).is_none() {
                return Err(GraphError::Invalid(format!(
                    "{}: state {s} has an arc with output label {ol}, which is not in {}",
                    fst_path.display(),
                    words_path.display()
                )));
            }
            let mapped = match label_map {
                None => il,
                Some(_) if il == 0 => 0,
                Some(m) => match m.get(il as usize) {
                    Some(&c) if c != u32::MAX => c + 1,
                    _ => {
                        return Err(GraphError::Invalid(format!(
                            "{}: state {s} has input label {il}, beyond the label map's {} (a transition-id the model does not have?)",
                            fst_path.display(),
                            m.len().saturating_sub(1)
                        )))
                    }
                },
            };
            if mapped != il {
                trs.set_ilabel(i, mapped)
                    .map_err(|e| GraphError::fst("relabel", e))?;
            }
            max_col = max_col.max(mapped);
        }
    }
    if fst.start().is_none() {
        return Err(GraphError::Invalid(format!(
            "{}: the graph has no start state",
            fst_path.display()
        )));
    }
    Ok(Graph {
        kind,
        fst,
        symbols: lang_symbols_from_words(words),
        num_columns: max_col,
        steps: Vec::new(),
    })
}

/// The ilabel convention written next to an exported graph.
fn export_readme(graph: &Graph, fst_name: &str) -> String {
    let inputs = match graph.kind {
        GraphKind::Hclg => format!(
            "pdf-ids: input label k > 0 reads pdf k − 1 (no transition-ids; {} pdfs).\n  \
             Decode it with pdf log-likelihoods whose column j is pdf j.",
            graph.num_columns
        ),
        GraphKind::Tlg(t) => format!(
            "CTC tokens ({} topology): input label k > 0 reads column k − 1 of the log-probs;\n\
             label 1 (column 0) is the blank `<blk>`; `tokens.txt` names every label.",
            t.name()
        ),
    };
    format!(
        "# {kind} exported by ctxbench\n\n\
         - `{fst_name}`: OpenFst binary, type `vector`, arc type `standard` (tropical),\n  \
         {states} states, {arcs} arcs. Label 0 is ε on both sides.\n\
         - `words.txt`: the output symbols (Kaldi's words.txt: `<eps>` 0 … `#0`, `<s>`, `</s>`).\n\
         - Input labels are {inputs}\n\n\
         Read it back with `ctxbench decode --graph {fst_name} --words words.txt ...` or any\n\
         OpenFst tool (`fstinfo {fst_name}`).\n",
        kind = graph.kind.name(),
        states = graph.fst.num_states(),
        arcs = num_arcs(&graph.fst),
    )
}

/// Writes a graph for other tools: `<NAME>.fst` (HCLG.fst or TLG.fst, OpenFst vector binary),
/// `words.txt`, `tokens.txt` for CTC graphs, and a README.md stating the input-label convention.
/// Returns the FST's path.
pub fn export_graph(dir: &Path, graph: &Graph) -> Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| GraphError::Io {
        path: dir.to_path_buf(),
        err: e,
    })?;
    let name = match graph.kind {
        GraphKind::Hclg => "HCLG.fst",
        GraphKind::Tlg(_) => "TLG.fst",
    };
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    graph
        .fst
        .write(&tmp)
        .map_err(|e| GraphError::fst(&format!("write {}", path.display()), e))?;
    std::fs::rename(&tmp, &path).map_err(|e| GraphError::Io {
        path: path.clone(),
        err: e,
    })?;
    graph.symbols.words.write(&dir.join("words.txt"))?;
    if let GraphKind::Tlg(_) = graph.kind {
        // Label k reads column k − 1: blank, then the units in unit-table order.
        let mut t = SymbolTable::with_epsilon();
        t.insert("<blk>", 1)?;
        for u in 1..=graph.symbols.num_units {
            let sym = graph.symbols.units.symbol(u).ok_or_else(|| {
                GraphError::Invalid(format!("unit {u} has no symbol in the unit table"))
            })?;
            t.insert(sym, u + 1)?;
        }
        t.write(&dir.join("tokens.txt"))?;
    }
    let readme = export_readme(graph, name);
    ctx_core::io::write_atomic(&dir.join("README.md"), |w| w.write_all(readme.as_bytes()))?;
    Ok(path)
}

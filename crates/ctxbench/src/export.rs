//! `ctxbench export`: a built-in dataset written as a researcher's own files would be — graph
//! (OpenFst binary + symbol tables), scores (Kaldi ark or `.npy`), Kaldi data dir, entities,
//! biasing lists and a `datasets.toml` with a `kind = "files"` entry — so that other tools read the
//! same inputs, and so that decoding the files path can be checked against the built-in path.
//!
//! With `--transition-ids` an HCLG is written the way Kaldi writes one: input labels are
//! transition-ids, with a `final.mdl` (a Kaldi transition model) mapping them to pdf-ids. Each pdf
//! gets a one-state HMM (self-loop and forward transition); an arc that loops on its state takes the
//! self-loop transition-id, any other the forward one.

use crate::data::registry;
use crate::pipeline::{Setup, SetupOptions};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use ctx_core::transition::{TopoState, TransitionModel, TransitionTuple};
use ctx_data::dataset::{ListScope, Subset};
use ctx_graph::compile::{Graph, GraphKind};
use ctx_graph::rustfst::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `ctxbench export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Dataset name (datasets.toml).
    #[arg(long)]
    pub dataset: String,
    /// The quick subset.
    #[arg(long)]
    pub quick: bool,
    /// Only the first N utterances.
    #[arg(long)]
    pub limit: Option<usize>,
    /// hclg, tlg-normal or tlg-compact.
    #[arg(long, default_value = "hclg")]
    pub kind: String,
    /// BPE pieces for TLG graphs.
    #[arg(long, default_value_t = ctx_data::graphs::DEFAULT_BPE_SIZE)]
    pub bpe_size: usize,
    /// Scores as a binary Kaldi archive (ark) or a folder of .npy files (npy).
    #[arg(long, default_value = "ark")]
    pub format: String,
    /// HCLG only: write transition-id input labels and a final.mdl (Kaldi's convention).
    #[arg(long)]
    pub transition_ids: bool,
    /// Also write the graph's LM (`lm/G.arpa`) and lexicon (`lm/lexicon.txt`: a word and its
    /// phones or BPE pieces per line), what a peer decoder needs for the same task.
    #[arg(long)]
    pub with_lm: bool,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Graph cache folder.
    #[arg(long, default_value = "cache/graphs")]
    pub cache: PathBuf,
    /// The registry.
    #[arg(long)]
    pub registry: Option<PathBuf>,
}

/// Relabels a pdf-labelled HCLG with transition-ids and returns the matching transition model:
/// pdf p (input label p + 1) is phone p + 1 with one emitting state; its self-loop is
/// transition-id 2p + 1, its forward transition 2p + 2.
pub fn to_transition_ids(graph: &mut Graph) -> Result<TransitionModel> {
    let n = graph.num_columns as i32;
    let mut tm = TransitionModel::default();
    for p in 0..n {
        tm.topology.insert(
            p + 1,
            vec![
                TopoState {
                    forward_pdf_class: 0,
                    self_loop_pdf_class: 0,
                    transitions: vec![(0, 0.5), (1, 0.5)],
                },
                TopoState {
                    forward_pdf_class: -1,
                    self_loop_pdf_class: -1,
                    transitions: Vec::new(),
                },
            ],
        );
        tm.tuples.push(TransitionTuple {
            phone: p + 1,
            hmm_state: 0,
            forward_pdf: p,
            self_loop_pdf: p,
        });
    }
    let fst = &mut graph.fst;
    for s in 0..fst.num_states() as StateId {
        let mut trs = fst.tr_iter_mut(s).map_err(|e| anyhow!("{e:#}"))?;
        for i in 0..trs.len() {
            let tr = trs.get(i).expect("index below len");
            if tr.ilabel == 0 {
                continue;
            }
            let pdf = tr.ilabel - 1;
            let tid = if tr.nextstate == s {
                2 * pdf + 1
            } else {
                2 * pdf + 2
            };
            trs.set_ilabel(i, tid).map_err(|e| anyhow!("{e:#}"))?;
        }
    }
    Ok(tm)
}

/// Rewrites the graph README's input-label line for a transition-id graph.
pub fn note_transition_ids(dir: &Path) -> Result<()> {
    let p = dir.join("README.md");
    let text = std::fs::read_to_string(&p)?;
    let mut out = String::new();
    let mut skip = false;
    for line in text.lines() {
        if line.starts_with("- Input labels are") {
            out.push_str("- Input labels are Kaldi transition-ids; `final.mdl` (a Kaldi transition model,\n  binary) maps each to its pdf-id. Decode with pdf log-likelihoods and\n  `--transition-model final.mdl`.\n");
            skip = true;
            continue;
        }
        if skip && line.starts_with("  ") {
            continue;
        }
        skip = false;
        out.push_str(line);
        out.push('\n');
    }
    ctx_core::io::write_atomic(&p, |w| w.write_all(out.as_bytes()))?;
    Ok(())
}

fn toml_str(p: &str) -> String {
    format!("{p:?}")
}

/// Runs `ctxbench export`; returns the registry file it wrote.
pub fn run_export(a: &ExportArgs) -> Result<PathBuf> {
    let reg = registry(&a.registry)?;
    let kind = GraphKind::parse(&a.kind).ok_or_else(|| {
        anyhow!(
            "unknown graph kind '{}' (hclg, tlg-normal, tlg-compact)",
            a.kind
        )
    })?;
    if a.transition_ids && kind != GraphKind::Hclg {
        bail!("--transition-ids is for HCLG graphs (a TLG reads tokens)");
    }
    if a.format != "ark" && a.format != "npy" {
        bail!("--format '{}' (ark or npy)", a.format);
    }
    let subset = if a.quick { Subset::Quick } else { Subset::Full };
    let mut setup = Setup::load(
        &reg,
        &a.dataset,
        &SetupOptions {
            kind,
            bpe_size: a.bpe_size,
            ..SetupOptions::hclg(subset, &a.cache)
        },
    )?;
    if let Some(n) = a.limit {
        setup.dataset.utterances.truncate(n);
    }
    let out = &a.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // Graph.
    let mut graph = setup.graph.clone();
    let tm = if a.transition_ids {
        Some(to_transition_ids(&mut graph)?)
    } else {
        None
    };
    let fst_path = ctx_graph::external::export_graph(&out.join("graph"), &graph)?;
    if let Some(tm) = &tm {
        tm.write(&out.join("graph").join("final.mdl"), true)?;
        note_transition_ids(&out.join("graph"))?;
    }
    // Scores.
    let ds = &setup.dataset;
    let scores_rel = if a.format == "ark" {
        "scores.ark"
    } else {
        "scores"
    };
    let scores_path = out.join(scores_rel);
    if a.format == "ark" {
        ctx_core::io::write_atomic(&scores_path, |w| {
            for u in &ds.utterances {
                let m = setup
                    .scores(u)
                    .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
                ctx_core::scores::write_ark_entry(w, &u.id, &m, true)?;
            }
            Ok(())
        })?;
    } else {
        std::fs::create_dir_all(&scores_path)?;
        for u in &ds.utterances {
            let m = setup.scores(u)?;
            ctx_core::scores::write_npy(&scores_path.join(format!("{}.npy", u.id)), &m)?;
        }
    }
    // Kaldi data dir.
    let data = out.join("data");
    std::fs::create_dir_all(&data)?;
    let mut text = String::new();
    let mut utt2dur = String::new();
    let mut segments = String::new();
    let mut entities = String::new();
    for u in &ds.utterances {
        writeln!(text, "{} {}", u.id, u.words.join(" "))?;
        writeln!(utt2dur, "{} {}", u.id, u.duration_s)?;
        if let Some(d) = &u.doc {
            writeln!(segments, "{} {d} 0 {}", u.id, u.duration_s)?;
        }
        if !u.entities.is_empty() {
            let es: Vec<String> = u
                .entities
                .iter()
                .map(|(c, s, e)| format!("[{c}] {}", u.words[*s..*e].join(" ")))
                .collect();
            writeln!(entities, "{}\t{}", u.id, es.join("|"))?;
        }
    }
    let put = |p: &Path, s: &str| ctx_core::io::write_atomic(p, |w| w.write_all(s.as_bytes()));
    put(&data.join("text"), &text)?;
    put(&data.join("utt2dur"), &utt2dur)?;
    if !segments.is_empty() {
        put(&data.join("segments"), &segments)?;
    }
    let mut entry = format!(
        "# Written by `ctxbench export --dataset {} --kind {}`: decode with\n# `ctxbench decode --registry {} --dataset {}-files`.\n[{}-files]\nkind = \"files\"\nmodel = {}\ngraph = {}\nwords = \"graph/words.txt\"\nscores = {}\ndata = \"data\"\nframe_shift_s = {}\nacoustic_scale = {}\n",
        a.dataset,
        a.kind,
        out.join("datasets.toml").display(),
        a.dataset,
        a.dataset,
        toml_str(if kind == GraphKind::Hclg { "hybrid" } else { "ctc" }),
        toml_str(&format!(
            "graph/{}",
            fst_path.file_name().and_then(|n| n.to_str()).unwrap_or("HCLG.fst")
        )),
        toml_str(scores_rel),
        setup.frame_s,
        setup.acoustic_scale,
    );
    if tm.is_some() {
        entry.push_str("transition_model = \"graph/final.mdl\"\n");
    }
    match kind {
        GraphKind::Hclg => {
            let cols: Vec<String> = setup.silence.iter().map(|l| (l - 1).to_string()).collect();
            writeln!(entry, "silence_columns = [{}]", cols.join(", "))?;
        }
        GraphKind::Tlg(_) => entry.push_str("tokens = \"graph/tokens.txt\"\n"),
    }
    if !entities.is_empty() {
        put(&out.join("entities.txt"), &entities)?;
        entry.push_str("entities = \"entities.txt\"\n");
        // The built-in sets' scoring rules: ATC counts every class and insertions inside a
        // callsign; Earnings counts PERSON and ORG, never insertions (fstalign).
        if ds.has_callsigns {
            entry.push_str("ne_insertions_inside = true\n");
        } else {
            entry.push_str("entity_classes = [\"PERSON\", \"ORG\"]\n");
        }
    }
    if !ds.lists.is_empty() {
        match ds.list_scope {
            ListScope::Utterance => {
                let ids: std::collections::BTreeSet<&str> =
                    ds.utterances.iter().map(|u| u.id.as_str()).collect();
                let table = ctx_core::bias::BiasTable {
                    lists: ds
                        .lists
                        .iter()
                        .filter(|(k, _)| ids.contains(k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                };
                table.write(&out.join("bias_utt.tsv"))?;
                entry.push_str("bias_utt = \"bias_utt.tsv\"\n");
            }
            ListScope::Document => {
                let dir = out.join("bias_docs");
                std::fs::create_dir_all(&dir)?;
                for (doc, l) in &ds.lists {
                    if ds.utterances.iter().any(|u| u.doc.as_deref() == Some(doc)) {
                        l.write(&dir.join(format!("{doc}.txt")))?;
                    }
                }
                entry.push_str("bias_docs = \"bias_docs\"\n");
            }
        }
    }
    if !ds.global_lists.is_empty() {
        let dir = out.join("lists");
        std::fs::create_dir_all(&dir)?;
        entry.push_str("lists = { ");
        let mut first = true;
        for (n, l) in &ds.global_lists {
            l.write(&dir.join(format!("{n}.txt")))?;
            if !first {
                entry.push_str(", ");
            }
            first = false;
            write!(
                entry,
                "{} = {}",
                toml_str(n),
                toml_str(&format!("lists/{n}.txt"))
            )?;
        }
        entry.push_str(" }\n");
    }
    if a.with_lm {
        let (lm, lexicon) =
            ctx_data::graphs::dataset_lexicon(&reg, &a.dataset, kind, a.bpe_size, subset)?;
        let dir = out.join("lm");
        std::fs::create_dir_all(&dir)?;
        lm.write(&dir.join("G.arpa"))?;
        lexicon.write(&dir.join("lexicon.txt"), false)?;
        entry.push_str("lm = \"lm/G.arpa\"\n");
    }
    writeln!(
        entry,
        "description = {}",
        toml_str(&format!("{} exported by ctxbench ({})", ds.name, a.kind))
    )?;
    let reg_path = out.join("datasets.toml");
    put(&reg_path, &entry)?;
    eprintln!(
        "exported {} utterances of {} ({} graph: {} states) to {}",
        ds.utterances.len(),
        ds.name,
        a.kind,
        graph.fst.num_states(),
        out.display()
    );
    Ok(reg_path)
}

//! The method and points of a decode: the components its lists add, the outputs it scores
//! (the 1-best and lattice-biased rescorings) and their row labels.

use super::args::DecodeArgs;
use super::report;
use crate::experiment::{Method, Point, Settings};
use crate::methods::catalog;
use crate::methods::components::arc_boost::ArcBoost;
use crate::methods::components::gboost::GBoost;
use crate::methods::components::hclg_boost::HclgBoost;
use crate::methods::components::lattice_bias::LatticeBias;
use crate::methods::components::open_vocab::OpenVocab;
use crate::methods::components::word_boost::WordBoost;
use crate::pipeline::ListKind;
use crate::settings::{Block, Common};
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;

/// An output's row label when `--row` names none: 000 Table 1's row of its lattice-biasing list
/// (or "No biasing"); a 1-best biased during the search says how, arc boosting with 000's
/// "partial hypotheses" row of its list.
fn default_row(output: &str, l: &Lists) -> String {
    let table1 = report::table1_row;
    if output != "none" {
        return table1(output).to_string();
    }
    let mut parts = Vec::new();
    if let Some(k) = &l.arcs {
        parts.push(match table1(k) {
            "other" => format!("Arc-boosted {k} (partial hypotheses)"),
            r => r.to_string(),
        });
    }
    for (list, how) in [
        (&l.open, "Open-vocabulary context:"),
        (&l.words, "Word-boosted"),
        (&l.gboost, "G-boosted"),
        (&l.hclg, "HCLG-boosted"),
    ] {
        if let Some(k) = list {
            parts.push(format!("{how} {k}"));
        }
    }
    if parts.is_empty() {
        table1(output).to_string()
    } else {
        parts.join(" + ")
    }
}

/// The lists the in-search biasing settings name: each adds its component to the method.
#[derive(Debug, Clone, Default)]
pub(super) struct Lists {
    gboost: Option<String>,
    hclg: Option<String>,
    arcs: Option<String>,
    words: Option<String>,
    open: Option<String>,
}

impl Lists {
    /// The lists of a decode's settings; a G-boosting mode or scope without a list (which
    /// would be dropped with its component) is refused.
    pub(super) fn of(st: &Settings) -> Result<Self> {
        let g = GBoost::read(st)?;
        if g.gboost_list.is_none() && (g.on_the_fly() || g.per_utterance()) {
            bail!(
                "--gboost-mode {} --gboost-scope {} needs a --gboost-list list",
                g.gboost_mode,
                g.gboost_scope
            );
        }
        Ok(Self {
            gboost: g.gboost_list,
            hclg: HclgBoost::read(st)?.hclg_list,
            arcs: ArcBoost::read(st)?.arcs_list,
            words: WordBoost::read(st)?.word_boost,
            open: OpenVocab::read(st)?.open_vocab,
        })
    }
}

/// The backend a decode names, a GPU checked before any data is loaded; `auto` says what it
/// chose (a point says what ran: cpu, cuda or shim).
pub(super) fn resolve_backend(b: ctx_cuda::Backend) -> Result<ctx_cuda::Backend> {
    use ctx_cuda::Backend;
    Ok(match b {
        Backend::Cuda => {
            ctx_cuda::cuda::probe().map_err(|e| anyhow!("--backend cuda: {e}"))?;
            Backend::Cuda
        }
        Backend::Auto => match ctx_cuda::cuda::probe() {
            Ok(_) => Backend::Cuda,
            Err(e) => {
                eprintln!("--backend auto: no GPU ({e}); decoding on the CPU");
                Backend::Cpu
            }
        },
        other => other,
    })
}

/// Warnings a word boost earns before it runs (001 §3.3's rule; the compact topology).
pub(super) fn warn_word_boost(st: &Settings, common: &Common, is_files: bool) -> Result<()> {
    let w = WordBoost::read(st)?;
    if w.word_boost.is_none() {
        return Ok(());
    }
    let score = w.word_boost_score;
    if score.abs() > common.beam / 2.0 {
        eprintln!(
            "warning: a word boost of {score} exceeds half the beam ({}): boosted words may crowd the beam out (001 §3.3)",
            common.beam
        );
    }
    if common.graph == "tlg-compact" && !is_files {
        eprintln!(
            "warning: the compact CTC topology does not enforce CTC's repeat rule: a boosted word may be read again on every frame its token is held (tlg-normal does not; README, 001 Fig. 6)"
        );
    }
    Ok(())
}

/// The method a decode runs: `--method`'s components and those its lists add (`base`), and
/// `widest`, the base with lattice biasing where the family has it.
pub(super) struct DecodeMethod {
    pub(super) base: Method,
    pub(super) widest: Method,
    pub(super) parts: Vec<String>,
}

impl DecodeMethod {
    pub(super) fn of(a: &DecodeArgs, l: &Lists) -> Result<Self> {
        let mut parts: Vec<String> = match &a.method {
            Some(m) if m != "baseline" => m.split('+').map(|p| p.trim().to_string()).collect(),
            _ => Vec::new(),
        };
        for (on, c) in [
            (l.gboost.is_some(), "g-boosting"),
            (l.hclg.is_some(), "hclg-boosting"),
            (l.arcs.is_some(), "arc-boosting"),
            (l.words.is_some(), "word-boosting"),
            (l.open.is_some(), "open-vocab"),
        ] {
            if on && !parts.iter().any(|p| p == c) {
                parts.push(c.to_string());
            }
        }
        let base = method_named(&parts, false)?;
        // With lattice biasing where the family has it.
        let widest = method_named(&parts, true).unwrap_or_else(|_| base.clone());
        Ok(Self {
            base,
            widest,
            parts,
        })
    }

    /// The outputs `--methods` names (default: the 1-best, and its lattice-biased rescoring
    /// with each utterance's sequences where the family can add lattice biasing).
    pub(super) fn outputs(&self, a: &DecodeArgs) -> Vec<String> {
        if !a.methods.is_empty() {
            return a.methods.clone();
        }
        let can_bias = self.base.has("lattice-biasing") || self.widest != self.base;
        if can_bias {
            vec!["none".into(), "sequences".into()]
        } else {
            vec!["none".into()]
        }
    }

    /// One point per output, each checked as an experiment row is.
    pub(super) fn points(
        &self,
        a: &DecodeArgs,
        st: &Settings,
        outputs: &[String],
        lists: &Lists,
    ) -> Result<Vec<Point>> {
        let mut row_labels = BTreeMap::new();
        for r in &a.rows {
            let (k, v) = r
                .split_once('=')
                .ok_or_else(|| anyhow!("--row '{r}' is not OUTPUT=LABEL"))?;
            if !outputs.iter().any(|m| m == k) {
                bail!("--row '{r}': '{k}' is not one of --methods");
            }
            if v.contains(',') || v.contains('"') {
                bail!("--row '{r}': a label may not contain commas or quotes (CSV)");
            }
            row_labels.insert(k.to_string(), v.to_string());
        }
        let mut points = Vec::new();
        for name in outputs {
            let mut s = st.clone();
            let method = if name == "none" {
                self.base.clone()
            } else {
                ListKind::parse(name).ok_or_else(|| {
                    anyhow!("unknown method '{name}' (none, unigrams, sequences, gt, list:NAME)")
                })?;
                LatticeBias {
                    bias_list: Some(name.clone()),
                    ..LatticeBias::read(st)?
                }
                .write(&mut s);
                method_named(&self.parts, true)
                    .with_context(|| format!("output '{name}' (lattice biasing)"))?
            };
            let row = row_labels
                .get(name)
                .cloned()
                .unwrap_or_else(|| default_row(name, lists));
            let p = Point {
                row,
                section: a.section.clone(),
                method,
                settings: s,
                swept: Vec::new(),
            };
            points.push(catalog().point(p, &format!("ctxbench decode, output '{name}'"))?);
        }
        Ok(points)
    }
}

/// The method of `parts` (with lattice biasing when `lattice`), parsed by the catalog.
pub(super) fn method_named(parts: &[String], lattice: bool) -> Result<Method> {
    let mut p = parts.to_vec();
    if lattice && !p.iter().any(|x| x == "lattice-biasing") {
        p.push("lattice-biasing".into());
    }
    let name = if p.is_empty() {
        "baseline".to_string()
    } else {
        p.join("+")
    };
    catalog()
        .method(&name)
        .with_context(|| format!("--method '{name}'"))
}

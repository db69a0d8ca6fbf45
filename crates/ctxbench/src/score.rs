//! `ctxbench score`: hypotheses against references, in Kaldi `text` form (with an optional
//! per-utterance entity file) or as Earnings `.nlp` documents (entities and normalisations from the
//! sidecars, fstalign rules).

use anyhow::{bail, Context, Result};
use ctx_core::bias::BiasList;
use ctx_core::corpus::{read_text_table, EarningsDoc, NlpFile};
use ctx_core::io::write_atomic;
use ctx_core::metrics::{
    score_utterance, EditOp, EntityTable, ErrorCounts, NeInsertions, ScoreOptions, ScoreTotals,
    ScoringRef, Step, TextNorm, UttScore,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// The reference/hypothesis format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Kaldi `text` files: `utt-id word word ...`.
    Kaldi,
    /// Directories of Earnings `.nlp` files matched by file name (sidecars found beside them or in
    /// sibling `wer_tags/` and `normalizations/` folders).
    Nlp,
    /// The LibriSpeech biasing benchmark of Le et al. 2021 as it comes (`ref/*.tsv`, hypothesis
    /// `.tsv`), scored by its `score.py`'s definitions: WER, U-WER, B-WER.
    Fbai,
}

/// Text normalisation choice on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NormArg {
    /// Compare tokens as written (Kaldi `compute-wer`).
    Exact,
    /// Lower-case, strip edge punctuation, drop `<...>` tags (fstalign on Earnings).
    Fstalign,
}

/// Insertion policy on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NeInsArg {
    /// Charge an insertion between two words of one entity to that entity (thesis NE-WER).
    Inside,
    /// Never charge insertions to entities (fstalign).
    Never,
}

/// Everything `ctxbench score` takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ScoreArgs {
    /// Reference: a Kaldi `text` file, or a directory of Earnings `.nlp` files.
    #[arg(long = "ref", value_name = "REF")]
    pub reference: PathBuf,
    /// Hypotheses: a Kaldi `text` file (utterance or document ids), or a directory of `.nlp` files.
    #[arg(long, value_name = "HYP")]
    pub hyp: PathBuf,
    /// Format of the reference (default: `nlp` for a directory, `kaldi` for a file).
    #[arg(long)]
    pub format: Option<Format>,
    /// Per-utterance entities for Kaldi references: `utt<TAB>[CLASS] words|[CLASS] words`.
    #[arg(long, value_name = "FILE")]
    pub entities: Option<PathBuf>,
    /// Entity classes counted as named entities for NE-WER, U-WER and NE-A, comma-separated
    /// (default: PERSON,ORG for `.nlp` as in the thesis; every class for Kaldi).
    #[arg(long, value_delimiter = ',', value_name = "CLASSES")]
    pub ne_classes: Option<Vec<String>>,
    /// Target words for precision/recall/F1: a phrase-per-line list (e.g. the biasing list).
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// Text normalisation (default: `fstalign` for `.nlp`, `exact` for Kaldi).
    #[arg(long)]
    pub normalize: Option<NormArg>,
    /// Whether insertions inside an entity count against it (default: `never` for `.nlp`,
    /// `inside` for Kaldi).
    #[arg(long)]
    pub ne_insertions: Option<NeInsArg>,
    /// Refuse hypotheses that miss reference utterances or name unknown ones, instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// `--format fbai`: skip reference utterances without a hypothesis (score.py's --lenient;
    /// without it they are an error, as there).
    #[arg(long)]
    pub lenient: bool,
    /// Write the figures as JSON here.
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Print a row per utterance (always on for `.nlp` documents).
    #[arg(long)]
    pub per_utt: bool,
    /// Write the word alignment here: `id<TAB>ref<TAB>hyp<TAB>op` per step, op C/S/D/I, `*` for
    /// the missing side.
    #[arg(long, value_name = "OUT")]
    pub alignment: Option<PathBuf>,
}

impl ScoreArgs {
    /// Arguments with every option at its default, as `ctxbench score --ref R --hyp H` gives.
    pub fn new(reference: &Path, hyp: &Path) -> Self {
        Self {
            reference: reference.to_path_buf(),
            hyp: hyp.to_path_buf(),
            format: None,
            entities: None,
            ne_classes: None,
            targets: None,
            normalize: None,
            ne_insertions: None,
            strict: false,
            lenient: false,
            json: None,
            per_utt: false,
            alignment: None,
        }
    }
}

/// The result of a scoring run.
#[derive(Debug, Clone)]
pub struct ScoreReport {
    /// Format used.
    pub format: Format,
    /// Normalisation used.
    pub norm: TextNorm,
    /// NE classes (`None`: all).
    pub ne_classes: Option<BTreeSet<String>>,
    /// Totals.
    pub totals: ScoreTotals,
    /// One score per reference utterance or document, in reference order.
    pub items: Vec<UttScore>,
    /// Reference ids with no hypothesis (scored as all deletions).
    pub missing_hyps: Vec<String>,
    /// Hypothesis ids not in the reference (ignored).
    pub extra_hyps: Vec<String>,
    /// Warnings to show the user.
    pub warnings: Vec<String>,
}

fn load_targets(path: &Path, norm: TextNorm) -> Result<HashSet<String>> {
    let list = BiasList::read(path, false)?;
    Ok(list
        .phrases
        .iter()
        .flatten()
        .filter_map(|w| norm.token(w))
        .collect())
}

fn load_hyps(path: &Path, norm: TextNorm) -> Result<BTreeMap<String, Vec<String>>> {
    let mut out = BTreeMap::new();
    if path.is_dir() {
        for (id, p) in EarningsDoc::list_dir(path)? {
            let nlp = NlpFile::read(&p)?;
            out.insert(
                id,
                nlp.tokens
                    .iter()
                    .filter_map(|t| norm.token(&t.token))
                    .collect(),
            );
        }
        if out.is_empty() {
            bail!(
                "{}: no .nlp hypothesis files in this directory",
                path.display()
            );
        }
    } else {
        for (id, words) in read_text_table(path)? {
            out.insert(id, norm.words(&words));
        }
    }
    Ok(out)
}

/// Loads references and hypotheses as `args` says, aligns and scores every utterance.
/// Runs `ctxbench score --format fbai`: the three lines `score.py` prints, and its figures.
pub fn run_score_fbai(args: &ScoreArgs) -> Result<ctx_core::metrics::fbai::FbaiTotals> {
    use ctx_core::metrics::fbai;
    if args.entities.is_some() || args.targets.is_some() || args.alignment.is_some() {
        bail!("--format fbai takes --ref, --hyp, --lenient and --json only (its biased words are the reference's third column)");
    }
    let refs = fbai::read_refs(&args.reference)?;
    let hyps = fbai::read_hyps(&args.hyp)?;
    let known: HashSet<&str> = refs.iter().map(|r| r.id.as_str()).collect();
    if !hyps.keys().any(|k| known.contains(k.as_str())) {
        bail!(
            "{}: no hypothesis utterance id is in the reference {}",
            args.hyp.display(),
            args.reference.display()
        );
    }
    let (t, missing) = fbai::score_set(&refs, &hyps, args.lenient)
        .with_context(|| format!("scoring {}", args.hyp.display()))?;
    if !missing.is_empty() {
        eprintln!(
            "warning: {} reference utterance(s) have no hypothesis (first: {}): skipped (--lenient)",
            missing.len(),
            missing[0]
        );
    }
    if let Some(p) = &args.json {
        write_atomic(p, |w| {
            serde_json::to_writer_pretty(&mut *w, &t).map_err(std::io::Error::other)
        })?;
    }
    Ok(t)
}

/// Runs `ctxbench score` (Kaldi and `.nlp` formats; `fbai` is [`run_score_fbai`]).
pub fn run_score(args: &ScoreArgs) -> Result<ScoreReport> {
    if args.format == Some(Format::Fbai) {
        bail!("--format fbai is scored by run_score_fbai");
    }
    let format = args.format.unwrap_or(if args.reference.is_dir() {
        Format::Nlp
    } else {
        Format::Kaldi
    });
    let norm = match args.normalize {
        Some(NormArg::Exact) => TextNorm::Exact,
        Some(NormArg::Fstalign) => TextNorm::Fstalign,
        None if format == Format::Nlp => TextNorm::Fstalign,
        None => TextNorm::Exact,
    };
    let ne_insertions = match args.ne_insertions {
        Some(NeInsArg::Inside) => NeInsertions::Inside,
        Some(NeInsArg::Never) => NeInsertions::Never,
        None if format == Format::Nlp => NeInsertions::Never,
        None => NeInsertions::Inside,
    };
    let ne_classes: Option<BTreeSet<String>> = match &args.ne_classes {
        Some(v) => Some(
            v.iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        None if format == Format::Nlp => {
            Some(["PERSON", "ORG"].iter().map(|s| s.to_string()).collect())
        }
        None => None,
    };
    let targets = args
        .targets
        .as_deref()
        .map(|p| load_targets(p, norm))
        .transpose()
        .context("reading the target words")?;
    let opts = ScoreOptions {
        ne_classes: ne_classes.clone(),
        ne_insertions,
        targets,
    };
    let mut warnings = Vec::new();

    let refs: Vec<ScoringRef> = match format {
        Format::Nlp => {
            if args.entities.is_some() {
                bail!("--entities is for Kaldi references; .nlp references carry their entities in wer_tags");
            }
            if !args.reference.is_dir() {
                bail!(
                    "{}: an .nlp reference must be a directory of <id>.nlp files",
                    args.reference.display()
                );
            }
            let docs = EarningsDoc::list_dir(&args.reference)?;
            if docs.is_empty() {
                bail!(
                    "{}: no .nlp files in this directory",
                    args.reference.display()
                );
            }
            let mut refs = Vec::with_capacity(docs.len());
            let mut no_norm = Vec::new();
            for (_, p) in docs {
                let doc = EarningsDoc::load(&p)?;
                warnings.extend(doc.warnings.iter().cloned());
                if doc.entity_classes.is_empty() {
                    warnings.push(format!(
                        "{}: no wer_tag sidecar found, entity figures exclude it",
                        p.display()
                    ));
                }
                if doc.normalizations.is_empty() && !doc.entity_classes.is_empty() {
                    no_norm.push(p.display().to_string());
                }
                refs.push(ScoringRef::from_earnings(&doc, norm));
            }
            // fstalign's normalizations (numbers, abbreviations: several accepted spellings)
            // change WER; a set that has entity sidecars but no normalizations is most likely
            // missing its normalizations/ folder.
            if !no_norm.is_empty() {
                warnings.push(format!(
                    "{} file(s) have a wer_tag sidecar but no <id>.norm.json (beside them or in \
                     normalizations/), e.g. {}: their numbers and abbreviations are scored as \
                     written, not with fstalign's accepted alternatives",
                    no_norm.len(),
                    no_norm[0]
                ));
            }
            refs
        }
        Format::Fbai => unreachable!("refused above"),
        Format::Kaldi => {
            if args.reference.is_dir() {
                bail!("{}: a Kaldi reference is a `text` file, not a directory (use --format nlp for .nlp folders)", args.reference.display());
            }
            let table = read_text_table(&args.reference)?;
            let entities = match &args.entities {
                Some(p) => EntityTable::read(p, norm)?,
                None => EntityTable::default(),
            };
            let ref_ids: HashSet<&str> = table.iter().map(|(id, _)| id.as_str()).collect();
            let stray: Vec<&String> = entities
                .entities
                .keys()
                .filter(|k| !ref_ids.contains(k.as_str()))
                .collect();
            if !stray.is_empty() {
                bail!(
                    "{}: {} utterance(s) are not in the reference, e.g. {}",
                    args.entities.as_ref().expect("entities given").display(),
                    stray.len(),
                    stray[0]
                );
            }
            let mut refs = Vec::with_capacity(table.len());
            for (id, words) in &table {
                let words = norm.words(words);
                let r = match entities.entities.get(id) {
                    Some(e) => {
                        ScoringRef::with_entity_phrases(id, &words, e).with_context(|| {
                            format!(
                                "entities of {id} in {}",
                                args.entities.as_ref().expect("entities given").display()
                            )
                        })?
                    }
                    None => ScoringRef::plain(id, &words),
                };
                refs.push(r);
            }
            refs
        }
    };
    // Classes asked for that no entity of the reference has: NE-WER would be empty ("-")
    // without a word of why. Asked on the command line, a mistake: refused.
    if let (Some(asked), Some(_)) = (&ne_classes, &args.ne_classes) {
        let present: BTreeSet<&str> = refs
            .iter()
            .flat_map(|r| r.entities.iter().map(|e| e.class.as_str()))
            .collect();
        let absent: Vec<&str> = asked
            .iter()
            .map(String::as_str)
            .filter(|c| !present.contains(c))
            .collect();
        let classes = if present.is_empty() {
            "none: no entities".to_string()
        } else {
            present.iter().copied().collect::<Vec<_>>().join(", ")
        };
        let msg = format!(
            "--ne-classes: {} in no entity of {} (its classes: {classes})",
            absent.join(", "),
            args.reference.display()
        );
        if absent.len() == asked.len() {
            bail!("{msg}: NE-WER would be empty");
        } else if !absent.is_empty() {
            warnings.push(msg);
        }
    }
    let hyps = load_hyps(&args.hyp, norm)
        .with_context(|| format!("reading hypotheses {}", args.hyp.display()))?;
    let ref_ids: HashSet<&str> = refs.iter().map(|r| r.id.as_str()).collect();
    // Nothing to score is an error, not a WER of 0 or 100.
    if refs.iter().all(|r| r.words_as_written().is_empty()) {
        bail!(
            "{}: the reference has no words ({} utterance(s))",
            args.reference.display(),
            refs.len()
        );
    }
    if !hyps.is_empty() && !hyps.keys().any(|k| ref_ids.contains(k.as_str())) {
        bail!(
            "{}: no hypothesis utterance id is in the reference {} (e.g. {} against {}): ids of another set?",
            args.hyp.display(),
            args.reference.display(),
            hyps.keys().next().expect("not empty"),
            refs.first().map_or("-", |r| r.id.as_str())
        );
    }
    let missing_hyps: Vec<String> = refs
        .iter()
        .filter(|r| !hyps.contains_key(&r.id))
        .map(|r| r.id.clone())
        .collect();
    let extra_hyps: Vec<String> = hyps
        .keys()
        .filter(|k| !ref_ids.contains(k.as_str()))
        .cloned()
        .collect();
    let sample = |v: &[String]| v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if !missing_hyps.is_empty() {
        let msg = format!(
            "{} reference utterance(s) have no hypothesis in {} ({}{})",
            missing_hyps.len(),
            args.hyp.display(),
            sample(&missing_hyps),
            if missing_hyps.len() > 5 { ", ..." } else { "" }
        );
        if args.strict {
            bail!("{msg}; refused because of --strict");
        }
        warnings.push(format!("{msg}: scored as deletions"));
    }
    if !extra_hyps.is_empty() {
        let msg = format!(
            "{} hypothesis utterance(s) are not in the reference ({}{})",
            extra_hyps.len(),
            sample(&extra_hyps),
            if extra_hyps.len() > 5 { ", ..." } else { "" }
        );
        if args.strict {
            bail!("{msg}; refused because of --strict");
        }
        warnings.push(format!("{msg}: ignored"));
    }

    let empty: Vec<String> = Vec::new();
    let mut totals = ScoreTotals::default();
    let mut items = Vec::with_capacity(refs.len());
    let mut alignment = String::new();
    for r in &refs {
        let hyp = hyps.get(&r.id).unwrap_or(&empty);
        let mut u = score_utterance(r, hyp, &opts);
        if args.alignment.is_some() {
            render_alignment(&mut alignment, r, hyp, &u.steps);
        }
        u.steps = Vec::new();
        totals.add(&u);
        items.push(u);
    }
    if let Some(p) = &args.alignment {
        write_atomic(p, |w| w.write_all(alignment.as_bytes()))?;
    }
    Ok(ScoreReport {
        format,
        norm,
        ne_classes,
        totals,
        items,
        missing_hyps,
        extra_hyps,
        warnings,
    })
}

fn render_alignment(out: &mut String, r: &ScoringRef, hyp: &[String], steps: &[Step]) {
    use std::fmt::Write;
    for s in steps {
        let rw = s.reference.map_or("*", |p| r.token(p).word.as_str());
        let hw = s.hyp.map_or("*", |h| hyp[h].as_str());
        let op = match s.op {
            EditOp::Match => 'C',
            EditOp::Sub => 'S',
            EditOp::Del => 'D',
            EditOp::Ins => 'I',
        };
        let _ = writeln!(out, "{}\t{rw}\t{hw}\t{op}", r.id);
    }
}

fn counts_json(c: &ErrorCounts) -> Value {
    json!({
        "rate": c.rate(),
        "ref_words": c.ref_words,
        "substitutions": c.substitutions,
        "deletions": c.deletions,
        "insertions": c.insertions,
    })
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.2}"))
}

impl ScoreReport {
    /// The figures as JSON: overall `wer`, `ne_wer`, `u_wer`, `ne_acc`, `precision`, `recall`,
    /// `f1` in percent (null when undefined), the counts behind them, and `per_class` and
    /// `per_file` (`.nlp`) or `per_utterance` (Kaldi) figures nested.
    pub fn to_json(&self) -> Value {
        let t = &self.totals;
        let per_class: serde_json::Map<String, Value> = t
            .per_class
            .iter()
            .map(|(c, e)| (c.clone(), counts_json(e)))
            .collect();
        let per_item: serde_json::Map<String, Value> = self
            .items
            .iter()
            .map(|u| {
                (
                    u.id.clone(),
                    json!({
                        "wer": u.all.rate(),
                        "ne_wer": u.ne.rate(),
                        "u_wer": u.unbiased.rate(),
                        "ne_acc": u.ne_acc(),
                        "counts": counts_json(&u.all),
                    }),
                )
            })
            .collect();
        let per_key = if self.format == Format::Nlp {
            "per_file"
        } else {
            "per_utterance"
        };
        json!({
            "wer": t.all.rate(),
            "ne_wer": t.ne.rate(),
            "u_wer": t.unbiased.rate(),
            "ne_acc": t.ne_acc(),
            "precision": t.targets.precision(),
            "recall": t.targets.recall(),
            "f1": t.targets.f1(),
            "counts": counts_json(&t.all),
            "ne_counts": counts_json(&t.ne),
            "u_counts": counts_json(&t.unbiased),
            "entities": t.entities,
            "entities_correct": t.entities_correct,
            "targets": t.targets,
            "utterances": t.utterances,
            "per_class": per_class,
            per_key: per_item,
            "missing_hyps": self.missing_hyps,
            "extra_hyps": self.extra_hyps,
            "settings": {
                "format": format!("{:?}", self.format).to_lowercase(),
                "normalize": format!("{:?}", self.norm).to_lowercase(),
                "ne_classes": self.ne_classes,
            },
        })
    }

    /// Writes [`Self::to_json`] to `path`, atomically.
    pub fn write_json(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.to_json())? + "\n";
        write_atomic(path, |w| w.write_all(text.as_bytes()))?;
        Ok(())
    }

    /// The human-readable table.
    pub fn render(&self, per_item: bool) -> String {
        use std::fmt::Write;
        let t = &self.totals;
        let mut s = String::new();
        let what = match self.format {
            Format::Nlp => "documents",
            Format::Kaldi | Format::Fbai => "utterances",
        };
        let classes = self
            .ne_classes
            .as_ref()
            .map_or("all entity classes".to_owned(), |c| {
                c.iter().cloned().collect::<Vec<_>>().join(", ")
            });
        let _ = writeln!(
            s,
            "{} {what}, normalisation {:?}, named entities: {classes}",
            t.utterances, self.norm
        );
        let _ = writeln!(
            s,
            "{:<14} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "measure", "words", "sub", "del", "ins", "rate %"
        );
        for (name, c) in [("WER", &t.all), ("NE-WER", &t.ne), ("U-WER", &t.unbiased)] {
            let _ = writeln!(
                s,
                "{name:<14} {:>9} {:>8} {:>8} {:>8} {:>8}",
                c.ref_words,
                c.substitutions,
                c.deletions,
                c.insertions,
                fmt_opt(c.rate())
            );
        }
        let _ = writeln!(
            s,
            "{:<14} {:>9} {:>8} {:>35}",
            "NE-A",
            t.entities,
            t.entities_correct,
            fmt_opt(t.ne_acc())
        );
        if t.targets != Default::default() {
            let p = &t.targets;
            let _ = writeln!(
                s,
                "targets        tp {} fp {} fn {}  precision {}  recall {}  F1 {}",
                p.true_pos,
                p.false_pos,
                p.false_neg,
                fmt_opt(p.precision()),
                fmt_opt(p.recall()),
                fmt_opt(p.f1())
            );
        }
        if !t.per_class.is_empty() {
            let _ = writeln!(s, "\nper class");
            for (c, e) in &t.per_class {
                let _ = writeln!(
                    s,
                    "{c:<14} {:>9} {:>8} {:>8} {:>8} {:>8}",
                    e.ref_words,
                    e.substitutions,
                    e.deletions,
                    e.insertions,
                    fmt_opt(e.rate())
                );
            }
        }
        if per_item {
            let _ = writeln!(
                s,
                "\n{:<20} {:>9} {:>8} {:>8} {:>8} {:>8}",
                "id", "words", "WER %", "NE-WER %", "U-WER %", "NE-A %"
            );
            for u in &self.items {
                let _ = writeln!(
                    s,
                    "{:<20} {:>9} {:>8} {:>8} {:>8} {:>8}",
                    u.id,
                    u.all.ref_words,
                    fmt_opt(u.all.rate()),
                    fmt_opt(u.ne.rate()),
                    fmt_opt(u.unbiased.rate()),
                    fmt_opt(u.ne_acc())
                );
            }
        }
        s
    }
}

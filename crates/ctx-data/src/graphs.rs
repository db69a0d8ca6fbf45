//! Decoding graphs for registered datasets: LM from the dataset's LM text (Kneser-Ney), lexicon
//! from the pronouncer (hybrid) or BPE spellings (CTC), then HCLG or TLG through ctx-graph, with
//! the on-disk cache keyed by every input.

use crate::bpe::Bpe;
use crate::dataset::{shipped_pronouncer, DataError, Dataset, Subset};
use crate::kneser_ney::{estimate, KnOptions};
use crate::pronounce::CMU_PHONES;
use crate::registry::Registry;
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconEntry};
use ctx_graph::cache::{CacheKey, GraphCache};
use ctx_graph::compile::{build_graph, Graph, GraphInputs, GraphKind};
use ctx_graph::gboost::{GBoost, GBoostReport};
use ctx_graph::grammar::MissingWords;
use ctx_graph::hmm::HmmTopology;
use ctx_graph::lexicon_fst::SilenceOptions;
use std::path::Path;
use std::time::Instant;

/// File of a boosted cache entry holding its [`GBoostReport`].
const GBOOST_REPORT: &str = "gboost.json";

/// BPE vocabulary size of the CTC graphs (docs/design.md: 1,024 pieces + blank).
pub const DEFAULT_BPE_SIZE: usize = 1024;

/// What a dataset graph build did.
#[derive(Debug, Clone)]
pub struct GraphBuildReport {
    /// The graph (loaded from the cache or built).
    pub graph: Graph,
    /// Whether it came from the cache.
    pub cached: bool,
    /// Seconds for the LM estimate (0 when cached).
    pub lm_seconds: f64,
    /// Words of the LM vocabulary without a pronunciation (skipped, counted).
    pub skipped_words: Vec<String>,
    /// n-grams dropped with them.
    pub skipped_ngrams: usize,
    /// What G-boosting changed (boosted graphs only; a cached entry keeps it in `gboost.json`).
    pub gboost: Option<GBoostReport>,
    /// Total seconds.
    pub seconds: f64,
}

/// The n-gram LM of a dataset (Kneser-Ney from its LM text, as the registry says), the one its
/// graphs for `subset` are compiled from (the quick subset's may be pruned harder:
/// [`crate::registry::LmSpec::quick_prune`]); deterministic, so a G built from it again matches
/// the graph's.
pub fn dataset_lm(reg: &Registry, name: &str, subset: Subset) -> Result<ArpaLm, DataError> {
    let ds = Dataset::load(reg, name, Subset::Full)?;
    estimate_lm(reg, name, &ds, subset)
}

fn estimate_lm(
    reg: &Registry,
    name: &str,
    ds: &Dataset,
    subset: Subset,
) -> Result<ArpaLm, DataError> {
    let spec = reg.get(name)?.lm().for_subset(subset);
    let sentences: Vec<Vec<&str>> = ds
        .lm_text
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let opts = KnOptions {
        order: spec.order,
        prune: spec.prune.clone(),
        ..KnOptions::default()
    };
    let (lm, _) = estimate(&sentences, &opts).map_err(|e| DataError::Invalid(e.to_string()))?;
    Ok(lm)
}

/// The LM and lexicon a dataset's graph of `kind` is compiled from: for HCLG the CMUdict/G2P
/// pronunciations of the LM's words, for TLG their BPE pieces (the model trained on the LM text
/// with `bpe_size` pieces). What a peer decoder needs to decode the same task (`ctxbench export`).
pub fn dataset_lexicon(
    reg: &Registry,
    name: &str,
    kind: GraphKind,
    bpe_size: usize,
    subset: Subset,
) -> Result<(ArpaLm, Lexicon), DataError> {
    let ds = Dataset::load(reg, name, Subset::Full)?;
    let lm = estimate_lm(reg, name, &ds, subset)?;
    let (lexicon, _, _) = graph_lexicon(reg, &ds, &lm, kind, bpe_size)?;
    Ok((lm, lexicon))
}

/// The lexicon, units and silence options of a graph of `kind` over the words of `lm`.
fn graph_lexicon(
    reg: &Registry,
    ds: &Dataset,
    lm: &ArpaLm,
    kind: GraphKind,
    bpe_size: usize,
) -> Result<(Lexicon, Vec<String>, Option<SilenceOptions>), DataError> {
    let words: Vec<&str> = lm
        .vocab()
        .iter()
        .map(String::as_str)
        .filter(|w| !w.starts_with('<') && !w.starts_with('#'))
        .collect();
    Ok(match kind {
        GraphKind::Hclg => {
            let pron = shipped_pronouncer(reg)?;
            let mut lex = Lexicon::new();
            for w in &words {
                if let Ok((prons, _)) = pron.pronounce(w) {
                    for phones in prons {
                        lex.push(LexiconEntry {
                            word: w.to_string(),
                            prob: 1.0,
                            phones,
                        });
                    }
                }
            }
            let mut units = vec!["SIL".to_string()];
            units.extend(CMU_PHONES.iter().map(|s| s.to_string()));
            let sil = SilenceOptions {
                unit: "SIL".into(),
                prob: 0.5,
            };
            (lex, units, Some(sil))
        }
        GraphKind::Tlg(_) => {
            let bpe =
                Bpe::train(&ds.lm_text, bpe_size).map_err(|e| DataError::Invalid(e.to_string()))?;
            let mut lex = Lexicon::new();
            for w in &words {
                lex.push(LexiconEntry {
                    word: w.to_string(),
                    prob: 1.0,
                    phones: bpe.encode_word(w),
                });
            }
            (lex, bpe.pieces().to_vec(), None)
        }
    })
}

/// Builds (or loads from `cache_dir`) the decoding graph of a dataset for `subset` (compiled
/// from [`dataset_lm`] of that subset).
pub fn dataset_graph(
    reg: &Registry,
    name: &str,
    kind: GraphKind,
    bpe_size: usize,
    cache_dir: &Path,
    subset: Subset,
) -> Result<GraphBuildReport, DataError> {
    dataset_graph_with(
        reg,
        name,
        kind,
        bpe_size,
        cache_dir,
        subset,
        &GraphExtras::default(),
    )
}

/// What a dataset's graph may carry beyond the LM and lexicon; each part is in the cache key.
#[derive(Debug, Clone, Copy, Default)]
pub struct GraphExtras<'a> {
    /// G boosted towards a phrase list before compiling (003 §3.1.3).
    pub gboost: Option<&'a GBoost>,
    /// The class slot for open-vocabulary contexts at this entry cost.
    pub context_slot: Option<f32>,
}

/// Like [`dataset_graph`], with `extras`: G boosted towards a phrase list before compiling (003
/// §3.1.3; the phrases and the discount are part of the cache key) and the context slot (its
/// entry cost too).
pub fn dataset_graph_with(
    reg: &Registry,
    name: &str,
    kind: GraphKind,
    bpe_size: usize,
    cache_dir: &Path,
    subset: Subset,
    extras: &GraphExtras<'_>,
) -> Result<GraphBuildReport, DataError> {
    let gboost = extras.gboost;
    let t0 = Instant::now();
    // A variant decodes with its base set's graph (same LM text and lexicon).
    let name = reg.get(name)?.graph_of(name);
    match reg.get(name)? {
        crate::registry::DatasetSpec::Files(f) => {
            return Err(DataError::Invalid(format!(
                "dataset {name} brings its own graph ({}); graphs are built only for the built-in datasets",
                f.graph
            )))
        }
        crate::registry::DatasetSpec::Audio(a) => {
            return Err(DataError::Invalid(format!(
                "dataset {name} is audio: its HCLG is built over its model's senones ({}) when it is decoded",
                a.model
            )))
        }
        _ => {}
    }
    let ds = Dataset::load(reg, name, Subset::Full)?;
    let spec = reg.get(name)?.lm().for_subset(subset);
    let mut key = CacheKey::new();
    key.add("dataset", name.as_bytes());
    for l in &ds.lm_text {
        key.add("s", l.as_bytes());
    }
    key.add("lm", spec.cache_key().as_bytes());
    if let GraphKind::Tlg(_) = kind {
        key.add("bpe", &bpe_size.to_le_bytes());
    }
    if let Some(b) = gboost {
        key.add("gboost-discount", &b.discount.to_le_bytes());
        for p in &b.phrases {
            key.add("gboost-phrase", p.join(" ").as_bytes());
        }
    }
    if let Some(c) = extras.context_slot {
        key.add("context-slot", &c.to_le_bytes());
    }
    let cache = GraphCache::new(cache_dir);
    // A boosted entry keeps its G-boosting report beside the graph; an entry without one (a
    // build stopped between the two writes) is rebuilt.
    let report_path = cache.entry(kind, &key).join(GBOOST_REPORT);
    let usable = gboost.is_none() || report_path.exists();
    let cached = if usable {
        cache
            .load(kind, &key)
            .map_err(|e| DataError::Invalid(e.to_string()))?
    } else {
        None
    };
    if let Some(graph) = cached {
        let gboost = match gboost {
            Some(_) => {
                let text = std::fs::read_to_string(&report_path)
                    .map_err(|e| DataError::Invalid(format!("{}: {e}", report_path.display())))?;
                Some(
                    serde_json::from_str(&text).map_err(|e| {
                        DataError::Invalid(format!("{}: {e}", report_path.display()))
                    })?,
                )
            }
            None => None,
        };
        return Ok(GraphBuildReport {
            graph,
            cached: true,
            lm_seconds: 0.0,
            skipped_words: Vec::new(),
            skipped_ngrams: 0,
            gboost,
            seconds: t0.elapsed().as_secs_f64(),
        });
    }
    let t = Instant::now();
    let lm = estimate_lm(reg, name, &ds, subset)?;
    let lm_seconds = t.elapsed().as_secs_f64();
    let (lexicon, units, silence) = graph_lexicon(reg, &ds, &lm, kind, bpe_size)?;
    let inputs = GraphInputs {
        lexicon: &lexicon,
        units: &units,
        lm: &lm,
        missing_words: MissingWords::Skip,
        silence,
        hmm: HmmTopology::default(),
        gboost,
        context_slot: extras.context_slot,
    };
    let (graph, report) =
        build_graph(kind, &inputs).map_err(|e| DataError::Invalid(e.to_string()))?;
    let dir = cache
        .store(&key, &graph)
        .map_err(|e| DataError::Invalid(e.to_string()))?;
    if let Some(r) = &report.gboost {
        let text = serde_json::to_string_pretty(r).expect("plain struct");
        ctx_core::io::write_atomic(&dir.join(GBOOST_REPORT), |w| {
            std::io::Write::write_all(w, text.as_bytes())
        })
        .map_err(|e| DataError::Invalid(e.to_string()))?;
    }
    Ok(GraphBuildReport {
        graph,
        cached: false,
        lm_seconds,
        skipped_words: report.skipped_words,
        skipped_ngrams: report.skipped_ngrams,
        gboost: report.gboost,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// A token-level n-gram LM of a dataset's LM text over `bpe`'s pieces (what NGPU-LM fuses into
/// an end-to-end model, 004: the text encoded with the model's BPE, Kneser-Ney of `order` with
/// count pruning `prune` per order from bigrams). Cached under `cache/token-lm/` keyed by the
/// text, the pieces and the settings (the estimate of a 1M-word text takes about a minute).
/// Returns the LM and whether it came from the cache.
pub fn dataset_token_lm(
    ds: &Dataset,
    bpe: &Bpe,
    order: usize,
    prune: &[u64],
    cache: &Path,
) -> Result<(ArpaLm, bool), DataError> {
    let mut hash = ctx_core::hash::Fnv1a::new();
    let mut eat = |bytes: &[u8]| hash.write(bytes);
    for l in &ds.lm_text {
        eat(l.as_bytes());
        eat(b"\n");
    }
    for p in bpe.pieces() {
        eat(p.as_bytes());
        eat(b" ");
    }
    eat(format!("order={order};prune={prune:?};kn-v1").as_bytes());
    let h = hash.finish();
    let dir = cache.join("token-lm");
    let path = dir.join(format!("{}-{h:016x}.arpa.gz", ds.name));
    if path.exists() {
        return Ok((ArpaLm::read(&path)?, true));
    }
    let sentences = crate::bpe::encode_sentences(bpe, &ds.lm_text);
    let opts = KnOptions {
        order,
        prune: prune.to_vec(),
        ..KnOptions::default()
    };
    let (lm, _) = estimate(&sentences, &opts).map_err(|e| DataError::Invalid(e.to_string()))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| DataError::Invalid(format!("creating {}: {e}", dir.display())))?;
    lm.write(&path)?;
    Ok((lm, false))
}

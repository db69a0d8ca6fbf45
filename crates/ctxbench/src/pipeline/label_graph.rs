//! A TLG from a CTC model's label list and an ARPA LM (`CtcDecoder.from_lm`, the
//! habit of pyctcdecode's `build_ctcdecoder(labels, kenlm_model_path)`): the LM's words spelled
//! in the labels ([`CtcLabels`]) make L, the graph is compiled as every TLG is
//! ([`ctx_graph::compile::build_graph`]) with the class slot for open-vocabulary contexts, and
//! kept in a graph cache keyed by the labels, the LM's bytes and the options.

use anyhow::{Context, Result};
use ctx_core::arpa::{ArpaLm, BOS, EOS};
use ctx_core::lexicon::{Lexicon, LexiconEntry, LexiconFormat};
use ctx_graph::cache::{CacheKey, GraphCache};
use ctx_graph::compile::{build_graph, Graph, GraphInputs, GraphKind};
use ctx_graph::ctc::CtcTopology;
use ctx_graph::grammar::MissingWords;
use ctx_graph::hmm::HmmTopology;
use ctx_graph::labels::CtcLabels;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How a label graph is built.
#[derive(Debug, Clone)]
pub struct LabelGraphOptions {
    /// The CTC topology of T.
    pub topology: CtcTopology,
    /// The class slot's entry cost (open-vocabulary contexts); `None`: no slot.
    pub slot_entry: Option<f32>,
    /// The graph cache's folder (`None`: build every time).
    pub cache: Option<PathBuf>,
    /// A lexicon (`word piece…` per line, Kaldi's `lexicon.txt`) spelling its words in the
    /// labels, as the model was trained to (the LM's other words are spelled by the labels).
    pub lexicon: Option<PathBuf>,
}

/// A label graph and how it was made.
pub struct LabelGraph {
    /// The TLG (input labels: blank = 1, unit `u` = `u + 1`; map them with
    /// [`CtcLabels::label_map`]).
    pub graph: Graph,
    /// The LM's words the labels cannot spell (left out of L, with their n-grams).
    pub unspellable: Vec<String>,
    /// The cache entry it came from or went to.
    pub entry: Option<PathBuf>,
    /// Whether it came from the cache.
    pub cached: bool,
    /// Seconds spent reading the LM and compiling (or loading).
    pub seconds: f64,
    /// The lexicon's spellings as unit ids (first pronunciation of each word), for contexts.
    pub spellings: HashMap<String, Vec<u32>>,
}

/// The lexicon file's words spelled in the labels' units (every unit must be a label).
fn read_lexicon(path: &Path, labels: &CtcLabels) -> Result<(Lexicon, HashMap<String, Vec<u32>>)> {
    let lex = Lexicon::read(path, LexiconFormat::Kaldi)
        .with_context(|| format!("lexicon: {}", path.display()))?;
    let units: HashMap<String, u32> = labels
        .units()
        .into_iter()
        .enumerate()
        .map(|(i, u)| (u, i as u32 + 1))
        .collect();
    let mut spellings = HashMap::new();
    for e in lex.entries() {
        let ids = e
            .phones
            .iter()
            .map(|p| units.get(p).copied())
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "lexicon: {}: word '{}' is spelled with a piece that is not a label: {}",
                    path.display(),
                    e.word,
                    e.phones.join(" ")
                )
            })?;
        spellings.entry(e.word.clone()).or_insert(ids);
    }
    Ok((lex, spellings))
}

/// Name of the cache entry's list of unspellable words.
const UNSPELLABLE: &str = "unspellable.txt";

/// Builds (or loads from the cache) the TLG of `arpa` over `labels`.
pub fn label_graph(
    labels: &CtcLabels,
    arpa: &Path,
    opts: &LabelGraphOptions,
) -> Result<LabelGraph> {
    let t = Instant::now();
    let kind = GraphKind::Tlg(opts.topology);
    let bytes = std::fs::read(arpa).with_context(|| format!("lm: {}", arpa.display()))?;
    let mut key = CacheKey::new();
    key.add("what", b"label-graph/1")
        .add("labels", labels.labels().join("\u{1}").as_bytes())
        .add("blank", &labels.blank().to_le_bytes())
        .add("delimiter", format!("{:?}", labels.delimiter()).as_bytes())
        .add("slot", format!("{:?}", opts.slot_entry).as_bytes())
        .add("arpa", &bytes);
    let lexicon_file = opts
        .lexicon
        .as_deref()
        .map(|p| read_lexicon(p, labels))
        .transpose()?;
    if let Some(p) = &opts.lexicon {
        key.add(
            "lexicon",
            &std::fs::read(p).with_context(|| format!("lexicon: {}", p.display()))?,
        );
    }
    let spellings = lexicon_file
        .as_ref()
        .map(|(_, s)| s.clone())
        .unwrap_or_default();
    let cache = opts.cache.as_ref().map(GraphCache::new);
    if let Some(c) = &cache {
        if let Some(graph) = c.load(kind, &key)? {
            let entry = c.entry(kind, &key);
            let unspellable = std::fs::read_to_string(entry.join(UNSPELLABLE))
                .map(|s| s.lines().map(str::to_string).collect())
                .unwrap_or_default();
            return Ok(LabelGraph {
                graph,
                unspellable,
                entry: Some(entry),
                cached: true,
                seconds: t.elapsed().as_secs_f64(),
                spellings,
            });
        }
    }
    drop(bytes);
    let lm = ArpaLm::read(arpa).with_context(|| format!("lm: {}", arpa.display()))?;
    let words = lm
        .vocab()
        .iter()
        .filter(|w| *w != BOS && *w != EOS && *w != "<unk>");
    // The lexicon's words as it spells them, the others by the labels.
    let (lexicon, unspellable) = match &lexicon_file {
        Some((file, _)) => {
            let (mut lex, missing) =
                labels.lexicon(words.filter(|w| file.pronunciations(w).next().is_none()));
            for e in file.entries() {
                lex.push(LexiconEntry::clone(e));
            }
            (lex, missing)
        }
        None => labels.lexicon(words),
    };
    if lexicon.is_empty() {
        anyhow::bail!(
            "lm: {}: the labels spell none of its {} words (labels {:?}…)",
            arpa.display(),
            lm.vocab().len(),
            &labels.labels()[..labels.labels().len().min(8)]
        );
    }
    let units = labels.units();
    let (graph, _) = build_graph(
        kind,
        &GraphInputs {
            lexicon: &lexicon,
            units: &units,
            lm: &lm,
            missing_words: MissingWords::Skip,
            silence: labels.delimiter_option(),
            hmm: HmmTopology::default(),
            gboost: None,
            context_slot: opts.slot_entry,
        },
    )
    .with_context(|| format!("lm: {}", arpa.display()))?;
    let entry = match &cache {
        Some(c) => {
            let dir = c.store(&key, &graph)?;
            let mut text = unspellable.join("\n");
            text.push('\n');
            ctx_core::io::write_atomic(&dir.join(UNSPELLABLE), |w| w.write_all(text.as_bytes()))?;
            Some(dir)
        }
        None => None,
    };
    Ok(LabelGraph {
        graph,
        unspellable,
        entry,
        cached: false,
        seconds: t.elapsed().as_secs_f64(),
        spellings,
    })
}

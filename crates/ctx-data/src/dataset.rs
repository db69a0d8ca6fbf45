//! Datasets in memory: utterances with reference words, durations, entity spans and biasing
//! lists, loaded from the registry; their statistics; and `prepare`, which writes them as a
//! Kaldi-style data folder any tool can read.

use crate::atc::{self, AtcResources, AtcSimConfig};
use crate::earnings::{self, Segment};
use crate::pronounce::Pronouncer;
pub use crate::registry::Subset;
use crate::registry::{DatasetSpec, Registry};
pub use crate::utterance::{DataError, Utterance};
use ctx_core::bias::{BiasList, BiasTable};
use ctx_core::io::write_atomic;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the global list of rare words (ATC sets with `rare_waypoints`): the targets of the
/// rare-word precision/recall/F1 (003 Table 3.4) and the list G-boosting and lattice biasing use.
pub const RARE_LIST: &str = "rare";

/// Whose list an utterance is biased with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListScope {
    /// One list per utterance (ATC radar lists).
    Utterance,
    /// One list per document (Earnings per-file oracle lists).
    Document,
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Registry name (with `-quick` for the quick subset).
    pub name: String,
    /// The utterances in order.
    pub utterances: Vec<Utterance>,
    /// Biasing lists keyed by utterance or document id.
    pub lists: BTreeMap<String, BiasList>,
    /// What `lists` is keyed by.
    pub list_scope: ListScope,
    /// Extra named lists (Earnings: the global `oracle` and `distractor` lists).
    pub global_lists: BTreeMap<String, BiasList>,
    /// Named per-document lists: name → document → list (Earnings: ConEC's `conec`, each
    /// call's words from its slides, press release and participants). `list:NAME` reads them.
    pub doc_lists: BTreeMap<String, BTreeMap<String, BiasList>>,
    /// LM training sentences.
    pub lm_text: Vec<String>,
    /// Whether utterances carry a callsign ground truth (ATC).
    pub has_callsigns: bool,
    /// Earnings: where each segment comes from.
    pub segments: Vec<Segment>,
    /// Earnings: the folder the calls were read from (for per-segment `.nlp` slices).
    pub source: Option<PathBuf>,
}

/// Figures of `ctxbench data stats`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DatasetStats {
    /// Dataset name.
    pub name: String,
    /// Utterances (segments for Earnings).
    pub utterances: usize,
    /// Documents (Earnings calls; 0 for ATC).
    pub documents: usize,
    /// Hours of audio.
    pub hours: f64,
    /// Reference words.
    pub words: usize,
    /// Entity spans (callsigns for ATC, PERSON/ORG for Earnings).
    pub entities: usize,
    /// Median number of list entries (phrases) an utterance is biased with.
    pub median_list_entities: f64,
    /// Share of distinct list words missing from the LM vocabulary.
    pub list_oov_rate: f64,
    /// Share of list word tokens missing from the LM vocabulary.
    pub list_oov_token_rate: f64,
    /// Share of NO_CALLSIGN utterances (ATC; null otherwise).
    pub no_callsign_share: Option<f64>,
    /// Words of the LM training text.
    pub lm_words: usize,
    /// Sizes of the global lists (Earnings oracle/distractor).
    pub global_lists: BTreeMap<String, usize>,
    /// Median phrases per document of each named per-document list (Earnings `conec`).
    pub doc_lists: BTreeMap<String, f64>,
}

fn median(v: &mut [usize]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    }
}

/// Writes each Earnings segment as `nlp_references/<utt>.nlp` (the header and the segment's rows
/// of the call's `.nlp` file) with the call's `wer_tags/<utt>.wer_tag.json` and
/// `normalizations/<utt>.norm.json`, so `ctxbench score --format nlp` scores segment hypotheses
/// with fstalign rules.
fn write_nlp_slices(
    src: &Path,
    utts: &[Utterance],
    segs: &[Segment],
    out: &Path,
) -> Result<(), DataError> {
    for d in ["nlp_references", "wer_tags", "normalizations"] {
        std::fs::create_dir_all(out.join(d)).map_err(|e| ctx_core::CoreError::io(out, e))?;
    }
    let mut cache: BTreeMap<String, (String, Option<String>, Option<String>)> = BTreeMap::new();
    for (u, s) in utts.iter().zip(segs) {
        if !cache.contains_key(&s.doc) {
            let find = |dir: &str, suffix: &str| {
                ctx_core::io::find_maybe_gz(&src.join(dir).join(format!("{}{suffix}", s.doc)))
            };
            let nlp_path = find("nlp_references", ".nlp").ok_or_else(|| {
                DataError::Invalid(format!(
                    "{}: no .nlp file for call {}",
                    src.display(),
                    s.doc
                ))
            })?;
            let nlp = ctx_core::io::read_text(&nlp_path)?;
            let tags = find("wer_tags", ".wer_tag.json")
                .map(|p| ctx_core::io::read_text(&p))
                .transpose()?;
            let norm = find("normalizations", ".norm.json")
                .map(|p| ctx_core::io::read_text(&p))
                .transpose()?;
            cache.clear();
            cache.insert(s.doc.clone(), (nlp, tags, norm));
        }
        let (nlp, tags, norm) = &cache[&s.doc];
        let mut rows = nlp.lines();
        let header = rows.next().unwrap_or_default();
        let body: Vec<&str> = rows
            .skip(s.tokens.start)
            .take(s.tokens.end - s.tokens.start)
            .collect();
        write_atomic(
            &out.join("nlp_references").join(format!("{}.nlp", u.id)),
            |w| {
                writeln!(w, "{header}")?;
                for r in &body {
                    writeln!(w, "{r}")?;
                }
                Ok(())
            },
        )?;
        if let Some(t) = tags {
            write_atomic(
                &out.join("wer_tags").join(format!("{}.wer_tag.json", u.id)),
                |w| w.write_all(t.as_bytes()),
            )?;
        }
        if let Some(n) = norm {
            write_atomic(
                &out.join("normalizations")
                    .join(format!("{}.norm.json", u.id)),
                |w| w.write_all(n.as_bytes()),
            )?;
        }
    }
    Ok(())
}

/// Reads an LM text entry's sentences.
fn lm_text_of(reg: &Registry, name: &str) -> Result<Vec<String>, DataError> {
    match reg.get(name)? {
        DatasetSpec::LmText { path, .. } => Ok(ctx_core::io::read_text(&reg.resolve(path))?
            .lines()
            .map(str::to_string)
            .filter(|l| !l.trim().is_empty())
            .collect()),
        _ => Err(DataError::Invalid(format!(
            "dataset '{name}' is not an lm-text entry"
        ))),
    }
}

/// The CMUdict pronouncer shipped with the repository.
pub fn shipped_pronouncer(reg: &Registry) -> Result<Pronouncer, DataError> {
    Ok(Pronouncer::from_cmudict(
        &reg.resolve("datasets/cmudict/cmudict.dict.gz"),
    )?)
}

/// Fails on the first utterance id that appears twice in `utts` (dataset `name`).
fn check_unique_ids(name: &str, utts: &[Utterance]) -> Result<(), DataError> {
    let mut seen = BTreeSet::new();
    for (i, u) in utts.iter().enumerate() {
        if !seen.insert(u.id.as_str()) {
            return Err(DataError::Invalid(format!(
                "dataset {name}: utterance id '{}' appears twice (again as utterance {})",
                u.id,
                i + 1
            )));
        }
    }
    Ok(())
}

impl Dataset {
    /// Loads (or generates) dataset `name` of the registry.
    /// Utterance ids are unique (an error names the first repeated one): results, boosters and
    /// per-utterance lists are keyed by id.
    pub fn load(reg: &Registry, name: &str, subset: Subset) -> Result<Self, DataError> {
        let ds = Self::load_any(reg, name, subset)?;
        check_unique_ids(&ds.name, &ds.utterances)?;
        Ok(ds)
    }

    fn load_any(reg: &Registry, name: &str, subset: Subset) -> Result<Self, DataError> {
        let spec = reg.get(name)?.clone();
        let shown = match subset {
            Subset::Full => name.to_string(),
            Subset::Quick => format!("{name}-quick"),
        };
        match spec {
            DatasetSpec::Earnings {
                path,
                references,
                doc_lists,
                lm_text,
                segment_s,
                entity_classes,
                quick_docs,
                quick_segments,
                ..
            } => load_earnings(
                reg,
                name,
                shown,
                subset,
                EarningsSource {
                    path,
                    references,
                    doc_lists,
                    lm_text,
                    segment_s,
                    entity_classes,
                    quick_docs,
                    quick_segments,
                },
            ),
            DatasetSpec::AtcSim {
                resources,
                seed,
                utterances,
                radar_aircraft,
                dwell_s,
                no_callsign_share,
                known_minor_share,
                phone_s,
                edge_silence_s,
                quick_utterances,
                lm_sentences,
                rare_waypoints,
                ..
            } => {
                let res = AtcResources::load(&reg.resolve(&resources))?;
                let cfg = AtcSimConfig {
                    seed,
                    utterances,
                    radar_aircraft,
                    dwell_s,
                    no_callsign_share,
                    known_minor_share,
                    lm_sentences,
                    rare_waypoints,
                    ..AtcSimConfig::default()
                };
                let sim = atc::generate(&res, &cfg, name)?;
                let pron = shipped_pronouncer(reg)?;
                let take = match subset {
                    Subset::Full => sim.utterances.len(),
                    Subset::Quick => quick_utterances.min(sim.utterances.len()),
                };
                let (utts, lists) = atc_utterances(
                    sim.utterances.into_iter().take(take),
                    &res,
                    &pron,
                    (phone_s, edge_silence_s),
                )?;
                // The rare waypoints are the set's one global list (003 Table 3.4's targets).
                let mut global_lists = BTreeMap::new();
                if !sim.rare_words.is_empty() {
                    let phrases = sim.rare_words.iter().map(|w| vec![w.clone()]).collect();
                    global_lists.insert(RARE_LIST.to_string(), BiasList { phrases });
                }
                Ok(Self {
                    name: shown,
                    utterances: utts,
                    lists,
                    list_scope: ListScope::Utterance,
                    global_lists,
                    doc_lists: BTreeMap::new(),
                    lm_text: sim.lm_text,
                    has_callsigns: true,
                    segments: Vec::new(),
                    source: None,
                })
            }
            DatasetSpec::Files(f) => load_files(reg, f.sources(), shown, subset),
            DatasetSpec::Audio(a) => match &a.text_of {
                Some(src) => load_spoken(reg, &a, src, shown, subset),
                None => load_files(reg, a.sources(), shown, subset),
            },
            DatasetSpec::LmText { .. } => Err(DataError::Invalid(format!(
                "'{name}' is LM training text only, not a test set"
            ))),
        }
    }

    /// The list an utterance is biased with.
    pub fn list_for(&self, u: &Utterance) -> Option<&BiasList> {
        match self.list_scope {
            ListScope::Utterance => self.lists.get(&u.id),
            ListScope::Document => u.doc.as_ref().and_then(|d| self.lists.get(d)),
        }
    }

    /// Whether `list:NAME` names a list of this dataset (a global or a per-document one).
    pub fn has_list(&self, name: &str) -> bool {
        self.global_lists.contains_key(name) || self.doc_lists.contains_key(name)
    }

    /// The named list `u` is biased with under `list:NAME`: the global list, or the one of its
    /// document; `None` when the dataset has no such list (or `u` no document).
    pub fn named_list(&self, name: &str, u: &Utterance) -> Option<&BiasList> {
        match self.global_lists.get(name) {
            Some(l) => Some(l),
            None => self.doc_lists.get(name)?.get(u.doc.as_deref()?),
        }
    }

    /// The names `list:NAME` accepts, global lists first.
    pub fn list_names(&self) -> Vec<&str> {
        self.global_lists
            .keys()
            .chain(self.doc_lists.keys())
            .map(String::as_str)
            .collect()
    }

    /// The LM vocabulary (distinct words of the LM text).
    pub fn lm_vocabulary(&self) -> BTreeSet<&str> {
        self.lm_text
            .iter()
            .flat_map(|l| l.split_whitespace())
            .collect()
    }

    /// Statistics of the dataset.
    pub fn stats(&self) -> DatasetStats {
        let vocab = self.lm_vocabulary();
        let mut sizes = Vec::with_capacity(self.utterances.len());
        let mut list_words: BTreeSet<&str> = BTreeSet::new();
        let (mut tokens, mut oov_tokens) = (0usize, 0usize);
        for u in &self.utterances {
            sizes.push(self.list_for(u).map_or(0, |l| l.len()));
        }
        for l in self.lists.values() {
            for p in &l.phrases {
                for w in p {
                    tokens += 1;
                    if !vocab.contains(w.as_str()) {
                        oov_tokens += 1;
                    }
                    list_words.insert(w);
                }
            }
        }
        let oov_types = list_words.iter().filter(|w| !vocab.contains(*w)).count();
        let docs: BTreeSet<&str> = self
            .utterances
            .iter()
            .filter_map(|u| u.doc.as_deref())
            .collect();
        DatasetStats {
            name: self.name.clone(),
            utterances: self.utterances.len(),
            documents: docs.len(),
            hours: self.utterances.iter().map(|u| u.duration_s).sum::<f64>() / 3600.0,
            words: self.utterances.iter().map(|u| u.words.len()).sum(),
            entities: self.utterances.iter().map(|u| u.entities.len()).sum(),
            median_list_entities: median(&mut sizes),
            list_oov_rate: if list_words.is_empty() {
                0.0
            } else {
                oov_types as f64 / list_words.len() as f64
            },
            list_oov_token_rate: if tokens == 0 {
                0.0
            } else {
                oov_tokens as f64 / tokens as f64
            },
            no_callsign_share: self.has_callsigns.then(|| {
                self.utterances
                    .iter()
                    .filter(|u| u.callsign.is_none())
                    .count() as f64
                    / self.utterances.len().max(1) as f64
            }),
            lm_words: self
                .lm_text
                .iter()
                .map(|l| l.split_whitespace().count())
                .sum(),
            global_lists: self
                .global_lists
                .iter()
                .map(|(k, v)| (k.clone(), v.len()))
                .collect(),
            doc_lists: self
                .doc_lists
                .iter()
                .map(|(k, per_doc)| {
                    let mut sizes: Vec<usize> = per_doc.values().map(BiasList::len).collect();
                    (k.clone(), median(&mut sizes))
                })
                .collect(),
        }
    }

    /// Writes the dataset as a data folder: `text`, `utt2dur`, `entities.tsv`, the lists
    /// (`bias_table.tsv` per utterance, or `bias/<doc>.txt` per document plus the global lists
    /// and each named per-document list as `bias-<name>/<doc>.txt`),
    /// `callsigns.tsv` (ATC), `utt2doc` and `segments.tsv` (Earnings), `lm_text.txt.gz` and
    /// `stats.json`. Everything goes to a temporary folder renamed at the end, so a failed run
    /// leaves no half-written dataset.
    pub fn prepare(&self, out: &Path) -> Result<PathBuf, DataError> {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| ctx_core::CoreError::io(parent, e))?;
        let tmp = parent.join(format!(
            ".{}.tmp-{}",
            out.file_name().and_then(|n| n.to_str()).unwrap_or("data"),
            std::process::id()
        ));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| ctx_core::CoreError::io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| ctx_core::CoreError::io(&tmp, e))?;
        let lines = |name: &str, f: &dyn Fn(&mut dyn Write) -> std::io::Result<()>| {
            write_atomic(&tmp.join(name), |w| f(w))
        };
        lines("text", &|w| {
            for u in &self.utterances {
                writeln!(w, "{} {}", u.id, u.words.join(" "))?;
            }
            Ok(())
        })?;
        lines("utt2dur", &|w| {
            for u in &self.utterances {
                writeln!(w, "{} {:.2}", u.id, u.duration_s)?;
            }
            Ok(())
        })?;
        lines("entities.tsv", &|w| {
            for u in &self.utterances {
                for (c, s, e) in &u.entities {
                    writeln!(w, "{}\t{c}\t{s}\t{e}\t{}", u.id, u.words[*s..*e].join(" "))?;
                }
            }
            Ok(())
        })?;
        match self.list_scope {
            ListScope::Utterance => {
                let table = BiasTable {
                    lists: self.lists.clone(),
                };
                table.write(&tmp.join("bias_table.tsv"))?;
            }
            ListScope::Document => {
                std::fs::create_dir_all(tmp.join("bias"))
                    .map_err(|e| ctx_core::CoreError::io(&tmp, e))?;
                for (doc, l) in &self.lists {
                    l.write(&tmp.join("bias").join(format!("{doc}.txt")))?;
                }
                for (name, l) in &self.global_lists {
                    l.write(&tmp.join(format!("{name}_list.txt")))?;
                }
                for (name, per_doc) in &self.doc_lists {
                    let dir = tmp.join(format!("bias-{name}"));
                    std::fs::create_dir_all(&dir).map_err(|e| ctx_core::CoreError::io(&dir, e))?;
                    for (doc, l) in per_doc {
                        l.write(&dir.join(format!("{doc}.txt")))?;
                    }
                }
                lines("utt2doc", &|w| {
                    for u in &self.utterances {
                        writeln!(w, "{} {}", u.id, u.doc.as_deref().unwrap_or(""))?;
                    }
                    Ok(())
                })?;
                if let Some(src) = &self.source {
                    write_nlp_slices(src, &self.utterances, &self.segments, &tmp)?;
                }
                lines("segments.tsv", &|w| {
                    writeln!(w, "utt\tdoc\tfirst_token\tend_token\tstart_s\tend_s")?;
                    for (u, s) in self.utterances.iter().zip(&self.segments) {
                        writeln!(
                            w,
                            "{}\t{}\t{}\t{}\t{:.2}\t{:.2}",
                            u.id, s.doc, s.tokens.start, s.tokens.end, s.start_s, s.end_s
                        )?;
                    }
                    Ok(())
                })?;
            }
        }
        if self.has_callsigns {
            lines("callsigns.tsv", &|w| {
                for u in &self.utterances {
                    writeln!(
                        w,
                        "{}\t{}",
                        u.id,
                        u.callsign.as_deref().unwrap_or("NO_CALLSIGN")
                    )?;
                }
                Ok(())
            })?;
        }
        write_atomic(&tmp.join("lm_text.txt.gz"), |w| {
            for l in &self.lm_text {
                writeln!(w, "{l}")?;
            }
            Ok(())
        })?;
        let stats = serde_json::to_string_pretty(&self.stats()).expect("stats serialise");
        lines("stats.json", &|w| writeln!(w, "{stats}"))?;
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| ctx_core::CoreError::io(out, e))?;
        }
        std::fs::rename(&tmp, out).map_err(|e| ctx_core::CoreError::io(out, e))?;
        Ok(out.to_path_buf())
    }
}

/// Utterances of a quick subset of a `files` dataset.
const FILES_QUICK_UTTERANCES: usize = 20;

/// An `audio` dataset speaking utterances of the built-in dataset `src`: the utterances its
/// `wav.scp` lists (in that order, durations from the WAV headers) with `src`'s transcripts,
/// entities, lists and LM text. An id `src` does not have is an error naming it.
fn load_spoken(
    reg: &Registry,
    spec: &crate::registry::AudioSpec,
    src: &str,
    name: String,
    subset: Subset,
) -> Result<Dataset, DataError> {
    if matches!(
        reg.get(src)?,
        DatasetSpec::Audio(_) | DatasetSpec::Files(_) | DatasetSpec::LmText { .. }
    ) {
        return Err(DataError::Invalid(format!(
            "dataset {name}: text_of = \"{src}\" must name a built-in (earnings or atc-sim) dataset"
        )));
    }
    let dir = reg.resolve(&spec.data);
    let scp = spec.wav_scp(reg)?;
    let table = ctx_core::corpus::read_text_table(&scp)?;
    let mut source = Dataset::load(reg, src, Subset::Full)?;
    let at: BTreeMap<&str, usize> = source
        .utterances
        .iter()
        .enumerate()
        .map(|(i, u)| (u.id.as_str(), i))
        .collect();
    let mut picked = Vec::with_capacity(table.len());
    for (id, f) in &table {
        let &i = at.get(id.as_str()).ok_or_else(|| {
            DataError::Invalid(format!(
                "{}: utterance {id} is not an utterance of {src}",
                scp.display()
            ))
        })?;
        let [path] = f.as_slice() else {
            return Err(DataError::Invalid(format!(
                "{}: utterance {id}: expected one WAV path",
                scp.display()
            )));
        };
        let secs =
            ctx_core::corpus::kaldi::wav_duration(&ctx_core::corpus::resolve_wav(&dir, path))?;
        picked.push((i, secs));
    }
    if subset == Subset::Quick {
        picked.truncate(FILES_QUICK_UTTERANCES);
    }
    let parallel = source.segments.len() == source.utterances.len();
    let mut utterances = Vec::with_capacity(picked.len());
    let mut segments = Vec::new();
    for &(i, secs) in &picked {
        let mut u = source.utterances[i].clone();
        u.duration_s = secs;
        utterances.push(u);
        if parallel {
            segments.push(source.segments[i].clone());
        }
    }
    Ok(Dataset {
        name,
        utterances,
        lists: std::mem::take(&mut source.lists),
        list_scope: source.list_scope,
        global_lists: std::mem::take(&mut source.global_lists),
        doc_lists: std::mem::take(&mut source.doc_lists),
        lm_text: std::mem::take(&mut source.lm_text),
        has_callsigns: source.has_callsigns,
        segments,
        source: source.source.take(),
    })
}

/// ATC utterances as the dataset holds them: each one's duration from its phones (`phone_s`
/// a phone, `edge_s` of silence at each end), its callsign span as the entity, and its radar
/// list (every spoken variant of each callsign in the area) keyed by utterance.
fn atc_utterances(
    sim: impl Iterator<Item = atc::AtcUtterance>,
    res: &AtcResources,
    pron: &Pronouncer,
    (phone_s, edge_silence_s): (f64, f64),
) -> Result<(Vec<Utterance>, BTreeMap<String, BiasList>), DataError> {
    let mut utts = Vec::new();
    let mut lists = BTreeMap::new();
    for u in sim {
        let mut phones = 0usize;
        for w in &u.words {
            let (p, _) = pron
                .pronounce(w)
                .map_err(|e| DataError::Invalid(format!("utterance {}: {e}", u.id)))?;
            phones += p[0].len();
        }
        let duration_s = 2.0 * edge_silence_s + phone_s * phones as f64;
        let mut phrases: Vec<Vec<String>> = Vec::new();
        for cs in &u.radar {
            let (code, id) = atc::split_callsign(cs);
            phrases.extend(atc::callsign_variants(&res.telephony[code], id));
        }
        lists.insert(u.id.clone(), BiasList { phrases });
        let entities = u
            .callsign_span
            .map(|(s, e)| vec![("CALLSIGN".to_string(), s, e)])
            .unwrap_or_default();
        utts.push(Utterance {
            id: u.id,
            doc: None,
            words: u.words,
            duration_s: (duration_s * 100.0).round() / 100.0,
            entities,
            callsign: u.callsign,
        });
    }
    Ok((utts, lists))
}

/// What an Earnings registry entry says about where its calls, lists and text are.
struct EarningsSource {
    path: String,
    references: Option<String>,
    doc_lists: BTreeMap<String, String>,
    lm_text: String,
    segment_s: f64,
    entity_classes: Vec<String>,
    quick_docs: Vec<String>,
    quick_segments: usize,
}

/// An Earnings set: its calls cut into segments (the quick subset: the first segments of the
/// quick calls), the per-call oracle lists, the named per-call lists, the LM text.
fn load_earnings(
    reg: &Registry,
    name: &str,
    shown: String,
    subset: Subset,
    src: EarningsSource,
) -> Result<Dataset, DataError> {
    let EarningsSource {
        path,
        references,
        doc_lists,
        lm_text,
        segment_s,
        entity_classes,
        quick_docs,
        quick_segments,
    } = src;
    let classes: BTreeSet<String> = entity_classes.into_iter().collect();
    let references = references.map(|r| reg.resolve(&r));
    let e = earnings::load_segments(
        &reg.resolve(&path),
        references.as_deref(),
        segment_s,
        &classes,
    )?;
    let (mut utterances, mut segments) = (e.utterances, e.segments);
    if subset == Subset::Quick {
        let keep: Vec<bool> = {
            let mut per_doc: BTreeMap<&str, usize> = BTreeMap::new();
            segments
                .iter()
                .map(|s| {
                    let n = per_doc.entry(s.doc.as_str()).or_default();
                    *n += 1;
                    quick_docs.contains(&s.doc) && *n <= quick_segments
                })
                .collect()
        };
        let mut k = keep.iter();
        utterances.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        segments.retain(|_| *k.next().unwrap());
    }
    let docs: BTreeSet<&str> = segments.iter().map(|s| s.doc.as_str()).collect();
    let lists = e
        .doc_lists
        .into_iter()
        .filter(|(d, _)| docs.contains(d.as_str()))
        .collect();
    let doc_lists = doc_lists
        .iter()
        .map(|(list, dir)| {
            let lists = earnings::read_doc_lists(&reg.resolve(dir), docs.iter().copied())
                .map_err(|e| DataError::Invalid(format!("dataset {name}, list '{list}': {e}")))?;
            Ok((list.clone(), lists))
        })
        .collect::<Result<_, DataError>>()?;
    Ok(Dataset {
        name: shown,
        utterances,
        lists,
        list_scope: ListScope::Document,
        global_lists: e.global_lists,
        doc_lists,
        lm_text: lm_text_of(reg, &lm_text)?,
        has_callsigns: false,
        segments,
        source: Some(references.unwrap_or_else(|| reg.resolve(&path))),
    })
}

/// A `files` or `audio` dataset: the Kaldi data dir's utterances, entities and biasing lists
/// (the scores or audio and the graph are opened by the decoding pipeline).
fn load_files(
    reg: &Registry,
    f: crate::registry::TextSources<'_>,
    name: String,
    subset: Subset,
) -> Result<Dataset, DataError> {
    use ctx_core::metrics::reference::{entity_spans, EntityTable};
    use ctx_core::metrics::TextNorm;
    let data = ctx_core::corpus::KaldiDataDir::read(&reg.resolve(f.data))?;
    let mut kaldi = data.utterances;
    if subset == Subset::Quick {
        kaldi.truncate(FILES_QUICK_UTTERANCES);
    }
    let entities = match f.entities {
        Some(p) => EntityTable::read(&reg.resolve(p), TextNorm::Exact)?,
        None => EntityTable::default(),
    };
    let ids: BTreeSet<&str> = kaldi.iter().map(|u| u.id.as_str()).collect();
    if subset == Subset::Full {
        if let Some(stray) = entities.entities.keys().find(|k| !ids.contains(k.as_str())) {
            return Err(DataError::Invalid(format!(
                "{}: utterance {stray} is not in {}/text",
                f.entities.unwrap_or_default(),
                f.data
            )));
        }
    }
    let mut utterances = Vec::with_capacity(kaldi.len());
    for u in kaldi {
        let spans = match entities.entities.get(&u.id) {
            Some(e) => entity_spans(&u.id, &u.words, e)?,
            None => Vec::new(),
        };
        utterances.push(Utterance {
            doc: u.recording.clone(),
            id: u.id,
            words: u.words,
            duration_s: u.duration_s,
            entities: spans,
            callsign: None,
        });
    }
    let mut global_lists = BTreeMap::new();
    for (n, p) in f.lists {
        global_lists.insert(n.clone(), BiasList::read(&reg.resolve(p), false)?);
    }
    let global = match f.bias_list {
        Some(p) => {
            let l = BiasList::read(&reg.resolve(p), false)?;
            global_lists.insert("global".to_string(), l.clone());
            Some(l)
        }
        None => None,
    };
    let (lists, list_scope) = if let Some(p) = f.bias_utt {
        let t = BiasTable::read(&reg.resolve(p), false)?;
        // A list for an utterance `text` does not have is a typo or another set's table (as
        // for `entities`); on the quick subset the others are simply not loaded.
        if subset == Subset::Full {
            let known: BTreeSet<&str> = utterances.iter().map(|u| u.id.as_str()).collect();
            if let Some(stray) = t.lists.keys().find(|k| !known.contains(k.as_str())) {
                return Err(DataError::Invalid(format!(
                    "{p}: utterance {stray} is not in {}/text ({} of its {} lists name no utterance)",
                    f.data,
                    t.lists.keys().filter(|k| !known.contains(k.as_str())).count(),
                    t.lists.len()
                )));
            }
        }
        (t.lists, ListScope::Utterance)
    } else if let Some(p) = f.bias_docs {
        if utterances.iter().any(|u| u.doc.is_none()) {
            return Err(DataError::Invalid(format!(
                "{}: per-document lists need `segments` in {} to say each utterance's recording",
                p, f.data
            )));
        }
        (
            BiasList::read_dir(&reg.resolve(p), false)?,
            ListScope::Document,
        )
    } else if let Some(l) = global {
        // One list for every utterance.
        let lists = utterances
            .iter()
            .map(|u| (u.id.clone(), l.clone()))
            .collect();
        (lists, ListScope::Utterance)
    } else {
        (BTreeMap::new(), ListScope::Utterance)
    };
    Ok(Dataset {
        name,
        utterances,
        lists,
        list_scope,
        global_lists,
        doc_lists: BTreeMap::new(),
        lm_text: Vec::new(),
        has_callsigns: false,
        segments: Vec::new(),
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_utterance_id_is_an_error_naming_it() {
        let u = |id: &str| Utterance {
            id: id.into(),
            doc: None,
            words: vec!["a".into()],
            duration_s: 1.0,
            entities: Vec::new(),
            callsign: None,
        };
        assert!(check_unique_ids("d", &[u("x"), u("y")]).is_ok());
        let e = check_unique_ids("d", &[u("x"), u("y"), u("x")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dataset d: utterance id 'x' appears twice (again as utterance 3)"
        );
    }
}

//! What every method family shares: the [`Family`] trait the runner calls, the context a group
//! run reads, and the helpers the families build their points from (settings, setup loading,
//! decoder settings, measures, records).

pub use crate::experiment::{Component, FamilySpec};
use crate::experiment::{Point, SettingSpec};
use crate::pipeline::{self, DecodeRun, DecodeSettings, Output, Setup, SetupOptions};
use crate::results::PointRecord;
use crate::settings::{Block, Common};
use crate::version::CODE_VERSION;
use anyhow::{bail, Result};
use ctx_core::metrics::score::ScoreTotals;
use ctx_data::dataset::{Dataset, Utterance};
use ctx_data::registry::Registry;
use std::collections::BTreeMap;
use std::path::Path;

/// The setup loaded last, by its key: consecutive groups with one setup share it.
pub type SetupCache = Option<(String, Setup)>;

/// What a family's group run reads besides its group (indices into `points`).
pub struct GroupContext<'a> {
    /// The dataset registry.
    pub reg: &'a Registry,
    /// The graph cache folder.
    pub cache: &'a Path,
    /// Every point of the run, in grid order.
    pub points: &'a [Point],
    /// The key of each point (its results-store name).
    pub keys: &'a [String],
    /// The dataset version of each point.
    pub data_versions: &'a [String],
    /// Where a single decode's files go (none in a sweep).
    pub sink: Option<&'a dyn OutputSink>,
}

/// A block's settings owned by `owner` (a family's name: every method of the family reads
/// them) instead of its component: a block two families read under their own names (the CTC
/// penalties of `wfst` and `ctc-wfst`).
pub(crate) fn owned_by(specs: &[SettingSpec], owner: &'static str) -> Vec<SettingSpec> {
    specs
        .iter()
        .map(|sp| SettingSpec {
            component: owner,
            ..*sp
        })
        .collect()
}

pub(crate) use crate::pipeline::lists::check_global;

/// The `context_words` measure of open-vocabulary rows: distinct words of the output (the
/// 1-best hypotheses) that the graph's words table lacks — what only a context could write.
pub(crate) fn context_words(st: &Setup, hyps: &[Vec<String>]) -> f64 {
    let table = &st.graph.symbols.words;
    let outside: std::collections::BTreeSet<&String> = hyps
        .iter()
        .flatten()
        .filter(|w| table.id(w).is_none())
        .collect();
    outside.len() as f64
}

/// Files a single decode writes beside its figures (`ctxbench decode`: lattices, running
/// hypotheses, each point's hypotheses and CTM). The runner passes none; a family that calls
/// it says so in [`Family::writes_outputs`].
pub trait OutputSink: Sync {
    /// After a group's search, before any rescoring.
    fn decoded(&self, st: &Setup, run: &DecodeRun) -> Result<()>;
    /// Point `point`'s output: its 1-best (or lattice-biased 1-best) with word times.
    fn output(&self, point: usize, st: &Setup, o: &Output) -> Result<()>;
    /// Point `point`'s hypotheses without word times (a family whose decoders give none):
    /// `(utterance id, words)` in dataset order.
    fn text(&self, point: usize, hyps: &[(&str, &[String])]) -> Result<()>;
    /// A line for the person who asked for the decode (what a list kept, how long a context
    /// took to build).
    fn report(&self, line: &str);
}

impl GroupContext<'_> {
    /// Says a line to the person behind a single decode (nothing in a sweep, whose progress
    /// bar owns the terminal).
    pub fn report(&self, line: impl FnOnce() -> String) {
        if let Some(s) = self.sink {
            s.report(&line());
        }
    }
}

/// A family of methods (see the module docs): what the experiment parser knows of it
/// ([`FamilySpec`]) and how its points are set up, grouped and decoded.
pub trait Family: FamilySpec {
    /// Checks the lists a point names against its loaded dataset (`full`: the full set, where
    /// static lists come from) before anything decodes.
    fn check_lists(&self, ds: &Dataset, full: &Dataset, p: &Point) -> Result<()>;
    /// What a point's setup (graph and acoustic model) depends on.
    fn setup_key(&self, p: &Point) -> String;
    /// What decoding a point depends on: points with one key are decoded once.
    fn decode_key(&self, p: &Point) -> String;
    /// Whether its group runs hand their outputs to [`GroupContext::sink`] (hypotheses, CTM,
    /// lattices, running partials).
    fn writes_outputs(&self) -> bool {
        false
    }
    /// Whether its group runs hand their hypotheses as text to [`OutputSink::text`] (the
    /// families that write full outputs do so through [`OutputSink::output`]).
    fn writes_text(&self) -> bool {
        self.writes_outputs()
    }
    /// Decodes one group (points of one decode key) and scores each of its points.
    fn run_group(
        &self,
        cx: &GroupContext<'_>,
        group: &[usize],
        setup: &mut SetupCache,
    ) -> Result<Vec<PointRecord>>;
}

/// A point's common settings (checked when the point was made).
pub(crate) fn common(p: &Point) -> Result<Common> {
    Common::read(&p.settings)
}

/// What every family's setup key starts with: the family and the common settings a setup
/// (graph, acoustic model, utterances) depends on.
pub(crate) fn setup_key_of(family: &str, c: &Common) -> String {
    format!(
        "{family};dataset={};subset={};graph={};bpe_size={};noise={};snr_db={};limit={}",
        c.dataset(),
        c.subset,
        c.graph,
        c.bpe_size,
        c.noise.map_or(String::new(), |x| x.to_string()),
        c.snr_db.map_or(String::new(), |x| x.to_string()),
        c.limit.map_or(String::new(), |x| x.to_string()),
    )
}

/// The common settings a decode depends on besides its setup (the engine's).
pub(crate) fn decode_key_of(c: &Common) -> String {
    format!(
        ";backend={};beam={};max_active={};lattice_beam={};lattice={};acoustic_scale={};chunk_s={};endpointing={};threads={};gpu_batch={}",
        c.backend,
        c.beam,
        c.max_active,
        c.lattice_beam,
        c.lattice,
        c.acoustic_scale.map_or(String::new(), |x| x.to_string()),
        c.chunk_s,
        c.endpointing.map_or(String::new(), |x| x.to_string()),
        c.threads,
        c.gpu_batch,
    )
}

/// Loads the setup of a group's first point into the cache unless it is there already
/// (`limit` applied); frees the previous one first.
pub(crate) fn load_setup<'s>(
    cx: &GroupContext<'_>,
    c: &Common,
    key: String,
    opts: &SetupOptions<'_>,
    setup: &'s mut SetupCache,
) -> Result<&'s Setup> {
    if setup.as_ref().is_none_or(|(k, _)| *k != key) {
        *setup = None; // free the previous graph before building the next
        let name = c.dataset();
        let mut st = Setup::load(cx.reg, name, opts)?;
        apply_limit(c, name, &mut st.dataset.utterances)?;
        *setup = Some((key, st));
    }
    Ok(&setup.as_ref().expect("just loaded").1)
}

/// A point's `limit` (the first N utterances; N at least 1, named when it is not) applied to
/// dataset `name`'s utterances; none left is an error.
pub(crate) fn apply_limit<T>(c: &Common, name: &str, utts: &mut Vec<T>) -> Result<()> {
    if let Some(n) = c.limit {
        if n < 1 {
            bail!("limit {n} (--limit): the first N utterances of {name}, N at least 1");
        }
        utts.truncate(n);
    }
    if utts.is_empty() {
        bail!("dataset {name} has no utterances to decode");
    }
    Ok(())
}

/// The decoder settings every family reads (beams, chunking, endpointing, threads, backend).
pub(crate) fn decode_settings(c: &Common, st: &Setup) -> Result<DecodeSettings> {
    Ok(DecodeSettings::from_common(c, st.acoustic_scale))
}

/// What scoring measured: WER, NE-WER, U-WER, NE-A, the target words' precision, recall
/// and F1 and the keyword precision, recall and F-score (those a dataset defines).
pub(crate) fn accuracy_measures(t: &ScoreTotals) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("wer", t.all.rate()),
        ("ne_wer", t.ne.rate()),
        ("u_wer", t.unbiased.rate()),
        ("ne_acc", t.ne_acc()),
        ("precision", t.targets.precision()),
        ("recall", t.targets.recall()),
        ("f1", t.targets.f1()),
        ("kw_precision", t.keywords.and_then(|k| k.precision())),
        ("kw_recall", t.keywords.and_then(|k| k.recall())),
        ("kw_fscore", t.keywords.and_then(|k| k.f1())),
    ] {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    }
    m
}

/// Excess adjacent repeats: hypothesis word pairs `w w` beyond those of the references, per
/// 100 reference words (the unit of WER). A topology without CTC's repeat rule (compact T)
/// lets a held token read as a word again on every frame; word boosting rewards each copy.
pub(crate) fn excess_repeats(utts: &[Utterance], hyps: &[Vec<String>]) -> f64 {
    let pairs = |w: &[String]| w.windows(2).filter(|p| p[0] == p[1]).count() as f64;
    let (mut hyp, mut refs, mut words) = (0.0, 0.0, 0usize);
    for (u, h) in utts.iter().zip(hyps) {
        hyp += pairs(h);
        refs += pairs(&u.words);
        words += u.words.len();
    }
    100.0 * (hyp - refs) / words.max(1) as f64
}

/// The measures every point has: accuracy of its output, speed of the decode plus
/// `extra_s` (its contexts and rescoring), memory, graph and lattice figures.
pub(crate) fn base_measures(
    st: &Setup,
    run: &DecodeRun,
    o: &Output,
    extra_s: f64,
    lattice: (f64, Option<f64>),
) -> BTreeMap<String, f64> {
    let mut m = accuracy_measures(&o.totals);
    m.extend(st.fbai_measures(&o.hyps));
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    let decode_s = run.decode_s + extra_s;
    put("audio_s", Some(run.audio_s));
    put("decode_s", Some(decode_s));
    put("rtfx", Some(run.audio_s / decode_s.max(1e-9)));
    // A real acoustic model's time (front end and scoring of `audio` datasets) is part of
    // recognising the audio; a simulator's is not, so only real models get these two.
    if matches!(st.acoustic, pipeline::Acoustic::Audio(_)) {
        put("am_s", Some(run.sim_s));
        put(
            "rtfx_am",
            Some(run.audio_s / (run.sim_s + decode_s).max(1e-9)),
        );
    }
    put("peak_mem_mb", pipeline::peak_mem_mb());
    put("utterances", Some(st.dataset.utterances.len() as f64));
    put("graph_states", Some(st.csr.num_states() as f64));
    put("graph_arcs", Some(st.csr.num_arcs() as f64));
    put("graph_mb", Some(graph_bytes(&st.csr) as f64 / 1e6));
    put("lattice_density", Some(lattice.0));
    put("oracle_wer", lattice.1);
    put("endpoints", Some(pipeline::endpoints(run) as f64));
    m.extend(rarity_measures(
        st.training_counts(),
        &st.dataset.utterances,
        &o.hyps,
    ));
    m
}

/// The training-count buckets of [`rarity_measures`]: (name, lowest count, highest count).
pub(crate) const COUNT_BUCKETS: [(&str, u64, u64); 5] = [
    ("0", 0, 0),
    ("1_2", 1, 2),
    ("3_10", 3, 10),
    ("11_100", 11, 100),
    ("101", 101, u64::MAX),
];

/// Reference words and their error rate (substitutions and deletions, percent) by how often
/// the word occurs in the model's training text: `words_c<bucket>` and `err_c<bucket>` for the
/// buckets 0, 1–2, 3–10, 11–100, > 100 (the curve that says whether a simulated model
/// errs on rare words as real ones do). Nothing without training text (`files` datasets).
pub(crate) fn rarity_measures(
    counts: &ctx_data::acoustic::TrainingCounts,
    utts: &[Utterance],
    hyps: &[Vec<String>],
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    if counts.is_empty() {
        return m;
    }
    let mut words = [0u64; 5];
    let mut errs = [0u64; 5];
    let bucket = |w: &str| {
        let c = counts.count(w);
        COUNT_BUCKETS
            .iter()
            .position(|&(_, lo, hi)| (lo..=hi).contains(&c))
            .expect("the buckets cover every count")
    };
    for (u, h) in utts.iter().zip(hyps) {
        for s in ctx_core::metrics::align_words(&u.words, h) {
            if let Some(r) = s.reference {
                let b = bucket(&u.words[r.segment]);
                words[b] += 1;
                errs[b] += (s.op != ctx_core::metrics::EditOp::Match) as u64;
            }
        }
    }
    for (k, (name, _, _)) in COUNT_BUCKETS.iter().enumerate() {
        m.insert(format!("words_c{name}"), words[k] as f64);
        if words[k] > 0 {
            m.insert(
                format!("err_c{name}"),
                100.0 * errs[k] as f64 / words[k] as f64,
            );
        }
    }
    m
}

/// Bytes of a decoding graph's CSR arrays (input and output label, weight and next state per
/// arc; two offsets and a final cost per state): what a copy of the graph costs at least.
pub(crate) fn graph_bytes(g: &ctx_graph::csr::DecodingGraph) -> usize {
    g.num_arcs() * 16 + g.num_states() * 12
}

/// The record of point `i` of the run.
pub(crate) fn record(
    cx: &GroupContext<'_>,
    i: usize,
    mut measures: BTreeMap<String, f64>,
    device: &str,
) -> PointRecord {
    let p = &cx.points[i];
    // A list switch's cost: the time to build one stream's biasing structures (its lists arrive
    // with its utterances), where a method says how many distinct lists it built.
    if let (Some(&s), Some(&n)) = (measures.get("context_s"), measures.get("contexts")) {
        if n > 0.0 {
            measures.insert("switch_ms".into(), 1e3 * s / n);
        }
    }
    // A biasing method whose lists lost every phrase to the vocabulary decoded unbiased: said
    // where the figures are made, for every family alike.
    let m = |k: &str| measures.get(k).copied().unwrap_or(0.0);
    if m("phrases_kept") == 0.0 && m("phrases_dropped") > 0.0 {
        eprintln!(
            "warning: {}: all {} phrases of its biasing lists have a word outside the vocabulary: \
             it decoded unbiased (phrases kept/dropped 0/{})",
            p.label(),
            m("phrases_dropped"),
            m("phrases_dropped")
        );
    }
    PointRecord {
        key: cx.keys[i].clone(),
        label: p.label(),
        measures,
        settings: p
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
        code_version: CODE_VERSION.to_string(),
        dataset_version: cx.data_versions[i].clone(),
        device: device.to_string(),
    }
}

/// Checks a point's `targets` list (a common setting) against its dataset.
pub(crate) fn check_targets(ds: &Dataset, p: &Point) -> Result<()> {
    if let Some(t) = &common(p)?.targets {
        pipeline::targets(ds, Some(t))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utt(words: &str) -> Utterance {
        Utterance {
            id: "u".into(),
            doc: None,
            words: words.split_whitespace().map(String::from).collect(),
            duration_s: 1.0,
            entities: Vec::new(),
            callsign: None,
        }
    }

    /// A field added to `Common` and forgotten in the hand-written keys would let points of
    /// different settings share one cached setup or decode.
    #[test]
    fn every_common_setting_reaches_a_key_but_scoring_only_ones() {
        use crate::settings::Block;
        // Read after decoding (which words get P/R/F1): points differing in it share a decode.
        let scoring_only = [crate::key!(Common, targets)];
        let c = Common {
            dataset: Some("d".into()),
            ..Common::default()
        };
        let keys = setup_key_of("f", &c) + &decode_key_of(&c);
        for spec in Common::SPECS {
            let named = keys.contains(&format!(";{}=", spec.name));
            let scoring = scoring_only.contains(&spec.name);
            assert!(
                named != scoring,
                "setting '{}': in a key {named}, scoring-only {scoring}",
                spec.name
            );
        }
    }

    #[test]
    fn excess_repeats_counts_hypothesis_pairs_beyond_the_references() {
        let utts = [utt("two two zero one"), utt("delta descend")];
        let hyp = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        // References hold one pair ("two two"); the hypotheses three ("two two two", "delta delta").
        let hyps = [hyp("two two two zero one"), hyp("delta delta descend")];
        assert!((excess_repeats(&utts, &hyps) - 100.0 * 2.0 / 6.0).abs() < 1e-9);
        // Losing the reference's own pair counts negative.
        let hyps = [hyp("two zero one"), hyp("delta descend")];
        assert!((excess_repeats(&utts, &hyps) + 100.0 / 6.0).abs() < 1e-9);
    }
}

//! Simulated acoustic models (docs/design.md §5): per-utterance score matrices generated on demand
//! from the reference words only (never the biasing list or entity tags), seeded by utterance id.
//!
//! - **Hybrid** ([`HybridSim`]): words → first pronunciation → phones (SIL at both ends) →
//!   monophone HMM states → frames (30 ms by default). Frames are shared out among the phones
//!   with random weights (each HMM state at least one frame). Each frame's log-likelihoods over all
//!   pdfs: the true pdf 0, another pdf −`separation`·(1 + distance of the phones) (0.5 extra for
//!   another state of the same phone), plus Gaussian noise whose level σ_u = noise·exp(spread·z)
//!   varies per utterance (white, or correlated from frame to frame by `noise_corr`). A phone is
//!   confused with its nearest phone with probability
//!   `confusion`·σ_u/noise; its frames then look like the other phone. Phone distance comes from
//!   articulatory features (vowels: height, backness, rounding, diphthong; consonants: place,
//!   manner, voicing).
//! - **CTC** ([`CtcSim`]): words → BPE pieces → a peaky alignment at 40 ms (each piece on one or
//!   two frames, blanks between and around) → log-softmax rows where blank holds almost all the
//!   mass between spikes, a spike's piece almost all of it on its frames, and pieces near it in
//!   spelling and blank compete under the noise; the same confusion model.
//!
//! Knobs live in datasets.toml, one table per model kind (`[<dataset>.acoustic]` hybrid,
//! `[<dataset>.acoustic_ctc]` CTC); `noise` is calibrated once per dataset and model kind so that
//! the unbiased baseline WER lands near the published one for that model family.

use crate::bpe::Bpe;
use crate::internal_lm::InternalLm;
use crate::pronounce::{Pronouncer, CMU_PHONES};
use crate::registry::{AcousticSpec, CtcAcousticSpec};
use crate::rng::Rng;
use ctx_core::scores::ScoreMatrix;

/// The farthest spelling (normalised edit distance) an in-domain model's confusion may take.
const MAX_D: f64 = 0.75;

/// How often each word occurs in a simulated model's training text (the dataset's LM text): a
/// real model errs on the words it saw rarely, so a simulator's per-word confusion grows as this
/// count falls. Built from the training text only — never entity tags or biasing lists.
#[derive(Debug, Clone, Default)]
pub struct TrainingCounts {
    counts: std::collections::HashMap<String, u64>,
}

impl TrainingCounts {
    /// Counts the words of a training text.
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        let mut counts = std::collections::HashMap::new();
        for w in words {
            *counts.entry(w.to_string()).or_insert(0u64) += 1;
        }
        Self { counts }
    }

    /// The count of `w` (0: never seen).
    pub fn count(&self, w: &str) -> u64 {
        self.counts.get(w).copied().unwrap_or(0)
    }

    /// Whether any word was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The extra confusion probability of `w`: `rare · half / (half + count)`.
    ///
    /// ```
    /// use ctx_data::acoustic::TrainingCounts;
    /// let c = TrainingCounts::from_words("a a a b".split(' '));
    /// assert_eq!(c.extra("zz", 0.4, 1.0), 0.4);
    /// assert_eq!(c.extra("a", 0.4, 1.0), 0.1);
    /// assert_eq!(c.extra("b", 0.0, 1.0), 0.0);
    /// ```
    pub fn extra(&self, w: &str, rare: f64, half: f64) -> f64 {
        if rare <= 0.0 {
            return 0.0;
        }
        rare * half / (half + self.count(w) as f64)
    }
}

/// The error when `rare_confusion` is set but the simulator was given no training text.
fn no_counts(utt: &str) -> SimError {
    SimError::Utterance {
        utt: utt.to_string(),
        message: "rare_confusion is set but the simulator has no training text to count words in \
                  (the dataset's LM text)"
            .into(),
    }
}

/// Errors of the simulators.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A word could not be pronounced or encoded; names the utterance.
    #[error("utterance {utt}: {message}")]
    Utterance {
        /// Utterance id.
        utt: String,
        /// What went wrong.
        message: String,
    },
}

/// Articulatory features of SIL and the 39 CMU phones: (is_vowel, a, b, c, d).
/// Vowels: height (0 low–2 high), backness (0 front–2 back), rounded, diphthong.
/// Consonants: place (0 bilabial … 7 glottal), manner (0 stop, 1 fricative, 2 affricate,
/// 3 nasal, 4 liquid, 5 glide), voiced, 0.
fn features(p: &str) -> Option<(bool, u8, u8, u8, u8)> {
    Some(match p {
        "AA" => (true, 0, 2, 0, 0),
        "AE" => (true, 0, 0, 0, 0),
        "AH" => (true, 1, 1, 0, 0),
        "AO" => (true, 1, 2, 1, 0),
        "AW" => (true, 0, 1, 1, 1),
        "AY" => (true, 0, 1, 0, 1),
        "EH" => (true, 1, 0, 0, 0),
        "ER" => (true, 1, 1, 1, 0),
        "EY" => (true, 1, 0, 0, 1),
        "IH" => (true, 2, 0, 0, 0),
        "IY" => (true, 2, 0, 0, 1),
        "OW" => (true, 1, 2, 1, 1),
        "OY" => (true, 1, 2, 1, 1),
        "UH" => (true, 2, 2, 1, 0),
        "UW" => (true, 2, 2, 1, 1),
        "B" => (false, 0, 0, 1, 0),
        "P" => (false, 0, 0, 0, 0),
        "M" => (false, 0, 3, 1, 0),
        "W" => (false, 0, 5, 1, 0),
        "F" => (false, 1, 1, 0, 0),
        "V" => (false, 1, 1, 1, 0),
        "TH" => (false, 2, 1, 0, 0),
        "DH" => (false, 2, 1, 1, 0),
        "T" => (false, 3, 0, 0, 0),
        "D" => (false, 3, 0, 1, 0),
        "S" => (false, 3, 1, 0, 0),
        "Z" => (false, 3, 1, 1, 0),
        "N" => (false, 3, 3, 1, 0),
        "L" => (false, 3, 4, 1, 0),
        "R" => (false, 4, 4, 1, 0),
        "SH" => (false, 4, 1, 0, 0),
        "ZH" => (false, 4, 1, 1, 0),
        "CH" => (false, 4, 2, 0, 0),
        "JH" => (false, 4, 2, 1, 0),
        "Y" => (false, 5, 5, 1, 0),
        "K" => (false, 6, 0, 0, 0),
        "G" => (false, 6, 0, 1, 0),
        "NG" => (false, 6, 3, 1, 0),
        "HH" => (false, 7, 1, 0, 0),
        _ => return None,
    })
}

/// Phonetic distance in [0, 1] between two phones (SIL is far from everything).
pub fn phone_distance(a: &str, b: &str) -> f64 {
    if a == b {
        return 0.0;
    }
    match (features(a), features(b)) {
        (Some(x), Some(y)) if x.0 == y.0 => {
            let d = |u: u8, v: u8, range: f64| (u as f64 - v as f64).abs() / range;
            if x.0 {
                (d(x.1, y.1, 2.0) + d(x.2, y.2, 2.0) + d(x.3, y.3, 1.0) + d(x.4, y.4, 1.0)) / 4.0
            } else {
                (d(x.1, y.1, 7.0).min(1.0) * 1.5
                    + (x.2 != y.2) as u8 as f64 * 1.5
                    + d(x.3, y.3, 1.0))
                    / 4.0
            }
            .clamp(0.05, 1.0)
        }
        _ => 1.0,
    }
}

/// The unit inventory of hybrid graphs and simulators: SIL then the 39 CMU phones.
pub fn hybrid_units() -> Vec<String> {
    let mut u = vec!["SIL".to_string()];
    u.extend(CMU_PHONES.iter().map(|s| s.to_string()));
    u
}

/// The hybrid simulator.
#[derive(Debug, Clone)]
pub struct HybridSim {
    knobs: AcousticSpec,
    states_per_phone: usize,
    /// Frame shift in seconds.
    pub frame_s: f64,
    /// Logit gap between the true pdf and a maximally distant one (nats).
    pub separation: f64,
    /// The acoustic scale a decoder uses with these scores — a property of the model, like a
    /// Kaldi model's `acwt`, the same for every dataset. 0.5 halves the 6-nat gaps so that the
    /// LM and the acoustics compete and lattices hold a few alternatives per word (chosen once,
    /// with the noise calibration of docs/design.md §5).
    pub acoustic_scale: f64,
    units: Vec<String>,
    /// `dist[a][b]` between units.
    dist: Vec<Vec<f64>>,
    /// Nearest other unit of each unit (confusion target).
    nearest: Vec<usize>,
    /// Word counts of the model's training text (rare words are confused more).
    counts: TrainingCounts,
}

impl HybridSim {
    /// A simulator over [`hybrid_units`] with `states_per_phone` pdfs per phone.
    pub fn new(knobs: AcousticSpec, states_per_phone: usize) -> Self {
        let units = hybrid_units();
        let dist: Vec<Vec<f64>> = units
            .iter()
            .map(|a| units.iter().map(|b| phone_distance(a, b)).collect())
            .collect();
        let nearest = (0..units.len())
            .map(|i| {
                (0..units.len())
                    .filter(|&j| j != i)
                    .min_by(|&x, &y| dist[i][x].total_cmp(&dist[i][y]).then(x.cmp(&y)))
                    .unwrap()
            })
            .collect();
        Self {
            knobs,
            states_per_phone: states_per_phone.max(1),
            frame_s: 0.03,
            separation: 6.0,
            acoustic_scale: 0.5,
            units,
            dist,
            nearest,
            counts: TrainingCounts::default(),
        }
    }

    /// The model's training text (the dataset's LM text), whose word counts make rare words
    /// harder when `rare_confusion` > 0.
    pub fn with_training_text<'a>(mut self, words: impl IntoIterator<Item = &'a str>) -> Self {
        self.counts = TrainingCounts::from_words(words);
        self
    }

    /// Number of pdfs (score columns): units × states per phone; pdf of state k of unit u
    /// (0-based) is u·states_per_phone + k, as in ctx-graph's H.
    pub fn num_pdfs(&self) -> usize {
        self.units.len() * self.states_per_phone
    }

    /// The true pdf of each frame and the noise level used, plus the score matrix.
    pub fn simulate(
        &self,
        utt: &str,
        words: &[String],
        duration_s: f64,
        pron: &Pronouncer,
    ) -> Result<(ScoreMatrix, Vec<u32>), SimError> {
        let mut rng = Rng::for_key(self.knobs.seed, utt);
        let sigma = self.knobs.noise * (self.knobs.noise_spread * rng.normal()).exp();
        let unit_index = |p: &str| self.units.iter().position(|u| u == p);
        if self.knobs.rare_confusion > 0.0 && self.counts.is_empty() {
            return Err(no_counts(utt));
        }
        let mut phones: Vec<usize> = vec![0];
        // Per phone, the extra confusion probability of its word (0 for silence).
        let mut rare: Vec<f64> = vec![0.0];
        for w in words {
            // A token without letters or digits (e.g. a transcript's `*`) has no spoken form:
            // it contributes no phones (the surrounding silence covers it).
            if !w.chars().any(|c| c.is_alphanumeric()) {
                continue;
            }
            let (prons, _) = pron.pronounce(w).map_err(|e| SimError::Utterance {
                utt: utt.to_string(),
                message: e.to_string(),
            })?;
            let extra = self
                .counts
                .extra(w, self.knobs.rare_confusion, self.knobs.rare_count);
            for p in &prons[0] {
                phones.push(unit_index(p).ok_or_else(|| SimError::Utterance {
                    utt: utt.to_string(),
                    message: format!("phone {p} of '{w}' is not a CMU phone"),
                })?);
                rare.push(extra);
            }
        }
        phones.push(0);
        rare.push(0.0);
        // Confusions: a phone's frames look like its nearest phone.
        let p_conf = (self.knobs.confusion * sigma / self.knobs.noise.max(1e-9)).min(1.0);
        // A rare word's phones are confused more (its pronunciation drifts toward a near one);
        // the same one draw per phone, so with rare_confusion 0 nothing changes.
        let acoustic: Vec<usize> = phones
            .iter()
            .zip(&rare)
            .map(|(&p, &extra)| {
                if p != 0 && rng.chance((p_conf + extra).min(1.0)) {
                    self.nearest[p]
                } else {
                    p
                }
            })
            .collect();
        // Frames per HMM state.
        let s = self.states_per_phone;
        let min_frames = phones.len() * s;
        let frames = ((duration_s / self.frame_s).round() as usize).max(min_frames);
        let weights: Vec<f64> = (0..min_frames)
            .map(|_| 0.3 + rng.exponential(1.0))
            .collect();
        let total: f64 = weights.iter().sum();
        let extra = frames - min_frames;
        let mut counts: Vec<usize> = weights
            .iter()
            .map(|w| 1 + (w / total * extra as f64).floor() as usize)
            .collect();
        let mut left = frames - counts.iter().sum::<usize>();
        let (mut i, n) = (0, counts.len());
        while left > 0 {
            counts[i % n] += 1;
            left -= 1;
            i += 7;
        }
        let npdf = self.num_pdfs();
        let mut m = ScoreMatrix::zeros(frames, npdf);
        let mut truth = Vec::with_capacity(frames);
        let mut t = 0;
        // Each pdf's noise is an AR(1) process of level σ: n_t = ρ·n_{t−1} + √(1−ρ²)·z_t (at
        // ρ = 0 exactly the white noise of one draw per pdf and frame, in the same order).
        let rho = self.knobs.noise_corr.clamp(0.0, 0.999);
        let fresh = (1.0 - rho * rho).sqrt();
        let mut noise = vec![0.0f64; npdf];
        for (k, &c) in counts.iter().enumerate() {
            let (ph, st) = (k / s, k % s);
            let a = acoustic[ph];
            truth.push_n((phones[ph] * s + st) as u32, c);
            for _ in 0..c {
                let row = m.row_mut(t);
                for (u, d) in self.dist[a].iter().enumerate() {
                    for j in 0..s {
                        let gap = if u == a {
                            if j == st {
                                0.0
                            } else {
                                0.5
                            }
                        } else {
                            1.0 + d
                        };
                        let k = u * s + j;
                        let z = rng.normal();
                        noise[k] = if t == 0 {
                            z
                        } else {
                            rho * noise[k] + fresh * z
                        };
                        row[k] = (-self.separation * gap + sigma * noise[k]) as f32;
                    }
                }
                t += 1;
            }
        }
        Ok((m, truth))
    }
}

trait PushN {
    fn push_n(&mut self, v: u32, n: usize);
}

impl PushN for Vec<u32> {
    fn push_n(&mut self, v: u32, n: usize) {
        self.extend(std::iter::repeat_n(v, n));
    }
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// What a simulated end-to-end model hears of an utterance, by piece position.
#[derive(Debug, Clone, Default)]
pub(crate) struct Heard {
    /// The utterance's noise level σ_u.
    pub sigma: f64,
    /// The piece heard at each position; 0 where a confusion left out a reference piece.
    pub tokens: Vec<u32>,
    /// At a position a confusion changed, the reference's piece (0: none, or the same as
    /// heard): it scores `gap` below the heard piece, so context can restore it.
    pub reference: Vec<u32>,
    /// Per position, how far below the heard piece the reference piece scores: `confusion_gap`,
    /// plus `internal_lm` times the internal LM's gain for the heard word.
    pub gap: Vec<f64>,
}

/// Pairs the pieces heard for a confused word with the reference's pieces by edit distance
/// (ties: substitution, then a heard piece alone, then a reference piece alone), so that each
/// reference piece competes where the model heard its counterpart. 0 marks the missing side.
///
/// ```text
/// heard [a, b, c], reference [a, x] → (a,a) (b,x) (c,0)
/// ```
pub(crate) fn align_pieces(heard: &[u32], reference: &[u32]) -> Vec<(u32, u32)> {
    let (n, m) = (heard.len(), reference.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, x) in d[0].iter_mut().enumerate() {
        *x = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let sub = d[i - 1][j - 1] + (heard[i - 1] != reference[j - 1]) as usize;
            d[i][j] = sub.min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
        }
    }
    let (mut i, mut j) = (n, m);
    let mut out = Vec::with_capacity(n.max(m));
    while i > 0 || j > 0 {
        if i > 0
            && j > 0
            && d[i][j] == d[i - 1][j - 1] + (heard[i - 1] != reference[j - 1]) as usize
        {
            out.push((heard[i - 1], reference[j - 1]));
            i -= 1;
            j -= 1;
        } else if i > 0 && d[i][j] == d[i - 1][j] + 1 {
            out.push((heard[i - 1], 0));
            i -= 1;
        } else {
            out.push((0, reference[j - 1]));
            j -= 1;
        }
    }
    out.reverse();
    out
}

/// An in-domain model's prior ([`CtcAcousticSpec::internal_lm`]): the word and piece trigrams of
/// its training text, and each known word's candidate spellings within `MAX_D`, computed once.
#[derive(Debug, Clone)]
struct Prior {
    words: InternalLm,
    pieces: InternalLm,
    candidates: std::collections::HashMap<String, Vec<(f64, String)>>,
}

/// The CTC simulator over a BPE model's pieces (column 0 = blank, column i = piece id i).
///
/// Per frame, logits `g` (then log-softmax), with `L = ln V` over the `V` columns, `M` the
/// margin and `σ_u` the utterance's noise level:
/// - every column not named below: 0, so together they hold about `1/(1+e^M)` of the mass;
/// - a blank frame: blank `L + M + σ_u·z`; a piece spiking on the next or previous frame leaks
///   `L + M − 3 + σ_u·z` (real CTC spikes have shoulders);
/// - a piece's frame: the piece `L + M + σ_u·z`, blank `L + M − 2 + σ_u·z`, each piece near it in
///   spelling (normalised edit distance `d ≤ 0.5`) `L + M − 1 − M·d + σ_u·z`.
///
/// Errors come from the noise (a near piece or blank overtaking the spike: substitutions and
/// deletions of pieces, more for close spellings, which a lexicon in the search mostly repairs)
/// and from word confusion events (with probability `confusion`·σ_u/noise per word the model
/// hears the known word nearest in spelling, [`CtcSim::with_vocabulary`]: a real word, so only
/// context can repair it; a word rare in the training text is confused more, `rare_confusion`).
/// A confused word's own pieces stay close competitors: paired with the heard pieces by edit
/// distance, each scores `confusion_gap` below its counterpart (`L + M − gap + σ_u·z`), as a real
/// model keeps the right word in its n-best, so an LM or a boosting list can restore it. With
/// `M = 6` blank is the argmax on most frames and posteriors are peaky, as in a real CTC model.
#[derive(Debug, Clone)]
pub struct CtcSim {
    knobs: CtcAcousticSpec,
    bpe: Bpe,
    /// Frame shift in seconds.
    pub frame_s: f64,
    /// The acoustic scale a decoder uses with these scores (from the knobs).
    pub acoustic_scale: f64,
    /// Per piece, its near pieces (normalised spelling distance ≤ 0.5) with their distance.
    near: Vec<Vec<(usize, f64)>>,
    /// The words the model knows, by first letter (word confusions pick among them).
    vocab: std::collections::HashMap<char, Vec<Vec<char>>>,
    /// Word counts of the model's training text (rare words are confused more).
    counts: TrainingCounts,
    /// The in-domain model's prior, built by [`CtcSim::with_training_text`] (boxed: most
    /// simulators have none).
    prior: Option<Box<Prior>>,
}

impl CtcSim {
    /// A simulator for a BPE model.
    pub fn new(knobs: CtcAcousticSpec, bpe: Bpe) -> Self {
        let chars: Vec<Vec<char>> = bpe
            .pieces()
            .iter()
            .map(|p| p.trim_start_matches(crate::bpe::BOUNDARY).chars().collect())
            .collect();
        let near = (0..chars.len())
            .map(|i| {
                (0..chars.len())
                    .filter(|&j| j != i)
                    .filter_map(|j| {
                        let l = chars[i].len().max(chars[j].len()).max(1);
                        let d = edit_distance(&chars[i], &chars[j]) as f64 / l as f64;
                        (d <= 0.5).then_some((j, d.max(0.1)))
                    })
                    .collect()
            })
            .collect();
        Self {
            acoustic_scale: knobs.acoustic_scale,
            knobs,
            bpe,
            frame_s: 0.04,
            near,
            vocab: Default::default(),
            counts: TrainingCounts::default(),
            prior: None,
        }
    }

    /// The words the simulated model may confuse a word with: the words of its training text,
    /// as they run (never a biasing list), whose counts also make rare words harder when
    /// `rare_confusion` > 0. Without one there are no word confusions.
    pub fn with_vocabulary<'a>(mut self, words: impl IntoIterator<Item = &'a str>) -> Self {
        let mut set: Vec<&str> = words.into_iter().collect();
        self.counts = TrainingCounts::from_words(set.iter().copied());
        set.sort_unstable();
        set.dedup();
        for w in set {
            if let Some(c) = w.chars().next() {
                self.vocab.entry(c).or_default().push(w.chars().collect());
            }
        }
        self
    }

    /// The known word nearest to `w` in spelling (same first letter, length within 2; ties: the
    /// first in sorted order), if any lies within half its length.
    fn nearest_word(&self, w: &str) -> Option<String> {
        let c: Vec<char> = w.chars().collect();
        let bucket = self.vocab.get(c.first()?)?;
        let mut best: Option<(f64, &Vec<char>)> = None;
        for v in bucket {
            if *v == c || v.len().abs_diff(c.len()) > 2 {
                continue;
            }
            let d = edit_distance(&c, v) as f64 / c.len().max(v.len()) as f64;
            if d <= 0.5 && best.is_none_or(|(b, _)| d < b) {
                best = Some((d, v));
            }
        }
        best.map(|(_, v)| v.iter().collect())
    }

    /// The model's internal LM, from the sentences it was trained on (a no-op where the
    /// `internal_lm` knob is 0): see [`CtcAcousticSpec::internal_lm`].
    pub fn with_training_text<'a>(mut self, sentences: impl IntoIterator<Item = &'a str>) -> Self {
        if self.knobs.in_domain && self.knobs.internal_lm > 0.0 {
            let sentences: Vec<&str> = sentences.into_iter().collect();
            let pieces: Vec<String> = sentences
                .iter()
                .map(|s| {
                    let ids: Vec<String> = s
                        .split_whitespace()
                        .flat_map(|w| self.bpe.encode_word(w))
                        .map(|p| self.bpe.id(&p).map_or(0, |i| i).to_string())
                        .collect();
                    ids.join(" ")
                })
                .collect();
            let candidates = self
                .vocab
                .values()
                .flatten()
                .map(|v| {
                    let w: String = v.iter().collect();
                    let near = self.near_words(&w, MAX_D);
                    (w, near)
                })
                .collect();
            self.prior = Some(Box::new(Prior {
                words: InternalLm::from_sentences(sentences.iter().copied()),
                pieces: InternalLm::from_sentences(pieces.iter().map(String::as_str)),
                candidates,
            }));
        }
        self
    }

    /// Per piece position of `tokens` (0: none heard), how much lower each of the heard
    /// piece's near pieces (in [`CtcSim::near`]'s order) scores under the in-domain model's
    /// prior: `internal_lm` times the piece trigram's preference for the heard piece (≥ 0).
    /// Empty without an internal LM.
    pub(crate) fn near_penalties(&self, tokens: &[u32]) -> Vec<Vec<f64>> {
        let Some(pieces) = self.prior.as_ref().map(|p| &p.pieces) else {
            return Vec::new();
        };
        let lambda = self.knobs.internal_lm;
        let mut history: Vec<String> = Vec::new();
        tokens
            .iter()
            .map(|&x| {
                if x == 0 {
                    return Vec::new();
                }
                let h1 = history.last().map(String::as_str);
                let h2 = history.len().checked_sub(2).map(|k| history[k].as_str());
                let own = pieces.ln_prob(h2, h1, &x.to_string());
                let out = self.near[x as usize - 1]
                    .iter()
                    .map(|&(j, _)| {
                        let near = pieces.ln_prob(h2, h1, &(j + 1).to_string());
                        lambda * (own - near).max(0.0)
                    })
                    .collect();
                history.push(x.to_string());
                out
            })
            .collect()
    }

    /// Every known word other than `w` within `max_d` of it in normalised spelling distance and
    /// 3 letters in length, with its distance: the words a model may hear for `w`, sorted by
    /// distance then spelling (a stable order, so ties resolve the same way every run).
    fn near_words(&self, w: &str, max_d: f64) -> Vec<(f64, String)> {
        let c: Vec<char> = w.chars().collect();
        let mut out: Vec<(f64, String)> = self
            .vocab
            .values()
            .flatten()
            .filter(|v| **v != c && v.len().abs_diff(c.len()) <= 3)
            .map(|v| {
                let d = edit_distance(&c, v) as f64 / c.len().max(v.len()) as f64;
                (d, v.iter().collect())
            })
            .filter(|(d, _)| *d <= max_d)
            .collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        out
    }

    /// A confusion event for `words[i]` with an internal LM: the near spelling `v` the prior likes
    /// best (`λ·G(v) − SPELL·d(v)`) and the reference's gap below it, `confusion_gap + λ·G(v)`;
    /// no confusion where that gap is not positive (the prior keeps the reference).
    fn confusion_by_prior(
        &self,
        prior: &Prior,
        words: &[String],
        i: usize,
    ) -> (Option<String>, f64) {
        /// Nats per unit of normalised spelling distance in the choice.
        const SPELL: f64 = 4.0;
        let lambda = self.knobs.internal_lm;
        let gap = self.knobs.confusion_gap;
        let computed;
        let candidates = match prior.candidates.get(&words[i]) {
            Some(c) => c,
            None => {
                computed = self.near_words(&words[i], MAX_D);
                &computed
            }
        };
        let best = candidates
            .iter()
            .map(|(d, v)| (prior.words.gain(words, i, v), *d, v))
            .fold(None::<(f64, f64, &String)>, |best, (g, d, v)| match best {
                Some((bg, bd, _)) if lambda * bg - SPELL * bd >= lambda * g - SPELL * d => best,
                _ => Some((g, d, v)),
            });
        match best {
            Some((g, _, v)) if gap + lambda * g > 0.0 => (Some(v.clone()), gap + lambda * g),
            _ => (None, self.knobs.confusion_gap),
        }
    }

    /// What the model hears of an utterance: its noise level σ_u (first draw of `rng`) and, per
    /// piece position, the piece heard — each reference word replaced by the known word nearest
    /// in spelling with probability `confusion`·σ_u/noise plus its rarity extra — and where a
    /// confusion changed the pieces, the reference piece kept as a close competitor
    /// ([`Heard`]). Shared by every simulated end-to-end model.
    pub(crate) fn heard_tokens(
        &self,
        rng: &mut Rng,
        utt: &str,
        words: &[String],
    ) -> Result<Heard, SimError> {
        let sigma = self.knobs.noise * (self.knobs.noise_spread * rng.normal()).exp();
        let p_conf = (self.knobs.confusion * sigma / self.knobs.noise.max(1e-9)).min(1.0);
        if self.knobs.rare_confusion > 0.0 && self.counts.is_empty() {
            return Err(no_counts(utt));
        }
        let encode = |word: &str| -> Result<Vec<u32>, SimError> {
            self.bpe
                .encode_word(word)
                .iter()
                .map(|p| {
                    self.bpe.id(p).ok_or_else(|| SimError::Utterance {
                        utt: utt.to_string(),
                        message: format!("piece '{p}' of '{word}' is not in the BPE model"),
                    })
                })
                .collect()
        };
        let mut heard = Heard {
            sigma,
            tokens: Vec::new(),
            reference: Vec::new(),
            gap: Vec::new(),
        };
        for (i, w) in words.iter().enumerate() {
            // A confusion event, likelier for a word rare in the training text: the model
            // hears a similar known word, the reference's pieces a little below it.
            let p = (p_conf
                + self
                    .counts
                    .extra(w, self.knobs.rare_confusion, self.knobs.rare_count))
            .min(1.0);
            let truth = encode(w)?;
            let (heard_as, gap) = if !rng.chance(p) {
                (None, self.knobs.confusion_gap)
            } else if let Some(prior) = &self.prior {
                self.confusion_by_prior(prior, words, i)
            } else {
                (self.nearest_word(w), self.knobs.confusion_gap)
            };
            match heard_as {
                Some(v) => {
                    for (h, r) in align_pieces(&encode(&v)?, &truth) {
                        heard.tokens.push(h);
                        heard.reference.push(if h == r { 0 } else { r });
                        heard.gap.push(gap);
                    }
                }
                None => {
                    heard.reference.extend(std::iter::repeat_n(0, truth.len()));
                    heard.gap.extend(std::iter::repeat_n(gap, truth.len()));
                    heard.tokens.extend(truth);
                }
            }
        }
        Ok(heard)
    }

    /// The knobs.
    pub fn knobs(&self) -> &CtcAcousticSpec {
        &self.knobs
    }

    /// Per piece (index = id − 1), the pieces near it in spelling (index, normalised distance).
    pub(crate) fn near(&self) -> &[Vec<(usize, f64)>] {
        &self.near
    }

    /// Score columns: blank + pieces.
    pub fn num_tokens(&self) -> usize {
        self.bpe.len() + 1
    }

    /// The BPE model whose pieces the columns are.
    pub fn bpe(&self) -> &Bpe {
        &self.bpe
    }

    /// Log-softmax rows for an utterance, and the aligned token of each frame (0 = blank).
    pub fn simulate(
        &self,
        utt: &str,
        words: &[String],
        duration_s: f64,
    ) -> Result<(ScoreMatrix, Vec<u32>), SimError> {
        let mut rng = Rng::for_key(self.knobs.seed, utt);
        let heard = self.heard_tokens(&mut rng, utt, words)?;
        let (sigma, tokens) = (heard.sigma, &heard.tokens);
        let spans: Vec<usize> = tokens
            .iter()
            .map(|_| 1 + rng.chance(0.3) as usize)
            .collect();
        let need = spans.iter().sum::<usize>() + tokens.len() + 1;
        let frames = ((duration_s / self.frame_s).round() as usize).max(need);
        // Tokens spread evenly; blanks elsewhere. A position whose heard piece is 0 (a
        // confusion left a reference piece out) stays blank, its reference piece below.
        let mut truth = vec![0u32; frames];
        let mut reference = vec![0u32; frames];
        let mut gap = vec![0f64; frames];
        let slot = frames as f64 / (tokens.len() + 1) as f64;
        let mut prev_end = 0;
        for (i, (&tok, &n)) in tokens.iter().zip(&spans).enumerate() {
            let start = (((i + 1) as f64 * slot) as usize)
                .max(prev_end + 1)
                .min(frames - n);
            truth[start..start + n].fill(tok);
            reference[start..start + n].fill(heard.reference[i]);
            gap[start..start + n].fill(heard.gap[i]);
            prev_end = start + n;
        }
        let v = self.num_tokens();
        let m_ = self.knobs.margin;
        let top = (v as f64).ln() + m_;
        let mut m = ScoreMatrix::zeros(frames, v);
        for (t, &tok) in truth.iter().enumerate() {
            let g = |rng: &mut Rng, base: f64| (base + sigma * rng.normal()) as f32;
            let row = m.row_mut(t);
            if tok == 0 {
                row[0] = g(&mut rng, top);
                let before = t.checked_sub(1).map(|p| truth[p]);
                let after = truth.get(t + 1).copied();
                for k in [before, after].into_iter().flatten().filter(|&k| k != 0) {
                    let x = g(&mut rng, top - 3.0);
                    row[k as usize] = row[k as usize].max(x);
                }
            } else {
                row[tok as usize] = g(&mut rng, top);
                row[0] = g(&mut rng, top - 5.0);
                for &(j, d) in &self.near[tok as usize - 1] {
                    row[j + 1] = g(&mut rng, top - 1.0 - m_ * d);
                }
            }
            if let Some(r) = Some(reference[t] as usize).filter(|&r| r != 0) {
                row[r] = row[r].max(g(&mut rng, top - gap[t]));
            }
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f32>().ln();
            for x in row.iter_mut() {
                *x -= lse;
            }
        }
        Ok((m, truth))
    }
}

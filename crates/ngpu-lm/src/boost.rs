//! An Aho-Corasick boosting tree (003 §4.1.3; icefall's `ContextGraph`) stored as NGPU-LM
//! arrays, so that the batched queries of [`crate::query`] score keyword boosting as they score
//! an n-gram LM (first part).
//!
//! The trie holds the phrases' label sequences; node `n` has a token score (the bonus its
//! label earns, the largest over phrases sharing it), a node score (the sum from the root), a
//! failure link (the longest proper suffix in the trie) and an output score (the node scores of
//! the phrases that end here or along its output links). As arrays:
//! - a trie edge is an arc; its weight is the child's token score plus, in strict mode, the
//!   child's output score (every phrase completed there pays out);
//! - the failure link is the back-off, its weight `node_score(fail) − node_score(n)`: following
//!   it takes back the partial bonus of a match that broke off;
//! - the root is the unigram state: every label has an arc (labels no phrase starts with stay at
//!   the root at weight 0);
//! - the final weight is `−node_score(n)`: a sequence that ends inside a phrase gives its partial
//!   bonus back.
//!
//! Non-strict mode (icefall's `strict_mode = False`): a completed phrase returns to the root,
//! keeping the bonus of the longest phrase completed there and nothing of longer partial matches.
//!
//! NeMo mode (NeMo's GPU boosting tree, `GPUBoostingTreeModel.from_cb_tree`): an arc earns the
//! token score only (no output scores), matching continues past a completed phrase, and a node
//! that completes a phrase backs off at weight 0: its bonus is kept, the partial bonus of any
//! other node is taken back. Its final weight is the sum of the back-off weights down to the
//! root. NeMo's depth scaling ([`BoostOptions::depth_scaling`]) gives the label at depth
//! `d ≥ 2` the score `s·scale + ln d`.
//!
//! A phrase may also carry an end bonus, paid once when it completes and never taken back (its
//! own and along output links in strict mode): the word-level n-gram entries of 003 §4.1.3,
//! spelled in pieces with per-piece score 0 and the n-gram's bias score at the last piece.
//!
//! The back-off rule of the arrays then reproduces `forward_one_step` + `finalize` exactly, so
//! a sequence's total bonus never exceeds the scores of the phrases it completes.

use crate::arrays::{NgramLm, MAX_CHAIN};
use crate::error::{NgpuError, Result};

/// How a boosting tree pays for completed phrases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matching {
    /// icefall's strict mode: every phrase completed at a label pays its node score there,
    /// matching continues.
    #[default]
    Strict,
    /// icefall's non-strict mode: back to the root at a completed phrase, keeping the longest.
    NonStrict,
    /// NeMo's GPU boosting tree: token scores only; a node that completes a phrase is never
    /// taken back.
    Nemo,
}

impl Matching {
    /// Parses `strict`, `non-strict` or `nemo`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "strict" => Some(Self::Strict),
            "non-strict" => Some(Self::NonStrict),
            "nemo" => Some(Self::Nemo),
            _ => None,
        }
    }
}

/// How a boosting tree scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoostOptions {
    /// Bonus per matched label for phrases given no score of their own.
    pub default_score: f32,
    /// How completed phrases pay (strict, non-strict, NeMo).
    pub matching: Matching,
    /// NeMo's depth scaling: the label at depth `d ≥ 2` of a phrase with score `s` earns
    /// `s·scale + ln d` (a longer match is worth more per label); `None`: `s` at every depth.
    pub depth_scaling: Option<f32>,
    /// NeMo's `unk_score`: the weight of a label that starts no phrase, read at the root (also
    /// after a match breaks off, past its take-back); 0 in NeMo's decoding config and here.
    pub unk_score: f32,
}

impl Default for BoostOptions {
    fn default() -> Self {
        Self {
            default_score: 1.0,
            matching: Matching::Strict,
            depth_scaling: None,
            unk_score: 0.0,
        }
    }
}

/// A phrase: its labels (0..V), its per-label score (`None`: the default) and a bonus paid once
/// when it completes (003 §4.1.3's word-level n-gram entries: per-label score 0, the n-gram's
/// bias score at its last piece).
#[derive(Debug, Clone, PartialEq)]
pub struct Phrase {
    /// Labels.
    pub labels: Vec<u32>,
    /// Score per matched label.
    pub score: Option<f32>,
    /// Paid on completion, never taken back (0: none).
    pub end_bonus: f32,
}

impl Phrase {
    /// A keyword: `score` per matched label (`None`: the default), no end bonus.
    pub fn keyword(labels: Vec<u32>, score: Option<f32>) -> Self {
        Self {
            labels,
            score,
            end_bonus: 0.0,
        }
    }
}

/// A trie node during the build (its children in compressed rows beside).
#[derive(Debug, Clone)]
struct Node {
    token_score: f32,
    node_score: f32,
    output_score: f32,
    is_end: bool,
    end_bonus: f32,
    depth: usize,
    fail: usize,
    output: Option<usize>,
}

impl Node {
    fn new(depth: usize) -> Self {
        Self {
            token_score: 0.0,
            node_score: 0.0,
            output_score: 0.0,
            is_end: false,
            end_bonus: 0.0,
            depth,
            fail: 0,
            output: None,
        }
    }
}

/// What building a boosting tree found.
#[derive(Debug, Clone, PartialEq)]
pub struct BoostReport {
    /// Trie nodes (states), root included.
    pub nodes: usize,
    /// Phrases kept (duplicates merged).
    pub phrases: usize,
    /// Duplicate phrases (the larger score kept).
    pub duplicates: usize,
}

/// Builds the boosting tree of `phrases` over `vocab` labels as arrays.
pub fn boosting_tree(
    phrases: &[Phrase],
    vocab: usize,
    opts: &BoostOptions,
) -> Result<(NgramLm, BoostReport)> {
    if !(opts.default_score.is_finite()) {
        return Err(NgpuError::Invalid(format!(
            "boosting score {} is not finite",
            opts.default_score
        )));
    }
    if !opts.unk_score.is_finite() {
        return Err(NgpuError::Invalid(format!(
            "unknown-label score {} is not finite",
            opts.unk_score
        )));
    }
    if let Some(d) = opts.depth_scaling.filter(|d| !d.is_finite()) {
        return Err(NgpuError::Invalid(format!(
            "depth scaling {d} is not finite"
        )));
    }
    for (i, p) in phrases.iter().enumerate() {
        if p.labels.is_empty() {
            return Err(NgpuError::Invalid(format!("phrase {i} is empty")));
        }
        if let Some(l) = p.labels.iter().find(|l| **l as usize >= vocab) {
            return Err(NgpuError::Invalid(format!(
                "phrase {i}: label {l} is out of range (V = {vocab})"
            )));
        }
        if p.labels.len() >= MAX_CHAIN {
            return Err(NgpuError::Invalid(format!(
                "phrase {i} has {} labels; a boosting tree holds phrases of at most {} labels",
                p.labels.len(),
                MAX_CHAIN - 1
            )));
        }
        let s = p.score.unwrap_or(opts.default_score);
        if !s.is_finite() || !p.end_bonus.is_finite() {
            return Err(NgpuError::Invalid(format!(
                "phrase {i}: score {s} / end bonus {} is not finite",
                p.end_bonus
            )));
        }
    }
    // Phrases in label order; duplicates merged (the larger score and end bonus kept).
    let mut sorted: Vec<usize> = (0..phrases.len()).collect();
    sorted.sort_unstable_by(|&a, &b| phrases[a].labels.cmp(&phrases[b].labels).then(a.cmp(&b)));
    let mut uniq: Vec<(usize, f32, f32)> = Vec::with_capacity(sorted.len());
    for &i in &sorted {
        let p = &phrases[i];
        let s = p.score.unwrap_or(opts.default_score);
        match uniq.last_mut() {
            Some(u) if phrases[u.0].labels == p.labels => {
                u.1 = u.1.max(s);
                u.2 = u.2.max(p.end_bonus);
            }
            _ => uniq.push((i, s, p.end_bonus)),
        }
    }
    let duplicates = phrases.len() - uniq.len();
    // The trie (icefall's build: a shared node keeps the largest token score), built along
    // the sorted phrases: each shares its longest common prefix with the one before, so nodes
    // come in depth-first order and every node's children in increasing label order.
    let mut nodes = vec![Node::new(0)];
    let (mut parent, mut label) = (vec![0u32], vec![0u32]);
    let mut path: Vec<usize> = vec![0];
    let mut prev: &[u32] = &[];
    for &(pi, score, end_bonus) in &uniq {
        let labels = &phrases[pi].labels;
        let lcp = prev.iter().zip(labels).take_while(|(a, b)| a == b).count();
        path.truncate(lcp + 1);
        for (i, &l) in labels.iter().enumerate() {
            let token = match opts.depth_scaling {
                Some(d) if i > 0 => score * d + ((i + 1) as f32).ln(),
                _ => score,
            };
            if i < lcp {
                let c = path[i + 1];
                nodes[c].token_score = nodes[c].token_score.max(token);
            } else {
                let c = nodes.len();
                let mut node = Node::new(i + 1);
                node.token_score = token;
                nodes.push(node);
                parent.push(path[i] as u32);
                label.push(l);
                path.push(c);
            }
        }
        let last = path[labels.len()];
        nodes[last].is_end = true;
        nodes[last].end_bonus = nodes[last].end_bonus.max(end_bonus);
        prev = labels;
    }
    let ns = nodes.len();
    // Children as compressed rows (creation order keeps labels increasing); the root's by label.
    let mut child_start = vec![0u32; ns + 1];
    for &p in &parent[1..] {
        child_start[p as usize + 1] += 1;
    }
    for n in 0..ns {
        child_start[n + 1] += child_start[n];
    }
    let mut fill = child_start.clone();
    let mut children = vec![0u32; ns.saturating_sub(1)];
    for (c, &p) in parent.iter().enumerate().skip(1) {
        let p = p as usize;
        children[fill[p] as usize] = c as u32;
        fill[p] += 1;
    }
    let mut root_child = vec![u32::MAX; vocab];
    for &c in &children[..child_start[1] as usize] {
        root_child[label[c as usize] as usize] = c;
    }
    let kids = |n: usize| &children[child_start[n] as usize..child_start[n + 1] as usize];
    let child = |n: usize, l: u32| -> Option<usize> {
        if n == 0 {
            let c = root_child[l as usize];
            return (c != u32::MAX).then_some(c as usize);
        }
        let k = kids(n);
        k.binary_search_by(|&c| label[c as usize].cmp(&l))
            .ok()
            .map(|i| k[i] as usize)
    };
    // Node scores top-down, failure and output links breadth-first.
    let mut order: Vec<usize> = Vec::with_capacity(ns);
    order.push(0);
    let mut head = 0;
    while head < order.len() {
        let n = order[head];
        head += 1;
        for &c in kids(n) {
            let (c, l) = (c as usize, label[c as usize]);
            nodes[c].node_score = nodes[n].node_score + nodes[c].token_score;
            if n != 0 {
                let mut f = nodes[n].fail;
                nodes[c].fail = loop {
                    if let Some(t) = child(f, l) {
                        break t;
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = nodes[f].fail;
                };
            }
            // The nearest end node along the failure chain.
            let mut o = nodes[c].fail;
            nodes[c].output = loop {
                if o == 0 {
                    break None;
                }
                if nodes[o].is_end {
                    break Some(o);
                }
                o = nodes[o].fail;
            };
            order.push(c);
        }
    }
    // Output scores in breadth-first order (a node's output is shallower, already final).
    for &n in &order[1..] {
        let own = if nodes[n].is_end {
            nodes[n].node_score + nodes[n].end_bonus
        } else {
            0.0
        };
        let out = nodes[n].output.map_or(0.0, |o| nodes[o].output_score);
        nodes[n].output_score = own + out;
    }
    // Arrays: state = node id; arcs by (state, label); the root holds every label.
    let (mut arc_start, mut arc_label, mut arc_weight, mut arc_to) = (
        Vec::with_capacity(ns + 1),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let arc_of = |c: usize| -> (f32, u32) {
        let n = &nodes[c];
        if opts.matching == Matching::Strict {
            (n.token_score + n.output_score, c as u32)
        } else if opts.matching == Matching::Nemo {
            let bonus = if n.is_end { n.end_bonus } else { 0.0 };
            (n.token_score + bonus, c as u32)
        } else if n.output_score != 0.0 {
            // The longest phrase completed here: its partial score kept, its end bonus paid.
            let (kept, bonus) = if n.is_end {
                (n.node_score, n.end_bonus)
            } else {
                n.output.map_or((n.node_score, 0.0), |o| {
                    (nodes[o].node_score, nodes[o].end_bonus)
                })
            };
            (n.token_score + kept + bonus - n.node_score, 0)
        } else {
            (n.token_score, c as u32)
        }
    };
    arc_label.reserve(vocab + ns);
    arc_weight.reserve(vocab + ns);
    arc_to.reserve(vocab + ns);
    for s in 0..ns {
        arc_start.push(arc_label.len() as u32);
        if s == 0 {
            // Every label, at the unknown-label weight back to the root, then the phrases'
            // first labels.
            arc_label.extend(0..vocab as u32);
            arc_weight.resize(vocab, opts.unk_score);
            arc_to.resize(vocab, 0);
            for &c in kids(0) {
                let (w, t) = arc_of(c as usize);
                let l = label[c as usize] as usize;
                arc_weight[l] = w;
                arc_to[l] = t;
            }
        } else {
            for &c in kids(s) {
                let (w, t) = arc_of(c as usize);
                arc_label.push(label[c as usize]);
                arc_weight.push(w);
                arc_to.push(t);
            }
        }
    }
    arc_start.push(arc_label.len() as u32);
    let backoff_to: Vec<u32> = nodes.iter().map(|n| n.fail as u32).collect();
    let nemo = opts.matching == Matching::Nemo;
    let backoff_weight: Vec<f32> = nodes
        .iter()
        .map(|n| {
            if nemo && n.is_end {
                0.0
            } else {
                nodes[n.fail].node_score - n.node_score
            }
        })
        .collect();
    // The back-off weights summed down to the root (a failure link is shallower: breadth-first
    // order has it final already); `−node_score` outside NeMo mode.
    let mut final_weight: Vec<f32> = nodes.iter().map(|n| -n.node_score).collect();
    if nemo {
        for &n in &order {
            final_weight[n] = if n == 0 {
                0.0
            } else {
                backoff_weight[n] + final_weight[nodes[n].fail]
            };
        }
    }
    let depth = nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    let lm = NgramLm::from_parts(
        vocab,
        depth + 1,
        arc_start,
        arc_label,
        arc_weight,
        arc_to,
        backoff_to,
        backoff_weight,
        final_weight,
        0,
    );
    Ok((
        lm,
        BoostReport {
            nodes: ns,
            phrases: uniq.len(),
            duplicates,
        },
    ))
}

/// What [`word_lm_phrases`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WordLmReport {
    /// LM n-grams entered (spelled in labels).
    pub ngrams: usize,
    /// LM n-grams skipped: `<s>`, `</s>` or `<unk>` in them, or a word the spelling refuses.
    pub skipped: usize,
    /// Keywords listed in the LM (bias score + `in_lm`).
    pub keywords_in_lm: usize,
    /// Keywords not in the LM (bias `out_lm`).
    pub keywords_out_lm: usize,
    /// Keywords with a word the spelling refuses (left out).
    pub keywords_unspelled: usize,
}

/// The phrases of 003 §4.1.3's unified trie (Algorithm 2): every n-gram of a word-level LM,
/// spelled in labels by `spell` (a word's pieces), with the end bonus `e^{log10 p}` (the
/// thesis' bias score, a probability-space value added to log-probabilities) at its last label;
/// a keyword (words) that is an LM n-gram gets that bonus plus `in_lm` (α_inLM), one that is not
/// gets `out_lm` (α_outLM). Per-label scores are 0: the whole bonus comes at the last piece.
/// With no keywords this is the WL-n-gram-LM trie alone.
pub fn word_lm_phrases(
    lm: &ctx_core::arpa::ArpaLm,
    spell: impl Fn(&str) -> Option<Vec<u32>>,
    keywords: &[Vec<String>],
    in_lm: f32,
    out_lm: f32,
) -> (Vec<Phrase>, WordLmReport) {
    use ctx_core::arpa::{BOS, EOS, UNK};
    let mut rep = WordLmReport::default();
    let spell_all = |words: &[&str]| -> Option<Vec<u32>> {
        let mut out = Vec::new();
        for w in words {
            out.extend(spell(w)?);
        }
        Some(out)
    };
    let key_set: std::collections::HashSet<&[String]> =
        keywords.iter().map(Vec::as_slice).collect();
    let mut found: std::collections::HashSet<&[String]> = std::collections::HashSet::new();
    let mut phrases = Vec::new();
    for n in 1..=lm.order() {
        for e in lm.entries(n) {
            let words: Vec<&str> = e.words.iter().filter_map(|&w| lm.word(w)).collect();
            if words.len() != e.words.len() || words.iter().any(|w| [BOS, EOS, UNK].contains(w)) {
                rep.skipped += 1;
                continue;
            }
            let Some(labels) = spell_all(&words) else {
                rep.skipped += 1;
                continue;
            };
            let mut bonus = e.log10_prob.exp();
            let owned: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            if let Some(k) = key_set.get(owned.as_slice()) {
                found.insert(k);
                bonus += in_lm;
            }
            rep.ngrams += 1;
            phrases.push(Phrase {
                labels,
                score: Some(0.0),
                end_bonus: bonus,
            });
        }
    }
    rep.keywords_in_lm = found.len();
    for k in keywords {
        if found.contains(k.as_slice()) {
            continue;
        }
        let words: Vec<&str> = k.iter().map(String::as_str).collect();
        match spell_all(&words) {
            Some(labels) if !labels.is_empty() => {
                rep.keywords_out_lm += 1;
                phrases.push(Phrase {
                    labels,
                    score: Some(0.0),
                    end_bonus: out_lm,
                });
            }
            _ => rep.keywords_unspelled += 1,
        }
    }
    (phrases, rep)
}

/// The per-utterance half of 003's unified trie when the WL-n-gram-LM trie is shared
/// (`Contexts::SharedAndPerUtterance` of fusion): each keyword (words) with end bonus
/// `in_lm` (α_inLM; the shared trie already pays its `e^{log10 p}`) when it is an n-gram of
/// `lm`, else `out_lm` (α_outLM). Summed with the shared trie this scores as
/// [`word_lm_phrases`] with the keywords does. Keywords with a word the spelling refuses are
/// counted in `keywords_unspelled` and left out.
pub fn lm_keyword_phrases(
    lm: &ctx_core::arpa::ArpaLm,
    spell: impl Fn(&str) -> Option<Vec<u32>>,
    keywords: &[Vec<String>],
    in_lm: f32,
    out_lm: f32,
) -> (Vec<Phrase>, WordLmReport) {
    let mut rep = WordLmReport::default();
    let mut phrases = Vec::with_capacity(keywords.len());
    for k in keywords {
        let mut labels = Vec::new();
        if k.is_empty()
            || !k
                .iter()
                .all(|w| spell(w).map(|l| labels.extend(l)).is_some())
        {
            rep.keywords_unspelled += 1;
            continue;
        }
        let ids: Option<Vec<u32>> = k.iter().map(|w| lm.word_id(w)).collect();
        let in_the_lm = ids.is_some_and(|ids| ids.len() <= lm.order() && lm.entry(&ids).is_some());
        let bonus = if in_the_lm {
            rep.keywords_in_lm += 1;
            in_lm
        } else {
            rep.keywords_out_lm += 1;
            out_lm
        };
        phrases.push(Phrase {
            labels,
            score: Some(0.0),
            end_bonus: bonus,
        });
    }
    (phrases, rep)
}

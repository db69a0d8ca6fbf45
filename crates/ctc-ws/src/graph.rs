//! The context graph: phrases' spellings in a prefix tree with CTC's topology (NeMo's
//! `ContextGraphCTC`, after icefall's `ContextGraph`).

use crate::{Result, WsError};

/// One state: its transitions (label → state) in insertion order, which the spotter walks in
/// (NeMo's dict order), and the phrase it ends, if any.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct State {
    pub next: Vec<(u32, u32)>,
    pub end: Option<u32>,
}

impl State {
    fn get(&self, label: u32) -> Option<u32> {
        self.next.iter().find(|(l, _)| *l == label).map(|&(_, s)| s)
    }

    fn set(&mut self, label: u32, to: u32) {
        match self.next.iter_mut().find(|(l, _)| *l == label) {
            Some(x) => x.1 = to,
            None => self.next.push((label, to)),
        }
    }
}

/// Phrases' spellings in a CTC prefix tree: the root (state 0) leads to each first label; a
/// label's state loops on its label, goes on to the next label directly when it differs, and
/// through a blank state (which loops on blank) in any case.
///
/// ```
/// use ctc_ws::ContextGraph;
/// // Blank 0; "ab" spelled 1 2, "aa" spelled 1 1 (the repeat needs a blank between).
/// let g = ContextGraph::new(&[("ab".into(), vec![vec![1, 2]]), ("aa".into(), vec![vec![1, 1]])], 0, 3).unwrap();
/// assert_eq!(g.phrase(0), "ab");
/// assert_eq!(g.states(), 5); // root, a, blank after a, b, the second a
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContextGraph {
    pub(crate) states: Vec<State>,
    phrases: Vec<String>,
    pub(crate) blank: u32,
    pub(crate) width: usize,
}

impl ContextGraph {
    /// Builds the graph of `(phrase, spellings)` over a model of `width` columns with `blank`;
    /// a spelling is the phrase's labels (several spellings: variants of one phrase).
    pub fn new(phrases: &[(String, Vec<Vec<u32>>)], blank: u32, width: usize) -> Result<Self> {
        let mut g = Self {
            states: vec![State::default()],
            phrases: Vec::new(),
            blank,
            width,
        };
        for (text, spellings) in phrases {
            let id = g.phrases.len() as u32;
            g.phrases.push(text.clone());
            for sp in spellings {
                if let Some(&l) = sp.iter().find(|&&l| l == blank || l as usize >= width) {
                    return Err(WsError::Spelling {
                        phrase: text.clone(),
                        message: format!(
                            "label {l} is the blank or outside the model's {width} columns"
                        ),
                    });
                }
                if !sp.is_empty() {
                    g.insert(sp, id);
                }
            }
        }
        Ok(g)
    }

    fn add_state(&mut self) -> u32 {
        self.states.push(State::default());
        (self.states.len() - 1) as u32
    }

    /// The blank state after `s`, made on first use.
    fn blank_after(&mut self, s: u32) -> u32 {
        match self.states[s as usize].get(self.blank) {
            Some(b) => b,
            None => {
                let b = self.add_state();
                self.states[b as usize].set(self.blank, b);
                self.states[s as usize].set(self.blank, b);
                b
            }
        }
    }

    fn insert(&mut self, labels: &[u32], id: u32) {
        let mut prev = 0u32;
        let mut prev_label = None;
        for &l in labels {
            if prev_label == Some(l) {
                // A repeat: only through the blank state (a direct step would be the loop).
                let b = self.blank_after(prev);
                prev = match self.states[b as usize].get(l) {
                    Some(n) => n,
                    None => {
                        let n = self.add_state();
                        self.states[n as usize].set(l, n);
                        self.states[b as usize].set(l, n);
                        n
                    }
                };
            } else {
                prev = match self.states[prev as usize].get(l) {
                    Some(n) => n,
                    None => {
                        let n = self.add_state();
                        self.states[n as usize].set(l, n);
                        self.states[prev as usize].set(l, n);
                        if prev != 0 {
                            let b = self.blank_after(prev);
                            self.states[b as usize].set(l, n);
                        }
                        n
                    }
                };
            }
            prev_label = Some(l);
        }
        self.states[prev as usize].end = Some(id);
    }

    /// The text of phrase `id` (in the order given).
    pub fn phrase(&self, id: u32) -> &str {
        &self.phrases[id as usize]
    }

    /// Number of states (the root included).
    pub fn states(&self) -> usize {
        self.states.len()
    }
}

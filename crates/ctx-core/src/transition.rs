//! Kaldi's `TransitionModel` (the head of every `final.mdl`): which pdf-id each transition-id of a
//! Kaldi HCLG reads, so a graph built by Kaldi decodes pdf log-likelihoods directly.
//!
//! A Kaldi HCLG's input labels are transition-ids, not pdf-ids. The model lists transition-states
//! as tuples `(phone, hmm-state, forward-pdf, self-loop-pdf)` (`<Triples>` for plain HMMs, where
//! both pdfs are one; `<Tuples>` for chain models) and a topology giving each HMM state's
//! transitions. Transition-ids are numbered from 1 in tuple order, one per transition of the
//! tuple's HMM state; a transition back into its own state reads the self-loop pdf, any other the
//! forward pdf (Kaldi's `TransitionModel::ComputeDerived`). Both file forms are read: text (`copy
//! model --binary=false`) and binary (`\0B`); reading stops after the tuples, so whatever acoustic
//! model follows (GMM, nnet3) is never parsed. A two-column text map `transition-id pdf-id` is
//! read too, for models in other toolkits.

use crate::error::{CoreError, Result};
use crate::io::{read_bytes, write_atomic};
use std::collections::BTreeMap;
use std::path::Path;

/// One HMM state of a topology entry.
#[derive(Debug, Clone, PartialEq)]
pub struct TopoState {
    /// Pdf class of transitions leaving forward (−1: a final state with none).
    pub forward_pdf_class: i32,
    /// Pdf class of the self-loop (equal to `forward_pdf_class` in a plain HMM).
    pub self_loop_pdf_class: i32,
    /// `(destination hmm-state, probability)` per transition, in file order.
    pub transitions: Vec<(i32, f32)>,
}

/// One transition-state: `(phone, hmm-state, forward pdf, self-loop pdf)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitionTuple {
    /// Phone id.
    pub phone: i32,
    /// HMM state within the phone's topology.
    pub hmm_state: i32,
    /// Pdf of forward transitions.
    pub forward_pdf: i32,
    /// Pdf of the self-loop.
    pub self_loop_pdf: i32,
}

/// A Kaldi transition model: topology entries by phone and the transition-states.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TransitionModel {
    /// Topology entry of each phone that has one.
    pub topology: BTreeMap<i32, Vec<TopoState>>,
    /// Transition-states in file order (transition-state k is `tuples[k - 1]`).
    pub tuples: Vec<TransitionTuple>,
}

impl TransitionModel {
    /// Reads the transition model at the head of a Kaldi model file (text or binary; gzip too).
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = read_bytes(path)?;
        let mut r = Reader {
            path,
            b: &bytes,
            pos: 0,
            binary: false,
        };
        if bytes.starts_with(b"\0B") {
            r.binary = true;
            r.pos = 2;
        }
        let tm = r.model()?;
        tm.check().map_err(|m| CoreError::format(path, m))?;
        Ok(tm)
    }

    /// True when every state's self-loop reads its forward pdf (written as `<Triples>`).
    pub fn is_hmm(&self) -> bool {
        self.topology
            .values()
            .flatten()
            .all(|s| s.forward_pdf_class == s.self_loop_pdf_class)
    }

    fn check(&self) -> std::result::Result<(), String> {
        for (k, t) in self.tuples.iter().enumerate() {
            let topo = self.topology.get(&t.phone).ok_or_else(|| {
                format!(
                    "transition-state {} names phone {}, which has no topology entry",
                    k + 1,
                    t.phone
                )
            })?;
            if t.hmm_state < 0 || t.hmm_state as usize >= topo.len() {
                return Err(format!(
                    "transition-state {} names hmm-state {} of phone {}, whose topology has {} states",
                    k + 1,
                    t.hmm_state,
                    t.phone,
                    topo.len()
                ));
            }
            if t.forward_pdf < 0 || t.self_loop_pdf < 0 {
                return Err(format!("transition-state {} has a negative pdf-id", k + 1));
            }
        }
        Ok(())
    }

    /// Number of pdfs (one more than the largest pdf-id).
    pub fn num_pdfs(&self) -> usize {
        self.tuples
            .iter()
            .map(|t| t.forward_pdf.max(t.self_loop_pdf) as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The pdf-id of every transition-id: entry `tid` for `tid` in 1..=num_transition_ids
    /// (entry 0, which is ε, is unused and holds `u32::MAX`).
    pub fn pdf_of_transition_ids(&self) -> Vec<u32> {
        let mut out = vec![u32::MAX];
        for t in &self.tuples {
            let state = &self.topology[&t.phone][t.hmm_state as usize];
            for &(dest, _) in &state.transitions {
                out.push(if dest == t.hmm_state {
                    t.self_loop_pdf as u32
                } else {
                    t.forward_pdf as u32
                });
            }
        }
        out
    }

    /// Writes the model in Kaldi's text or binary form (the transition model only, log-probs of
    /// the topology's probabilities), readable by Kaldi's `copy-transition-model`.
    pub fn write(&self, path: &Path, binary: bool) -> Result<()> {
        let mut w = Writer {
            out: Vec::new(),
            binary,
        };
        if binary {
            w.out.extend_from_slice(b"\0B");
        }
        w.model(self);
        write_atomic(path, |f| f.write_all(&w.out))
    }
}

/// Reads a two-column text map `label column` — a transition-id and its pdf-id, or any graph
/// input label and the score column it reads — into the form of
/// [`TransitionModel::pdf_of_transition_ids`]. Ids must be unique and cover 1..=max without gaps.
pub fn read_pdf_map(path: &Path) -> Result<Vec<u32>> {
    let text = crate::io::read_text(path)?;
    let mut pairs = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let parse = |s: &str| s.parse::<u32>().ok();
        let (Some(tid), Some(pdf), 2) = (parse(f[0]), f.get(1).and_then(|s| parse(s)), f.len())
        else {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("expected `label column` (transition-id pdf-id, or graph input label score column), got {line:?}"),
            ));
        };
        if tid == 0 {
            return Err(CoreError::parse(path, i + 1, "label 0 is ε"));
        }
        if pairs.insert(tid, pdf).is_some() {
            return Err(CoreError::parse(path, i + 1, format!("label {tid} twice")));
        }
    }
    let mut out = vec![u32::MAX];
    for (k, (tid, pdf)) in pairs.into_iter().enumerate() {
        if tid as usize != k + 1 {
            return Err(CoreError::format(
                path,
                format!("label {} is missing", k + 1),
            ));
        }
        out.push(pdf);
    }
    if out.len() == 1 {
        return Err(CoreError::format(path, "the map is empty"));
    }
    Ok(out)
}

struct Reader<'a> {
    path: &'a Path,
    b: &'a [u8],
    pos: usize,
    binary: bool,
}

impl Reader<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> CoreError {
        CoreError::format(self.path, format!("byte {}: {msg}", self.pos))
    }

    fn skip_ws(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn word(&mut self) -> Result<String> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.b.len() && !self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.err("the file ends early (truncated model?)"));
        }
        let w = String::from_utf8_lossy(&self.b[start..self.pos]).into_owned();
        if self.binary && self.pos < self.b.len() {
            self.pos += 1; // the one space after a binary token
        }
        Ok(w)
    }

    fn expect(&mut self, tok: &str) -> Result<()> {
        let at = self.pos;
        let w = self.word()?;
        if w != tok {
            self.pos = at;
            return Err(self.err(format!("expected {tok}, found {w:?}")));
        }
        Ok(())
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.pos + n > self.b.len() {
            return Err(self.err("the file ends early (truncated model?)"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn int(&mut self) -> Result<i32> {
        if self.binary {
            let size = self.take(1)?[0];
            if size != 4 {
                return Err(self.err(format!("expected a 4-byte integer, size byte {size}")));
            }
            let v = self.take(4)?;
            Ok(i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
        } else {
            let w = self.word()?;
            w.parse()
                .map_err(|_| self.err(format!("expected an integer, found {w:?}")))
        }
    }

    fn float(&mut self) -> Result<f32> {
        if self.binary {
            let size = self.take(1)?[0];
            match size {
                4 => {
                    let v = self.take(4)?;
                    Ok(f32::from_le_bytes([v[0], v[1], v[2], v[3]]))
                }
                8 => {
                    let v = self.take(8)?;
                    Ok(f64::from_le_bytes(v.try_into().expect("8 bytes")) as f32)
                }
                s => Err(self.err(format!("expected a float, size byte {s}"))),
            }
        } else {
            let w = self.word()?;
            w.parse()
                .map_err(|_| self.err(format!("expected a number, found {w:?}")))
        }
    }

    fn int_vector(&mut self) -> Result<Vec<i32>> {
        let size = self.take(1)?[0];
        if size != 4 {
            return Err(self.err(format!("expected an int32 vector, size byte {size}")));
        }
        let n = self.take(4)?;
        let n = i32::from_le_bytes([n[0], n[1], n[2], n[3]]);
        if n < 0 || n as usize > self.b.len() {
            return Err(self.err(format!("bad vector length {n}")));
        }
        let raw = self.take(4 * n as usize)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn model(&mut self) -> Result<TransitionModel> {
        self.expect("<TransitionModel>")?;
        self.expect("<Topology>")?;
        let topology = if self.binary {
            self.binary_topology()?
        } else {
            self.text_topology()?
        };
        let at = self.pos;
        let (hmm, close) = match self.word()?.as_str() {
            "<Triples>" => (true, "</Triples>"),
            "<Tuples>" => (false, "</Tuples>"),
            w => {
                self.pos = at;
                return Err(self.err(format!("expected <Triples> or <Tuples>, found {w:?}")));
            }
        };
        let n = self.int()?;
        if n < 0 {
            return Err(self.err(format!("negative tuple count {n}")));
        }
        let mut tuples = Vec::with_capacity(n.min(1 << 20) as usize);
        for _ in 0..n {
            let phone = self.int()?;
            let hmm_state = self.int()?;
            let forward_pdf = self.int()?;
            let self_loop_pdf = if hmm { forward_pdf } else { self.int()? };
            tuples.push(TransitionTuple {
                phone,
                hmm_state,
                forward_pdf,
                self_loop_pdf,
            });
        }
        self.expect(close)?;
        Ok(TransitionModel { topology, tuples })
    }

    fn text_topology(&mut self) -> Result<BTreeMap<i32, Vec<TopoState>>> {
        let mut out = BTreeMap::new();
        loop {
            match self.word()?.as_str() {
                "</Topology>" => return Ok(out),
                "<TopologyEntry>" => {}
                w => return Err(self.err(format!("expected <TopologyEntry>, found {w:?}"))),
            }
            self.expect("<ForPhones>")?;
            let mut phones = Vec::new();
            loop {
                let w = self.word()?;
                if w == "</ForPhones>" {
                    break;
                }
                phones.push(
                    w.parse::<i32>()
                        .map_err(|_| self.err(format!("phone {w:?} is not an integer")))?,
                );
            }
            let mut states = Vec::new();
            loop {
                match self.word()?.as_str() {
                    "</TopologyEntry>" => break,
                    "<State>" => {}
                    w => return Err(self.err(format!("expected <State>, found {w:?}"))),
                }
                let id = self.int()?;
                if id as usize != states.len() {
                    return Err(self.err(format!(
                        "states must be numbered in order: expected {}, found {id}",
                        states.len()
                    )));
                }
                let mut st = TopoState {
                    forward_pdf_class: -1,
                    self_loop_pdf_class: -1,
                    transitions: Vec::new(),
                };
                loop {
                    match self.word()?.as_str() {
                        "</State>" => break,
                        "<PdfClass>" => {
                            st.forward_pdf_class = self.int()?;
                            st.self_loop_pdf_class = st.forward_pdf_class;
                        }
                        "<ForwardPdfClass>" => st.forward_pdf_class = self.int()?,
                        "<SelfLoopPdfClass>" => st.self_loop_pdf_class = self.int()?,
                        "<Transition>" => {
                            let d = self.int()?;
                            let p = self.float()?;
                            st.transitions.push((d, p));
                        }
                        w => {
                            return Err(
                                self.err(format!("unsupported token {w:?} in a topology state"))
                            )
                        }
                    }
                }
                states.push(st);
            }
            for p in phones {
                out.insert(p, states.clone());
            }
        }
    }

    fn binary_topology(&mut self) -> Result<BTreeMap<i32, Vec<TopoState>>> {
        let _phones = self.int_vector()?;
        let phone2idx = self.int_vector()?;
        let mut n = self.int()?;
        let hmm = n != -1;
        if !hmm {
            n = self.int()?;
        }
        if n < 0 {
            return Err(self.err(format!("negative topology entry count {n}")));
        }
        let mut entries = Vec::new();
        for _ in 0..n {
            let ns = self.int()?;
            let mut states = Vec::new();
            for _ in 0..ns.max(0) {
                let forward_pdf_class = self.int()?;
                let self_loop_pdf_class = if hmm { forward_pdf_class } else { self.int()? };
                let nt = self.int()?;
                let mut transitions = Vec::new();
                for _ in 0..nt.max(0) {
                    let d = self.int()?;
                    let p = self.float()?;
                    transitions.push((d, p));
                }
                states.push(TopoState {
                    forward_pdf_class,
                    self_loop_pdf_class,
                    transitions,
                });
            }
            entries.push(states);
        }
        self.expect("</Topology>")?;
        let mut out = BTreeMap::new();
        for (phone, &idx) in phone2idx.iter().enumerate() {
            if idx >= 0 {
                let e = entries.get(idx as usize).ok_or_else(|| {
                    self.err(format!("phone {phone} names topology entry {idx}, of {n}"))
                })?;
                out.insert(phone as i32, e.clone());
            }
        }
        Ok(out)
    }
}

struct Writer {
    out: Vec<u8>,
    binary: bool,
}

impl Writer {
    fn token(&mut self, t: &str) {
        self.out.extend_from_slice(t.as_bytes());
        self.out.push(b' ');
    }

    fn nl(&mut self) {
        if !self.binary {
            self.out.push(b'\n');
        }
    }

    fn int(&mut self, v: i32) {
        if self.binary {
            self.out.push(4);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.out.extend_from_slice(format!("{v} ").as_bytes());
        }
    }

    fn float(&mut self, v: f32) {
        if self.binary {
            self.out.push(4);
            self.out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.out.extend_from_slice(format!("{v} ").as_bytes());
        }
    }

    fn int_vector(&mut self, v: &[i32]) {
        self.out.push(4);
        self.out.extend_from_slice(&(v.len() as i32).to_le_bytes());
        for x in v {
            self.out.extend_from_slice(&x.to_le_bytes());
        }
    }

    fn model(&mut self, tm: &TransitionModel) {
        let hmm = tm.is_hmm();
        self.token("<TransitionModel>");
        self.nl();
        self.token("<Topology>");
        self.nl();
        // Phones sharing one topology share one entry, as Kaldi groups them.
        let mut entries: Vec<(&Vec<TopoState>, Vec<i32>)> = Vec::new();
        for (&p, e) in &tm.topology {
            match entries.iter_mut().find(|(x, _)| *x == e) {
                Some((_, ps)) => ps.push(p),
                None => entries.push((e, vec![p])),
            }
        }
        if self.binary {
            let phones: Vec<i32> = tm.topology.keys().copied().collect();
            let max = phones.last().copied().unwrap_or(0);
            let mut phone2idx = vec![-1; max as usize + 1];
            for (i, (_, ps)) in entries.iter().enumerate() {
                for &p in ps {
                    phone2idx[p as usize] = i as i32;
                }
            }
            self.int_vector(&phones);
            self.int_vector(&phone2idx);
            if !hmm {
                self.int(-1);
            }
            self.int(entries.len() as i32);
            for (states, _) in &entries {
                self.int(states.len() as i32);
                for s in states.iter() {
                    self.int(s.forward_pdf_class);
                    if !hmm {
                        self.int(s.self_loop_pdf_class);
                    }
                    self.int(s.transitions.len() as i32);
                    for &(d, p) in &s.transitions {
                        self.int(d);
                        self.float(p);
                    }
                }
            }
        } else {
            for (states, ps) in &entries {
                self.token("<TopologyEntry>");
                self.nl();
                self.token("<ForPhones>");
                self.nl();
                for p in ps {
                    self.int(*p);
                }
                self.nl();
                self.token("</ForPhones>");
                self.nl();
                for (j, s) in states.iter().enumerate() {
                    self.token("<State>");
                    self.int(j as i32);
                    if s.forward_pdf_class >= 0 {
                        if hmm {
                            self.token("<PdfClass>");
                            self.int(s.forward_pdf_class);
                        } else {
                            self.token("<ForwardPdfClass>");
                            self.int(s.forward_pdf_class);
                            self.token("<SelfLoopPdfClass>");
                            self.int(s.self_loop_pdf_class);
                        }
                    }
                    for &(d, p) in &s.transitions {
                        self.token("<Transition>");
                        self.int(d);
                        self.float(p);
                    }
                    self.token("</State>");
                    self.nl();
                }
                self.token("</TopologyEntry>");
                self.nl();
            }
        }
        self.token("</Topology>");
        self.nl();
        self.token(if hmm { "<Triples>" } else { "<Tuples>" });
        self.int(tm.tuples.len() as i32);
        self.nl();
        for t in &tm.tuples {
            self.int(t.phone);
            self.int(t.hmm_state);
            self.int(t.forward_pdf);
            if !hmm {
                self.int(t.self_loop_pdf);
            }
            self.nl();
        }
        self.token(if hmm { "</Triples>" } else { "</Tuples>" });
        self.nl();
        // Log-probabilities of every transition-id (index 0 unused), as Kaldi stores them.
        let logp: Vec<f32> = std::iter::once(0.0)
            .chain(tm.tuples.iter().flat_map(|t| {
                tm.topology[&t.phone][t.hmm_state as usize]
                    .transitions
                    .iter()
                    .map(|&(_, p)| p.ln())
            }))
            .collect();
        self.token("<LogProbs>");
        self.nl();
        if self.binary {
            self.token("FV");
            self.int(logp.len() as i32);
            for p in &logp {
                self.out.extend_from_slice(&p.to_le_bytes());
            }
        } else {
            self.out.extend_from_slice(b" [ ");
            for p in &logp {
                self.out.extend_from_slice(format!("{p} ").as_bytes());
            }
            self.out.extend_from_slice(b"]\n");
        }
        self.token("</LogProbs>");
        self.nl();
        self.token("</TransitionModel>");
        self.nl();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 3-state left-to-right topology of Kaldi's `hmm-topology.h` documentation, for phones
    /// 1–3, and a 1-state topology with a self-loop for phone 4.
    const TEXT: &str = "<TransitionModel>
<Topology>
<TopologyEntry>
<ForPhones>
1 2 3
</ForPhones>
<State> 0 <PdfClass> 0 <Transition> 0 0.5 <Transition> 1 0.5 </State>
<State> 1 <PdfClass> 1 <Transition> 1 0.5 <Transition> 2 0.5 </State>
<State> 2 <PdfClass> 2 <Transition> 2 0.5 <Transition> 3 0.5 </State>
<State> 3 </State>
</TopologyEntry>
<TopologyEntry>
<ForPhones> 4 </ForPhones>
<State> 0 <PdfClass> 0 <Transition> 0 0.25 <Transition> 1 0.75 </State>
<State> 1 </State>
</TopologyEntry>
</Topology>
<Triples> 4
1 0 0
1 1 5
4 0 7
2 2 3
</Triples>
<LogProbs>
 [ 0 -0.69 -0.69 -0.69 -0.69 -1.38 -0.28 -0.69 -0.69 ]
</LogProbs>
</TransitionModel>
";

    #[test]
    fn transition_ids_follow_kaldi_numbering() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("final.mdl");
        std::fs::write(&p, TEXT).unwrap();
        let tm = TransitionModel::read(&p).unwrap();
        assert!(tm.is_hmm());
        assert_eq!(tm.num_pdfs(), 8);
        // Two transitions per tuple: tids 1,2 (state 1-0), 3,4 (1-1), 5,6 (4-0), 7,8 (2-2).
        let m = tm.pdf_of_transition_ids();
        assert_eq!(&m[1..], &[0, 0, 5, 5, 7, 7, 3, 3]);
        for binary in [false, true] {
            let q = dir.path().join(format!("w{binary}.mdl"));
            tm.write(&q, binary).unwrap();
            assert_eq!(TransitionModel::read(&q).unwrap(), tm, "binary {binary}");
        }
    }

    #[test]
    fn chain_tuples_read_self_loop_pdfs() {
        let text = "<TransitionModel> <Topology> <TopologyEntry> <ForPhones> 1 2 </ForPhones>
<State> 0 <ForwardPdfClass> 0 <SelfLoopPdfClass> 1 <Transition> 0 0.5 <Transition> 1 0.5 </State>
<State> 1 </State> </TopologyEntry> </Topology>
<Tuples> 2
1 0 10 11
2 0 20 21
</Tuples> <LogProbs> [ ] </LogProbs> </TransitionModel>";
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("final.mdl");
        std::fs::write(&p, text).unwrap();
        let tm = TransitionModel::read(&p).unwrap();
        assert!(!tm.is_hmm());
        // The self-loop (0 -> 0) is listed first: tid 1 reads 11, tid 2 (forward) reads 10.
        assert_eq!(&tm.pdf_of_transition_ids()[1..], &[11, 10, 21, 20]);
        let q = dir.path().join("b.mdl");
        tm.write(&q, true).unwrap();
        let back = TransitionModel::read(&q).unwrap();
        assert_eq!(back.pdf_of_transition_ids(), tm.pdf_of_transition_ids());
    }

    #[test]
    fn bad_models_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m");
        std::fs::write(&p, TEXT.replace("4 0 7", "9 0 7")).unwrap();
        let e = TransitionModel::read(&p).unwrap_err().to_string();
        assert!(
            e.contains("phone 9") && e.contains("transition-state 3"),
            "{e}"
        );
        let tm = {
            std::fs::write(&p, TEXT).unwrap();
            TransitionModel::read(&p).unwrap()
        };
        tm.write(&p, true).unwrap();
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() / 2]).unwrap();
        let e = TransitionModel::read(&p).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        std::fs::write(&p, "1 0\n2 4\n4 1\n").unwrap();
        let e = read_pdf_map(&p).unwrap_err().to_string();
        assert!(e.contains("label 3 is missing"), "{e}");
        std::fs::write(&p, "1 0\n2 x\n").unwrap();
        let e = read_pdf_map(&p).unwrap_err().to_string();
        assert!(e.contains(":2:"), "{e}");
        std::fs::write(&p, "2 7\n1 3\n").unwrap();
        assert_eq!(read_pdf_map(&p).unwrap(), vec![u32::MAX, 3, 7]);
    }
}

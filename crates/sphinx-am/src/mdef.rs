//! The binary model definition ("BMDF", pocketsphinx's bin_mdef.c): the base phones, every
//! context-dependent triphone with its senone sequence and transition matrix, and the tree that
//! finds a triphone from (word position, base, left, right).

use crate::bytes::{read_model_file, Cursor};
use crate::error::Result;
use std::path::Path;

/// 'BMDF' read as a little-endian 32-bit integer.
const MAGIC: u32 = 0x4644_4d42;

/// Where a phone sits in its word (pocketsphinx's `word_posn_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WordPos {
    /// Inside a word.
    Internal = 0,
    /// First phone of a word.
    Begin = 1,
    /// Last phone of a word.
    End = 2,
    /// The only phone of a word.
    Single = 3,
}

const POSITIONS: [WordPos; 4] = [
    WordPos::Internal,
    WordPos::Begin,
    WordPos::End,
    WordPos::Single,
];

/// One node of the context-dependency tree.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TreeNode {
    ctx: i16,
    n_down: i16,
    /// A phone id (leaf) or the first child's index.
    down: i32,
}

/// One phone (base or triphone).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phone {
    /// Its senone sequence.
    pub ssid: u32,
    /// Its transition matrix.
    pub tmat: u32,
    /// Base phone: whether it is a filler (noise, silence). Triphone: its word position.
    pub info0: u8,
    /// Triphone: base, left and right phone ids (base phones: unused).
    pub ctx: [u8; 3],
}

/// A model definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Mdef {
    /// Base (context-independent) phone names, in id order.
    pub ci_names: Vec<String>,
    /// Every phone: the base phones first, then the triphones.
    pub phones: Vec<Phone>,
    /// Emitting states per phone (3 in en-us).
    pub n_emit_state: usize,
    /// Context-independent senones (the first senone ids).
    pub n_ci_senone: usize,
    /// All senones.
    pub n_senone: usize,
    /// Transition matrices.
    pub n_tmat: usize,
    /// Senone sequences, `n_emit_state` senones each.
    pub sseq: Vec<u16>,
    /// The silence phone's id.
    pub sil: usize,
    tree: Vec<TreeNode>,
}

impl Mdef {
    /// Reads a binary mdef (or its `.gz`); the text format is not read.
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// use sphinx_am::{Mdef, WordPos};
    /// let m = Mdef::read(&dir.join("mdef")).unwrap();
    /// let (ae, k, t) = (m.ci("AE").unwrap(), m.ci("K").unwrap(), m.ci("T").unwrap());
    /// // "cat": AE between K and T, inside the word.
    /// let p = m.triphone(ae, k, t, WordPos::Internal).unwrap();
    /// assert_eq!(m.base_of(p), ae);
    /// assert_eq!(m.senones(p).len(), 3);
    /// ```
    pub fn read(path: &Path) -> Result<Self> {
        let (path, data) = read_model_file(path)?;
        let mut c = Cursor::new(&path, &data);
        let magic = c.u32("magic")?;
        if magic == MAGIC.swap_bytes() {
            c.set_swap(true);
        } else if magic != MAGIC {
            return Err(c.error(format!(
                "not a binary model definition: magic {magic:#010x}, expected 'BMDF'"
            )));
        }
        let version = c.i32("format version")?;
        if version > 1 {
            return Err(c.error(format!("format version {version} is newer than 1")));
        }
        let desc = c.count("header length", 1 << 20)?;
        c.bytes(desc, "format description")?;
        let n_ci = c.count("number of base phones", 255)?;
        let n_phone = c.count("number of phones", 1 << 24)?;
        let n_emit_state = c.count("emitting states per phone", 64)?;
        let n_ci_senone = c.count("number of base senones", 1 << 16)?;
        let n_senone = c.count("number of senones", 0xffff)?;
        let n_tmat = c.count("number of transition matrices", 1 << 15)?;
        let n_sseq = c.count("number of senone sequences", 1 << 24)?;
        let n_ctx = c.count("context width", 16)?;
        let n_tree = c.count("number of tree nodes", 1 << 24)?;
        let _sil = c.i32("silence phone")?;
        if n_emit_state == 0 {
            return Err(c.error(
                "heterogeneous topologies (0 emitting states per phone) are not supported"
                    .to_string(),
            ));
        }
        if n_ctx != 3 {
            return Err(c.error(format!(
                "context width {n_ctx}: only triphones (3) are read"
            )));
        }
        if n_ci > n_phone || n_ci_senone > n_senone {
            return Err(c.error(format!(
                "{n_ci} base phones of {n_phone}, {n_ci_senone} base senones of {n_senone}"
            )));
        }
        let names_start = c.pos();
        let mut ci_names = Vec::with_capacity(n_ci);
        for i in 0..n_ci {
            ci_names.push(c.cstr(&format!("name of base phone {i}"))?);
        }
        // The tree starts at the next multiple of 4 from the start of the names.
        let used = c.pos() - names_start;
        c.seek(names_start + ((used + 3) & !3), "context tree")?;
        let mut tree = Vec::with_capacity(n_tree);
        for i in 0..n_tree {
            let what = format!("tree node {i}");
            tree.push(TreeNode {
                ctx: c.i16(&what)?,
                n_down: c.i16(&what)?,
                down: c.i32(&what)?,
            });
        }
        let mut phones = Vec::with_capacity(n_phone);
        for i in 0..n_phone {
            let what = format!("phone {i}");
            let ssid = c.i32(&what)?;
            let tmat = c.i32(&what)?;
            let info = c.bytes(4, &what)?;
            if ssid < 0 || ssid as usize >= n_sseq || tmat < 0 || tmat as usize >= n_tmat {
                return Err(c.error(format!(
                    "phone {i}: senone sequence {ssid} (of {n_sseq}) or transition matrix \
                     {tmat} (of {n_tmat}) out of range"
                )));
            }
            phones.push(Phone {
                ssid: ssid as u32,
                tmat: tmat as u32,
                info0: info[0],
                ctx: [info[1], info[2], info[3]],
            });
        }
        let sseq_size = c.count("senone sequence table size", 1 << 28)?;
        if sseq_size != n_sseq * n_emit_state {
            return Err(c.error(format!(
                "senone sequence table of {sseq_size} entries, but {n_sseq} sequences × \
                 {n_emit_state} states make {}",
                n_sseq * n_emit_state
            )));
        }
        let sseq = c.u16s(sseq_size, "senone sequences")?;
        if let Some(i) = sseq.iter().position(|&s| s as usize >= n_senone) {
            return Err(c.error(format!(
                "senone sequence {} names senone {} of {n_senone}",
                i / n_emit_state,
                sseq[i]
            )));
        }
        for (i, p) in phones.iter().enumerate().skip(n_ci) {
            if p.ctx.iter().any(|&x| x as usize >= n_ci) || p.info0 > 3 {
                return Err(c.error(format!(
                    "triphone {i}: context {:?} or word position {} out of range",
                    p.ctx, p.info0
                )));
            }
        }
        for (i, n) in tree.iter().enumerate() {
            // A leaf of -1 marks a context with no trained triphone.
            let bad = if n.n_down == 0 {
                n.down < -1 || n.down >= n_phone as i32
            } else {
                n.n_down < 0 || n.down < 0 || n.down as usize + n.n_down as usize > n_tree
            };
            if bad {
                return Err(c.error(format!(
                    "tree node {i} points outside the tree or the phones ({} children at {})",
                    n.n_down, n.down
                )));
            }
        }
        let sil = ci_names
            .iter()
            .position(|n| n == "SIL")
            .ok_or_else(|| c.error("no SIL base phone".to_string()))?;
        Ok(Self {
            ci_names,
            phones,
            n_emit_state,
            n_ci_senone,
            n_senone,
            n_tmat,
            sseq,
            sil,
            tree,
        })
    }

    /// Number of base phones.
    pub fn n_ci(&self) -> usize {
        self.ci_names.len()
    }

    /// The id of base phone `name`.
    pub fn ci(&self, name: &str) -> Option<usize> {
        self.ci_names.iter().position(|n| n == name)
    }

    /// Whether base phone `ci` is a filler (silence, noise).
    pub fn is_filler(&self, ci: usize) -> bool {
        self.phones[ci].info0 != 0
    }

    /// The base phone of phone `p`.
    pub fn base_of(&self, p: usize) -> usize {
        if p < self.n_ci() {
            p
        } else {
            self.phones[p].ctx[0] as usize
        }
    }

    /// The senones of phone `p`'s states.
    pub fn senones(&self, p: usize) -> &[u16] {
        let s = self.phones[p].ssid as usize * self.n_emit_state;
        &self.sseq[s..s + self.n_emit_state]
    }

    /// The triphone (base, left, right, position) exactly as trained, if the model has it
    /// (fillers in context count as silence, as pocketsphinx's `bin_mdef_phone_id`).
    pub fn triphone(&self, base: usize, left: usize, right: usize, pos: WordPos) -> Option<usize> {
        let n = self.n_ci();
        if base >= n || left >= n || right >= n {
            return None;
        }
        let as_sil = |p: usize| if self.is_filler(p) { self.sil } else { p };
        let ctx = [
            pos as i16,
            base as i16,
            as_sil(left) as i16,
            as_sil(right) as i16,
        ];
        let (mut start, mut count) = (0usize, POSITIONS.len());
        for (level, &want) in ctx.iter().enumerate() {
            let node = self.tree[start..start + count]
                .iter()
                .find(|n| n.ctx == want)?;
            if node.n_down == 0 {
                return usize::try_from(node.down).ok();
            }
            if level == 3 {
                return None;
            }
            start = node.down as usize;
            count = node.n_down as usize;
        }
        None
    }

    /// The phone pocketsphinx uses for (base, left, right, position): the exact triphone, else
    /// the same context at another word position, else with silence for filler contexts and
    /// at word edges (any position), else the base phone (`bin_mdef_phone_id_nearest`).
    pub fn nearest_phone(&self, base: usize, left: usize, right: usize, pos: WordPos) -> usize {
        if let Some(p) = self.triphone(base, left, right, pos) {
            return p;
        }
        let other = |l, r| {
            POSITIONS
                .iter()
                .filter(|&&q| q != pos)
                .find_map(|&q| self.triphone(base, l, r, q))
        };
        if let Some(p) = other(left, right) {
            return p;
        }
        let edge_l = matches!(pos, WordPos::Begin | WordPos::Single);
        let edge_r = matches!(pos, WordPos::End | WordPos::Single);
        let nl = if left < self.n_ci() && (self.is_filler(left) || edge_l) {
            self.sil
        } else {
            left
        };
        let nr = if right < self.n_ci() && (self.is_filler(right) || edge_r) {
            self.sil
        } else {
            right
        };
        if (nl, nr) != (left, right) {
            if let Some(p) = self.triphone(base, nl, nr, pos).or_else(|| other(nl, nr)) {
                return p;
            }
        }
        base
    }
}

impl Mdef {
    /// The base phone of every senone (pocketsphinx's `sen2cimap`): in a phonetically-tied
    /// (PTM) model it names the senone's Gaussian codebook. A senone no phone uses maps to
    /// `None`.
    pub fn senone_bases(&self) -> Vec<Option<usize>> {
        let mut out = vec![None; self.n_senone];
        for p in 0..self.phones.len() {
            let base = self.base_of(p);
            for &s in self.senones(p) {
                out[s as usize].get_or_insert(base);
            }
        }
        out
    }
}

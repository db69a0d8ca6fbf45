//! The en-us model as shipped reads with the sizes pocketsphinx reports, every triphone is found
//! again through the context tree, and each kind of damage to a file is a named error.

use sphinx_am::{Gaussians, Mdef, MixtureWeights, Model, SphinxError, TransitionMatrices, WordPos};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The word positions in pocketsphinx's order (the mdef's `info0` of a triphone).
const POSITIONS: [WordPos; 4] = [
    WordPos::Internal,
    WordPos::Begin,
    WordPos::End,
    WordPos::Single,
];

fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us")
}

/// The raw bytes of a shipped file (gunzipped).
fn raw(name: &str) -> Vec<u8> {
    let dir = model_dir();
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read(plain).unwrap();
    }
    let f = std::fs::File::open(dir.join(format!("{name}.gz"))).unwrap();
    let mut v = Vec::new();
    flate2_read(f, &mut v);
    v
}

fn flate2_read(f: std::fs::File, out: &mut Vec<u8>) {
    // The test links flate2 through the crate; decode with a tiny helper to keep it honest.
    let mut d = flate2::read::GzDecoder::new(f);
    d.read_to_end(out).unwrap();
}

/// A copy of the model in a temporary folder with `name` replaced by `bytes`.
fn damaged(name: &str, bytes: &[u8]) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    for f in [
        "mdef",
        "means",
        "variances",
        "sendump",
        "transition_matrices",
        "feat.params",
        "noisedict",
    ] {
        let data = if f == name { bytes.to_vec() } else { raw(f) };
        std::fs::File::create(t.path().join(f))
            .unwrap()
            .write_all(&data)
            .unwrap();
    }
    t
}

fn message(e: SphinxError) -> String {
    e.to_string()
}

#[test]
fn the_shipped_model_has_pocketsphinx_sizes() {
    let m = Model::load(&model_dir()).unwrap();
    assert_eq!(m.mdef.n_ci(), 42);
    assert_eq!(m.mdef.phones.len(), 137_095);
    assert_eq!(m.mdef.sseq.len() / m.mdef.n_emit_state, 29_324);
    assert_eq!(
        (m.mdef.n_senone, m.mdef.n_ci_senone, m.mdef.n_emit_state),
        (5126, 126, 3)
    );
    assert_eq!(m.mdef.ci_names[m.mdef.sil], "SIL");
    assert_eq!(
        (m.means.n_codebook, m.means.n_stream, m.means.n_density),
        (42, 3, 128)
    );
    assert_eq!(m.means.veclen, vec![13, 13, 13]);
    // Variances are never negative; a few are 0 (pocketsphinx floors them when scoring).
    assert!(
        m.variances.data.iter().all(|&v| v >= 0.0),
        "variances non-negative"
    );
    assert_eq!(
        (m.mixw.n_stream, m.mixw.n_density, m.mixw.n_senone),
        (3, 128, 5126)
    );
    assert_eq!(m.fillers.len(), 5);
    assert_eq!(m.feat.get("cmn"), Some("batch"));
    // Rows of transition probabilities sum to 1; a 3-state left-to-right HMM never jumps back.
    for t in 0..m.tmat.n_tmat {
        for from in 0..3 {
            let row: f32 = (0..4).map(|to| m.tmat.prob(t, from, to)).sum();
            assert!(
                (row - 1.0).abs() < 1e-5,
                "tmat {t} row {from} sums to {row}"
            );
            for to in 0..from {
                assert_eq!(m.tmat.prob(t, from, to), 0.0, "tmat {t}: {from} -> {to}");
            }
        }
    }
    // The base phones' senones are the first 126, three each, in order.
    for ci in 0..42 {
        let s: Vec<u16> = m.mdef.senones(ci).to_vec();
        assert_eq!(s, vec![3 * ci as u16, 3 * ci as u16 + 1, 3 * ci as u16 + 2]);
        assert_eq!(m.senone_codebook[s[0] as usize], ci);
    }
}

#[test]
fn every_triphone_is_found_again_through_the_tree() {
    let m = Mdef::read(&model_dir().join("mdef")).unwrap();
    let pos = POSITIONS;
    let mut checked = 0;
    for (i, p) in m.phones.iter().enumerate().skip(m.n_ci()) {
        let [b, l, r] = p.ctx.map(|x| x as usize);
        let found = m.triphone(b, l, r, pos[p.info0 as usize]);
        assert_eq!(found, Some(i), "triphone {i} {:?} at {}", p.ctx, p.info0);
        checked += 1;
    }
    assert_eq!(checked, 137_095 - 42);
}

#[test]
fn missing_triphones_back_off_as_pocketsphinx_does() {
    let m = Mdef::read(&model_dir().join("mdef")).unwrap();
    let pos = POSITIONS;
    // A context trained at one word position only: asked at another, the trained one is used.
    let (i, p) = m
        .phones
        .iter()
        .enumerate()
        .skip(m.n_ci())
        .find(|(_, p)| {
            let [b, l, r] = p.ctx.map(|x| x as usize);
            (0..4)
                .filter(|&q| m.triphone(b, l, r, pos[q]).is_some())
                .count()
                == 1
        })
        .expect("a context trained at one position");
    let [b, l, r] = p.ctx.map(|x| x as usize);
    let other = pos[(p.info0 as usize + 1) % 4];
    assert_eq!(m.triphone(b, l, r, other), None);
    assert_eq!(m.nearest_phone(b, l, r, other), i);
    // A filler in context counts as silence.
    let noise = m.ci("+NSN+").unwrap();
    let (ae, t) = (m.ci("AE").unwrap(), m.ci("T").unwrap());
    assert_eq!(
        m.triphone(ae, noise, t, WordPos::Begin),
        m.triphone(ae, m.sil, t, WordPos::Begin)
    );
    // A filler base phone has no triphones: the base phone itself.
    assert_eq!(m.nearest_phone(noise, ae, t, WordPos::Internal), noise);
}

/// Every (base, left, right, position) of the model's base phones resolves to the phone
/// pocketsphinx 5.1.1's `bin_mdef_phone_id_nearest` gives (its dict2pid's choice for
/// word-internal phones and, with the neighbouring words' phones as context, for the first,
/// last and only phones of words), from `scripts/sphinx_triphone_fixture.py`'s dump.
#[test]
fn every_context_resolves_to_pocketsphinx_s_phone() {
    let m = Mdef::read(&model_dir().join("mdef")).unwrap();
    let f = std::fs::File::open(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/nearest_phone.u32.gz"),
    )
    .unwrap();
    let mut bytes = Vec::new();
    flate2_read(f, &mut bytes);
    let n = m.n_ci();
    assert_eq!(bytes.len(), 4 * 4 * n * n * n, "one u32 per lookup");
    let want = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize);
    let mut it = want.into_iter();
    let (mut differ, mut cross_word_triphones) = (Vec::new(), 0usize);
    for pos in POSITIONS {
        for b in 0..n {
            for l in 0..n {
                for r in 0..n {
                    let want = it.next().unwrap();
                    let got = m.nearest_phone(b, l, r, pos);
                    if got != want {
                        differ.push((
                            pos,
                            [&m.ci_names[b], &m.ci_names[l], &m.ci_names[r]],
                            got,
                            want,
                        ));
                    }
                    if pos != WordPos::Internal && got >= n {
                        cross_word_triphones += 1;
                    }
                }
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} lookups differ, first {:?}",
        differ.len(),
        &differ[..differ.len().min(5)]
    );
    // The table is not trivial: most word-edge contexts have a trained triphone.
    assert!(
        cross_word_triphones > 3 * n * n * n / 2,
        "{cross_word_triphones}"
    );
}

#[test]
fn damaged_files_are_named_errors() {
    let mdef = raw("mdef");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("mdef", mdef[..mdef.len() / 2].to_vec(), "truncated"),
        (
            "mdef",
            b"XMDF\x01\0\0\0".to_vec(),
            "not a binary model definition",
        ),
        ("means", b"s3\nversion 1.0\n".to_vec(), "no 'endhdr'"),
        ("means", b"s4\n".to_vec(), "not an s3 parameter file"),
        (
            "transition_matrices",
            {
                let mut t = raw("transition_matrices");
                let n = t.len();
                t[n - 9] ^= 0x40; // a value's bits: the checksum no longer matches
                t
            },
            "checksum mismatch",
        ),
        (
            "variances",
            {
                let mut v = raw("variances");
                v.extend_from_slice(&[0, 0, 0, 0]);
                v
            },
            "unexpected bytes",
        ),
        (
            "sendump",
            {
                let mut s = raw("sendump");
                s.push(7);
                s
            },
            "not whole",
        ),
        ("feat.params", b"-nfilt 25\nlowerf 130\n".to_vec(), "line 2"),
        ("noisedict", b"<s> SIL extra\n".to_vec(), "line 1"),
    ];
    for (file, bytes, want) in cases {
        let t = damaged(file, &bytes);
        let e = message(Model::load(t.path()).unwrap_err());
        assert!(e.contains(want), "{file}: '{e}' lacks '{want}'");
        assert!(e.contains(file), "{file}: '{e}' does not name the file");
    }
    // A header whose counts would need more memory than the file holds: refused, no panic.
    let mut means = raw("means");
    let at = means.windows(7).position(|w| w == b"endhdr\n").unwrap() + 7 + 4;
    means[at..at + 4].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let t = damaged("means", &means);
    let e = message(Gaussians::read(&t.path().join("means")).unwrap_err());
    assert!(e.contains("number of codebooks"), "{e}");
    // A weights file cut to whole tables still disagrees with its own header.
    let s = raw("sendump");
    let t = damaged("sendump", &s[..s.len() - 128 * 5126]);
    let e = message(MixtureWeights::read(&t.path().join("sendump")).unwrap_err());
    assert!(
        e.contains("the header says 3 streams, the file holds 2"),
        "{e}"
    );
    // Files that disagree: transition matrices of another count than mdef names.
    let mut tm = raw("transition_matrices");
    let at = tm.windows(7).position(|w| w == b"endhdr\n").unwrap() + 7 + 4;
    tm.splice(at..at + 4, 41u32.to_le_bytes());
    let t = damaged("transition_matrices", &tm);
    let e = message(Model::load(t.path()).unwrap_err());
    assert!(e.contains("holds"), "{e}");
    // A missing file names itself and its .gz.
    let t = tempfile::tempdir().unwrap();
    let e = message(TransitionMatrices::read(&t.path().join("transition_matrices")).unwrap_err());
    assert!(e.contains("transition_matrices.gz"), "{e}");
}

/// C of a cross-word lexicon reads "ten of" as pocketsphinx's triphones: N sees the next
/// word's AH, AH the previous word's N, the utterance edges silence.
#[test]
fn cross_word_triphones_take_the_neighbouring_words_phones() {
    use ctx_core::lexicon::{Lexicon, LexiconEntry};
    use ctx_graph::rustfst::prelude::*;
    use sphinx_am::hclg::CrossWordLexicon;
    let model = Model::load(&model_dir()).unwrap();
    let m = &model.mdef;
    let mut words = Lexicon::new();
    for (w, p) in [("ten", "T EH N"), ("of", "AH V")] {
        words.push(LexiconEntry {
            word: w.into(),
            prob: 1.0,
            phones: p.split(' ').map(String::from).collect(),
        });
    }
    let cw = CrossWordLexicon::build(&model, &words, None, &[], false).unwrap();
    let c = &cw.context;
    let unit = |name: &str| cw.units.iter().position(|u| u == name).unwrap() as u32 + 1;
    // Walk C by its outputs (L's units, then the end marker); C's inputs are the triphones.
    let mut read = vec![];
    let mut s = c.fst.start().unwrap();
    for o in ["T_B", "EH_I", "N_E", "AH_B", "V_E"]
        .map(unit)
        .into_iter()
        .chain([c.end_label()])
    {
        let tr = c
            .fst
            .get_trs(s)
            .unwrap()
            .trs()
            .iter()
            .find(|t| t.olabel == o)
            .cloned()
            .unwrap();
        if tr.ilabel <= c.num_cd() {
            read.push(cw.cd_names[tr.ilabel as usize - 1].clone());
        } else {
            assert_eq!(
                tr.ilabel,
                c.start_label(),
                "only the first unit is read unlabelled"
            );
        }
        s = tr.nextstate;
    }
    assert!(c.fst.final_weight(s).unwrap().is_some());
    let ci = |p: &str| m.ci(p).unwrap();
    let name = |b, l, r, pos| {
        let p = m.nearest_phone(ci(b), ci(l), ci(r), pos);
        let [b, l, r] = m.phones[p].ctx.map(|x| m.ci_names[x as usize].clone());
        format!(
            "{b}({l},{r}){}",
            ["i", "b", "e", "s"][m.phones[p].info0 as usize]
        )
    };
    let want = vec![
        name("T", "SIL", "EH", WordPos::Begin),
        name("EH", "T", "N", WordPos::Internal),
        name("N", "EH", "AH", WordPos::End),
        name("AH", "N", "V", WordPos::Begin),
        name("V", "AH", "SIL", WordPos::End),
    ];
    assert_eq!(read, want);
    // The word-edge triphones are the cross-word ones the model trained.
    assert_eq!(read[2], "N(EH,AH)e");
    assert_eq!(read[3], "AH(N,V)b");
}

//! Bad inputs: score matrices.

use super::*;

bad_inputs! {
    huge_ark: "ark matrix header of 2^31 × 2^31 values"
        => |b| {
            let d = b.case_dir("huge-ark");
            let p = d.join("huge.ark");
            let mut bytes = std::fs::read(b.ark(&d, |e| e.truncate(1))).unwrap();
            bytes.extend(ark_header(&b.id(1), i32::MAX, i32::MAX));
            std::fs::write(&p, bytes).unwrap();
            (
                b.decode(&p, &b.data, &[]),
                Expect::Fails(vec![
                    "huge.ark".into(),
                    b.id(1),
                    "2147483647×2147483647".into(),
                    "more than memory holds".into(),
                ]),
            )
        };

    big_ark: "ark matrix header of 10^5 × 10^5 values, 40 bytes of them there"
        => |b| {
            let d = b.case_dir("big-ark");
            let p = d.join("big.ark");
            let mut bytes = std::fs::read(b.ark(&d, |e| e.truncate(1))).unwrap();
            bytes.extend(ark_header(&b.id(1), 100_000, 100_000));
            bytes.extend([0u8; 40]);
            std::fs::write(&p, bytes).unwrap();
            (
                b.decode(&p, &b.data, &[]),
                Expect::Fails(vec![
                    "big.ark".into(),
                    b.id(1),
                    "truncated".into(),
                    "holds 40 more".into(),
                ]),
            )
        };

    npy_overflow: ".npy whose shape overflows (2^62 × 4, Fortran order, no body)"
        => |b| {
            let d = b.case_dir("npy-overflow");
            let f = npy_folder(b, &d, |p| {
                npy(
                    p,
                    "{'descr': '<f4', 'fortran_order': True, 'shape': (4611686018427387904, 4), }",
                    &[],
                )
            });
            (
                b.decode(&f, &b.data, &[]),
                Expect::Fails(vec![format!("{}.npy", b.id(0)), "more than 2^64".into()]),
            )
        };

    npy_wrap: ".npy whose size wraps to 160 bytes ((2^62 + 1) × 40)"
        => |b| {
            let d = b.case_dir("npy-wrap");
            let f = npy_folder(b, &d, |p| {
                npy(
                    p,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 40), }",
                    &[0u8; 160],
                )
            });
            (
                b.decode(&f, &b.data, &[]),
                Expect::Fails(vec![format!("{}.npy", b.id(0)), "the file has 160".into()]),
            )
        };

    wide: "scores one column wider than the graph reads"
        => |b| {
            let d = b.case_dir("wide");
            let p = b.ark(&d, |e| {
                let (u, m) = &e[2];
                let mut data = Vec::new();
                for t in 0..m.rows() {
                    data.push(-30.0);
                    data.extend_from_slice(m.row(t));
                }
                e[2] = (
                    u.clone(),
                    ScoreMatrix::new(m.rows(), m.cols() + 1, data).unwrap(),
                );
            });
            (
                b.decode(&p, &b.data, &[]),
                Expect::Fails(vec![b.id(2), "41 columns".into(), "--score-columns".into()]),
            )
        };

    wide_declared: "scores wider than the graph, the model's width declared"
        => |b| {
            let d = b.case_dir("wide-declared");
            let p = b.ark(&d, |e| {
                for (_, m) in e.iter_mut() {
                    let mut data = Vec::new();
                    for t in 0..m.rows() {
                        data.extend_from_slice(m.row(t));
                        data.push(-30.0);
                    }
                    *m = ScoreMatrix::new(m.rows(), m.cols() + 1, data).unwrap();
                }
            });
            (
                b.decode(&p, &b.data, &["--score-columns", "41"]),
                Expect::Clean(strs(&["warning"])),
            )
        };

    flat: "flat scores of 1e6 (path costs past f32's precision): bounded, said"
        => |b| {
            let d = b.case_dir("flat");
            let p = b.ark(&d, |e| {
                let m = &e[0].1;
                e[0].1 = ScoreMatrix::new(m.rows(), m.cols(), vec![1e6; m.rows() * m.cols()])
                    .unwrap();
            });
            (
                b.decode(&p, &b.data, &[]),
                Expect::Warns(vec![b.id(0), "shifted by its maximum".into()]),
            )
        };

    stray: "an archive entry for an utterance not in text"
        => |b| {
            let d = b.case_dir("stray");
            let p = b.ark(&d, |e| {
                let m = e[0].1.clone();
                e.push(("not-an-utterance".into(), m));
            });
            (
                b.decode(&p, &b.data, &[]),
                Expect::Warns(strs(&["1 score entr", "not-an-utterance", "not decoded"])),
            )
        };

    stray_strict: "an archive entry for an utterance not in text, --strict"
        => |b| {
            let d = b.case_dir("stray-strict");
            let p = b.ark(&d, |e| {
                let m = e[0].1.clone();
                e.push(("not-an-utterance".into(), m));
            });
            (
                b.decode(&p, &b.data, &["--strict"]),
                Expect::Fails(strs(&["not-an-utterance", "strict"])),
            )
        };

    one_frame: "one frame for an utterance of seconds"
        => |b| {
            let d = b.case_dir("one-frame");
            let p = b.ark(&d, |e| {
                let m = &e[1].1;
                e[1].1 = ScoreMatrix::new(1, m.cols(), m.row(0).to_vec()).unwrap();
            });
            (
                b.decode(&p, &b.data, &[]),
                Expect::Fails(vec![b.id(1), "1 frames".into(), "frame shift".into()]),
            )
        };

    dur1000: "utt2dur durations × 1000"
        => |b| {
            let d = b.case_dir("dur1000");
            let data = b.data_copy(&d);
            let t = std::fs::read_to_string(data.join("utt2dur")).unwrap();
            let t: String = t
                .lines()
                .map(|l| {
                    let (u, s) = l.split_once(' ').unwrap();
                    format!("{u} {}\n", s.parse::<f64>().unwrap() * 1000.0)
                })
                .collect();
            std::fs::write(data.join("utt2dur"), t).unwrap();
            let p = b.ark(&d, |_| {});
            (
                b.decode(&p, &data, &[]),
                // Every utterance is wrong: the first in the set is named.
                Expect::Fails(vec![b.id(0), "its duration is".into()]),
            )
        };

    scp: "an scp whose offset is not a matrix's"
        => |b| {
            let d = b.case_dir("scp");
            let p = b.ark(&d, |_| {});
            let scp = d.join("s.scp");
            let idx = ctx_core::score_table::ScoreTable::open(&p).unwrap();
            let mut s = String::new();
            for (k, u) in idx.ids().iter().enumerate() {
                // The real offsets come from an index; utterance 2's is off by 7 bytes.
                let off = offsets(&p)[k] + if k == 2 { 7 } else { 0 };
                s.push_str(&format!("{u} {}:{off}\n", p.display()));
            }
            std::fs::write(&scp, s).unwrap();
            (
                b.decode(&scp, &b.data, &[]),
                Expect::Fails(vec![b.id(2), "byte offset".into(), "scp".into()]),
            )
        };

    scp_ranges: "an scp row range past its matrix (issue 70: Kaldi ranges were read as a file name; the negative offset is in ctx-core's reader test)"
        => |b| {
            let d = b.case_dir("scp-ranges");
            let p = b.ark(&d, |_| {});
            let scp = d.join("s.scp");
            let idx = ctx_core::score_table::ScoreTable::open(&p).unwrap();
            let mut s = String::new();
            for (k, u) in idx.ids().iter().enumerate() {
                // Utterance 1 keeps rows 0..=999999 of its matrix: past its end.
                let range = if k == 1 { "[0:999999]" } else { "" };
                s.push_str(&format!("{u} {}:{}{range}\n", p.display(), offsets(&p)[k]));
            }
            std::fs::write(&scp, s).unwrap();
            (
                b.decode(&scp, &b.data, &[]),
                Expect::Fails(vec![b.id(1), "[0:999999".into(), "past its".into()]),
            )
        };

    rows_off: "a binary entry whose header says one row more than it holds"
        => |b| {
            let d = b.case_dir("rows-off");
            let p = b.ark(&d, |_| {});
            let mut bytes = std::fs::read(&p).unwrap();
            // Utterance 1's rows field: the header starts at its key.
            let key = format!("{} \0BFM ", b.id(1));
            let at = bytes
                .windows(key.len())
                .position(|w| w == key.as_bytes())
                .unwrap()
                + key.len()
                + 1;
            let rows = i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            bytes[at..at + 4].copy_from_slice(&(rows + 1).to_le_bytes());
            std::fs::write(&p, bytes).unwrap();
            (
                b.decode(&p, &b.data, &[]),
                Expect::Fails(vec![
                    "expected an utterance key".into(),
                    format!("the entry before, utterance {}", b.id(1)),
                ]),
            )
        };

    missing: "a missing score file: the OS error said once"
        => |b| {
            let d = b.case_dir("missing");
            (
                b.decode(&d.join("nothing.ark"), &b.data, &[]),
                Expect::Fails(strs(&[
                    "nothing.ark",
                    "No such file or directory (os error 2)",
                ])),
            )
        };
}

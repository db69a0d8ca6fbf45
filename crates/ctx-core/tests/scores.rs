//! Score-matrix formats: .npy (f32/f16/f64, C and Fortran order) and Kaldi archives (text and
//! binary), round trips and the errors bad files must give.

use ctx_core::scores::{read_ark, read_npy, write_ark, write_npy, ArkReader, ScoreMatrix};
use std::io::Write;

fn sample(rows: usize, cols: usize, seed: f32) -> ScoreMatrix {
    let data = (0..rows * cols)
        .map(|i| -(i as f32) * 0.37 + seed)
        .collect();
    ScoreMatrix::new(rows, cols, data).unwrap()
}

fn npy_bytes(descr: &str, fortran: bool, shape: &str, body: &[u8]) -> Vec<u8> {
    let mut h = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(body);
    out
}

#[test]
fn npy_round_trip_and_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let m = sample(7, 5, 1.5);
    let p = dir.path().join("m.npy");
    write_npy(&p, &m).unwrap();
    assert_eq!(read_npy(&p).unwrap(), m);

    // f64 and f16 read as f32.
    let vals = [0.5f64, -1.25, 3.0, -0.125, 2.0, 8.0];
    let body: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&p, npy_bytes("<f8", false, "(2, 3)", &body)).unwrap();
    let r = read_npy(&p).unwrap();
    assert_eq!((r.rows(), r.cols()), (2, 3));
    assert_eq!(r.row(1), &[-0.125, 2.0, 8.0]);
    let body: Vec<u8> = vals
        .iter()
        .flat_map(|v| half::f16::from_f64(*v).to_le_bytes())
        .collect();
    std::fs::write(&p, npy_bytes("<f2", false, "(2, 3)", &body)).unwrap();
    assert_eq!(read_npy(&p).unwrap().row(0), &[0.5, -1.25, 3.0]);
    // Fortran order is transposed into rows: column-major [0.5 -1.25 | 3 -0.125 | 2 8] is
    // [[0.5, 3, 2], [-1.25, -0.125, 8]].
    let body: Vec<u8> = vals
        .iter()
        .flat_map(|v| (*v as f32).to_le_bytes())
        .collect();
    std::fs::write(&p, npy_bytes("<f4", true, "(2, 3)", &body)).unwrap();
    let r = read_npy(&p).unwrap();
    assert_eq!(r.row(0), &[0.5, 3.0, 2.0]);
    assert_eq!(r.row(1), &[-1.25, -0.125, 8.0]);
}

#[test]
fn npy_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.npy");
    std::fs::write(&p, npy_bytes("<i4", false, "(1, 2)", &[0; 8])).unwrap();
    let e = read_npy(&p).unwrap_err().to_string();
    assert!(
        e.contains("bad.npy") && e.contains("<i4") && e.contains("unsupported dtype"),
        "{e}"
    );
    std::fs::write(&p, npy_bytes("<f4", false, "(2, 2)", &[0; 12])).unwrap();
    assert!(read_npy(&p)
        .unwrap_err()
        .to_string()
        .contains("needs 16 data bytes"));
    std::fs::write(&p, npy_bytes("<f4", false, "(4,)", &[0; 16])).unwrap();
    assert!(read_npy(&p).unwrap_err().to_string().contains("2-D"));
    let body: Vec<u8> = [0.0f32, f32::NAN, 1.0, 2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(&p, npy_bytes("<f4", false, "(2, 2)", &body)).unwrap();
    let e = read_npy(&p).unwrap_err().to_string();
    assert!(e.contains("frame 0, column 1") && e.contains("NaN"), "{e}");
    // The file, then the utterance it holds by its stem (not the path twice).
    assert!(e.contains("bad.npy: utterance bad: frame 0"), "{e}");
    std::fs::write(&p, b"not numpy").unwrap();
    assert!(read_npy(&p).unwrap_err().to_string().contains("magic"));
}

#[test]
fn ark_round_trips_text_binary_and_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let a = sample(3, 4, 0.25);
    let b = sample(1, 4, -2.0);
    let empty = ScoreMatrix::zeros(0, 0);
    let entries = [("utt-a", &a), ("utt-b", &b), ("utt-empty", &empty)];
    for (name, binary) in [
        ("t.ark", false),
        ("b.ark", true),
        ("b.ark.gz", true),
        ("t.ark.gz", false),
    ] {
        let p = dir.path().join(name);
        write_ark(&p, entries.iter().copied(), binary).unwrap();
        let back = read_ark(&p).unwrap();
        assert_eq!(back.len(), 3, "{name}");
        assert_eq!(back[0].0, "utt-a");
        assert_eq!(back[0].1, a, "{name}");
        assert_eq!(back[1].1, b, "{name}");
        assert_eq!(back[2].1.rows(), 0, "{name}");
    }
}

#[test]
fn ark_reads_kaldi_written_text_and_double_binary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.ark");
    // As copy-matrix ark,t: writes it, including a mixed-in double-precision binary entry.
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(b"u1  [\n  1 2 3 \n  4 5 6 ]\n").unwrap();
    f.write_all(b"u2 \0BDM \x04\x01\x00\x00\x00\x04\x02\x00\x00\x00")
        .unwrap();
    for v in [0.5f64, -0.5] {
        f.write_all(&v.to_le_bytes()).unwrap();
    }
    drop(f);
    let all = read_ark(&p).unwrap();
    assert_eq!(all[0].1.row(1), &[4.0, 5.0, 6.0]);
    assert_eq!(all[1].0, "u2");
    assert_eq!(all[1].1.row(0), &[0.5, -0.5]);
}

#[test]
fn ark_errors_name_the_utterance() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.ark");
    std::fs::write(&p, "good [\n 1 2 \n 3 4 ]\nragged [\n 1 2 3\n 4 5 ]\n").unwrap();
    let mut it = ArkReader::open(&p).unwrap();
    assert!(it.next().unwrap().is_ok());
    let e = it.next().unwrap().unwrap_err().to_string();
    assert!(
        e.contains("bad.ark") && e.contains("ragged") && e.contains("row 1 has 2 values"),
        "{e}"
    );
    assert!(it.next().is_none());

    std::fs::write(&p, "u1 [\n 1 nan\n ]\n").unwrap();
    let e = read_ark(&p).unwrap_err().to_string();
    assert!(
        e.contains("utterance u1") && e.contains("frame 0, column 1"),
        "{e}"
    );
    std::fs::write(&p, "u1 [\n 1 2\n").unwrap();
    assert!(read_ark(&p)
        .unwrap_err()
        .to_string()
        .contains("no closing ]"));
    std::fs::write(
        &p,
        "u1 \0BFM \x04\x02\x00\x00\x00\x04\x02\x00\x00\x00\x00\x00",
    )
    .unwrap();
    assert!(read_ark(&p)
        .unwrap_err()
        .to_string()
        .contains("truncated binary"));
    std::fs::write(&p, "u1 \0BCM junk").unwrap();
    assert!(read_ark(&p).unwrap_err().to_string().contains("compressed"));
    std::fs::write(&p, "u1 [ 1 ]\nu1 [ 2 ]\n").unwrap();
    assert!(read_ark(&p).unwrap_err().to_string().contains("twice"));
}

#[test]
fn all_finite_finds_every_kind_of_non_finite_value_at_any_position() {
    use ctx_core::scores::all_finite;
    let mut v: Vec<f32> = (0..200).map(|i| -(i as f32) * 0.37).collect();
    v[7] = f32::MAX;
    v[8] = f32::MIN;
    v[9] = f32::MIN_POSITIVE / 4.0; // subnormal: finite
    assert!(all_finite(&v));
    assert!(all_finite(&[]));
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for pos in [0, 63, 64, 130, 199] {
            let mut w = v.clone();
            w[pos] = bad;
            assert!(!all_finite(&w), "{bad} at {pos}");
        }
    }
}

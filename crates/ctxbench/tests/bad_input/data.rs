//! Bad inputs: data folders and lists.

use super::*;

/// A registry in `d` with one audio entry `radio` over pocketsphinx's test recordings, with
/// `extra` lines (its radio channel), and `decode` of it with `set` (a `--set KEY=VALUE`).
fn radio_case(d: &std::path::Path, extra: &str, set: Option<&str>) -> Vec<String> {
    let r = common::root().canonicalize().unwrap();
    let t = r.join("datasets/pocketsphinx-test");
    let reg = d.join("datasets.toml");
    std::fs::write(
        &reg,
        format!(
            "[radio]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"{}\"\nlexicon = \"{}\"\nlm = \"{}\"\n{extra}",
            r.join("datasets/sphinx-en-us").display(),
            t.join("data").display(),
            t.join("lexicon.txt").display(),
            t.join("lm.arpa").display()
        ),
    )
    .unwrap();
    let mut args = strs(&["decode", "--registry"]);
    args.push(reg.display().to_string());
    args.extend(strs(&["--dataset", "radio", "--methods", "none"]));
    if let Some(x) = set {
        args.extend(strs(&["--set", x]));
    }
    args
}

bad_inputs! {

    radio_snr_without_channel: "snr_db set for an audio entry that has no radio channel"
        => |b| {
            let d = b.case_dir("radio-snr-without-channel");
            (
                radio_case(&d, "", Some("snr_db=10")),
                Expect::Fails(strs(&["dataset radio", "the entry has no radio channel ([radio.channel])"])),
            )
        };

    radio_clip_out_of_range: "a radio channel clipping above its peak"
        => |b| {
            let d = b.case_dir("radio-clip");
            (
                radio_case(&d, "[radio.channel]\nsnr_db = 10.0\nclip = 1.5\n", None),
                Expect::Fails(strs(&["dataset radio", "clip 1.5 must be in (0, 1]"])),
            )
        };

    radio_band_above_nyquist: "a radio channel's pass band beyond a 16 kHz recording's"
        => |b| {
            let d = b.case_dir("radio-band");
            (
                radio_case(&d, "[radio.channel]\nsnr_db = 10.0\nhigh_hz = 9000.0\n", None),
                Expect::Fails(strs(&["dataset radio", "pass band 300–9000 Hz"])),
            )
        };

    radio_unknown_key: "a radio channel key misspelt"
        => |b| {
            let d = b.case_dir("radio-key");
            (
                radio_case(&d, "[radio.channel]\nsnr = 10.0\n", None),
                Expect::Fails(strs(&["datasets.toml", "unknown field `snr`", "snr_db"])),
            )
        };
    segments: "segments naming a recording wav.scp does not list"
        => |b| {
            let d = b.case_dir("segments");
            let data = b.data_copy(&d);
            let t = std::fs::read_to_string(data.join("utt2dur")).unwrap();
            let mut seg = String::new();
            for (k, l) in t.lines().enumerate() {
                let (u, s) = l.split_once(' ').unwrap();
                let rec = if k == 3 { "rec-lost" } else { "rec-a" };
                seg.push_str(&format!("{u} {rec} 0.0 {s}\n"));
            }
            std::fs::write(data.join("segments"), seg).unwrap();
            std::fs::write(data.join("wav.scp"), "rec-a /dev/null\n").unwrap();
            let p = b.ark(&d, |_| {});
            (
                b.decode(&p, &data, &[]),
                Expect::Fails(vec!["segments:4".into(), b.id(3), "rec-lost".into()]),
            )
        };

    bom: "a byte-order mark before the first id of text"
        => |b| {
            let d = b.case_dir("bom");
            let data = b.data_copy(&d);
            let t = std::fs::read_to_string(data.join("text")).unwrap();
            std::fs::write(data.join("text"), format!("\u{feff}{t}")).unwrap();
            let p = b.ark(&d, |_| {});
            (
                b.decode(&p, &data, &[]),
                Expect::Clean(strs(&["have no scores", "warning"])),
            )
        };

    bias_utt: "--bias-utt naming an utterance text does not have"
        => |b| {
            let d = b.case_dir("bias-utt");
            let l = d.join("lists.tsv");
            std::fs::write(&l, format!("{}\tcontact radar\nutt-typo\tclimb\n", b.id(0)))
                .unwrap();
            let p = b.ark(&d, |_| {});
            (
                b.decode(&p, &b.data, &["--bias-utt", l.to_str().unwrap()]),
                Expect::Fails(strs(&["lists.tsv", "utt-typo", "is not in"])),
            )
        };

    oov_list: "a biasing list of only out-of-vocabulary phrases"
        => |b| {
            let d = b.case_dir("oov-list");
            let l = d.join("list.txt");
            std::fs::write(&l, "zqxv wubble\nflorp\n").unwrap();
            let p = b.ark(&d, |_| {});
            let mut a = b.decode(&p, &b.data, &["--bias-list", l.to_str().unwrap()]);
            let m = a.iter().position(|x| x == "none").unwrap();
            a[m] = "none,list:global".into();
            (
                a,
                Expect::Warns(strs(&[
                    "phrases of its biasing lists have a word outside the vocabulary",
                    "decoded unbiased",
                ])),
            )
        };
}

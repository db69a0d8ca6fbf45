//! Bad inputs: data folders and lists.

use super::*;

bad_inputs! {
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

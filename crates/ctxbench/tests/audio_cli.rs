//! `kind = "audio"` datasets from WAV to WER in one command (issue 41): pocketsphinx's test
//! recordings scored by CMU Sphinx en-us while `ctxbench decode` decodes them, and bad audio
//! refused with the file or utterance named.

mod common;
use common::*;

use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Word errors of `hyp` against `reference` (edit distance).
fn errors(reference: &[&str], hyp: &[&str]) -> usize {
    let mut prev: Vec<usize> = (0..=hyp.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, h) in hyp.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(r != h))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[hyp.len()]
}

/// Word errors of every hypothesis against its reference (both `utt → words` tables).
fn word_errors(
    refs: &std::collections::BTreeMap<String, String>,
    hyps: &std::collections::BTreeMap<String, String>,
) -> usize {
    refs.iter()
        .map(|(id, r)| {
            errors(
                &r.split_whitespace().collect::<Vec<_>>(),
                &hyps[id].split_whitespace().collect::<Vec<_>>(),
            )
        })
        .sum()
}

/// A registry entry `[name]` over pocketsphinx-test's recordings and the shipped model, with
/// this lexicon and LM (absolute paths) and `extra` lines.
fn ps_entry(name: &str, lexicon: &Path, lm: &Path, extra: &str) -> String {
    let r = root().canonicalize().unwrap();
    format!(
        "[{name}]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"{}\"\nlexicon = \"{}\"\nlm = \"{}\"\n{extra}",
        r.join("datasets/sphinx-en-us").display(),
        r.join("datasets/pocketsphinx-test/data").display(),
        lexicon.display(),
        lm.display()
    )
}

/// `ctxbench args`, which must succeed (its stderr shown otherwise).
fn succeeds(args: &[&str]) -> std::process::Output {
    let out = ctxbench(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn table(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (id, w) = l.split_once(' ').unwrap_or((l, ""));
            (!id.is_empty()).then(|| (id.to_string(), w.trim().to_string()))
        })
        .collect()
}

#[test]
fn real_recordings_decode_from_wav_to_wer() {
    let dir = tempfile::tempdir().unwrap();
    let out = ctxbench(&[
        "decode",
        "--dataset",
        "pocketsphinx-test",
        "--methods",
        "none",
        "--hyp-dir",
        s(dir.path()),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("front end + scores + search RTFx"),
        "{stdout}"
    );
    let refs = table(
        &std::fs::read_to_string(root().join("datasets/pocketsphinx-test/data/text")).unwrap(),
    );
    let hyps = table(&std::fs::read_to_string(dir.path().join("none.txt")).unwrap());
    assert_eq!(hyps.len(), 10, "every recording decoded");
    let mut total = 0;
    for (id, r) in &refs {
        let h = &hyps[id];
        let e = errors(
            &r.split_whitespace().collect::<Vec<_>>(),
            &h.split_whitespace().collect::<Vec<_>>(),
        );
        // The five cards recordings are recognised word for word (pocketsphinx: the same).
        if id.len() == 3 {
            assert_eq!(h, r, "utterance {id}");
        }
        total += e;
    }
    // 92 words, none wrong with the cross-word graph at pocketsphinx's silence, filler and word
    // insertion probabilities and its flat pass's language weight, transitions at the acoustic
    // scale (pocketsphinx with the same LM: none either; docs/methods.md). An error is a
    // regression of the front end, the scorer or the graph.
    assert_eq!(total, 0, "{hyps:?}");
}

/// A 16-bit mono PCM WAV of `n` zero samples at `rate`.
fn wav(path: &Path, rate: u32, n: u32) {
    let mut b = Vec::new();
    b.extend(b"RIFF");
    b.extend((36 + 2 * n).to_le_bytes());
    b.extend(b"WAVEfmt ");
    b.extend(16u32.to_le_bytes());
    b.extend(1u16.to_le_bytes());
    b.extend(1u16.to_le_bytes());
    b.extend(rate.to_le_bytes());
    b.extend((rate * 2).to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(16u16.to_le_bytes());
    b.extend(b"data");
    b.extend((2 * n).to_le_bytes());
    b.extend(std::iter::repeat_n(0u8, 2 * n as usize));
    std::fs::write(path, b).unwrap();
}

/// A one-utterance audio registry in `d` over the shipped model, lexicon and LM.
fn registry(d: &Path, scp: &str) -> std::path::PathBuf {
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("text"), "u1 ten of clubs\n").unwrap();
    std::fs::write(data.join("utt2dur"), "u1 1.0\n").unwrap();
    std::fs::write(data.join("wav.scp"), scp).unwrap();
    let r = root().canonicalize().unwrap();
    let t = r.join("datasets/pocketsphinx-test");
    let reg = d.join("datasets.toml");
    std::fs::write(
        &reg,
        format!(
            "[bad]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"data\"\nlexicon = \"{}\"\nlm = \"{}\"\n",
            r.join("datasets/sphinx-en-us").display(),
            t.join("lexicon.txt").display(),
            t.join("lm.arpa").display()
        ),
    )
    .unwrap();
    reg
}

#[test]
fn audio_at_another_rate_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path(), "u1 u1.wav\n");
    wav(&dir.path().join("data/u1.wav"), 8_000, 8_000);
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "bad",
            "--methods",
            "none",
        ],
        "u1.wav: 8000 Hz, 1 channel(s), 16-bit Int: the model needs 16000 Hz",
    );
}

#[test]
fn an_utterance_without_a_recording_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let reg = registry(dir.path(), "u2 u2.wav\n");
    wav(&dir.path().join("data/u2.wav"), 16_000, 16_000);
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "bad",
            "--methods",
            "none",
        ],
        "utterance u1 of data/text has no recording",
    );
    // A CTC graph cannot read a hybrid model's senones.
    let reg = registry(dir.path(), "u1 u2.wav\n");
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "bad",
            "--methods",
            "none",
            "--kind",
            "tlg-normal",
        ],
        "scored by a hybrid (HMM-GMM) model: it decodes with an HCLG, not tlg-normal",
    );
}

/// A one-entry registry in `d` whose recordings speak atco2-sim-1h (`text_of`); `extra` lines
/// are added to the entry.
fn spoken_registry(d: &Path, extra: &str) -> std::path::PathBuf {
    let r = root().canonicalize().unwrap();
    let reg = d.join("datasets.toml");
    // The built-in set must be found in the same registry: the shipped one copied beside a link
    // to the shipped data (its paths are relative to the registry's folder), ours added.
    let shipped = std::fs::read_to_string(r.join("datasets.toml")).unwrap();
    if !d.join("datasets").exists() {
        std::os::unix::fs::symlink(r.join("datasets"), d.join("datasets")).unwrap();
    }
    std::fs::write(
        &reg,
        format!(
            "{shipped}\n[spoken]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"{}\"\ntext_of = \"atco2-sim-1h\"\n{extra}",
            r.join("datasets/sphinx-en-us").display(),
            d.join("data").display()
        ),
    )
    .unwrap();
    reg
}

#[test]
fn spoken_entries_name_what_is_missing_or_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Recordings not made yet: the entry's `made_by` is named.
    let reg = spoken_registry(d, "made_by = \"make my-tts\"\n");
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "spoken",
            "--methods",
            "none",
        ],
        "the recordings are not there yet: `make my-tts` makes them",
    );
    // An utterance the spoken set does not have.
    std::fs::create_dir_all(d.join("data")).unwrap();
    wav(&d.join("data/x.wav"), 16_000, 16_000);
    std::fs::write(d.join("data/wav.scp"), "no-such-utt x.wav\n").unwrap();
    let reg = spoken_registry(d, "");
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "spoken",
            "--methods",
            "none",
        ],
        "utterance no-such-utt is not an utterance of atco2-sim-1h",
    );
    // text_of together with an LM of its own: which one is meant is unclear, so refused.
    std::fs::write(d.join("data/wav.scp"), "atco2-sim-1h-00000 x.wav\n").unwrap();
    let reg = spoken_registry(d, "lm = \"lm.arpa\"\n");
    fails_with(
        &[
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "spoken",
            "--methods",
            "none",
        ],
        "gives either text_of (the dataset its recordings speak) or both lexicon and lm",
    );
}

/// Open-vocabulary contexts on the real model (issue 55): four words the LM and lexicon lack,
/// offered as a context with pronunciations from `context_lexicon` only, are recognised through
/// the graph's class slot as word-internal triphones; without their pronunciations the phrases
/// are dropped by name count and the words stay out.
#[test]
fn open_vocabulary_words_are_recognised_on_real_audio() {
    let dir = tempfile::tempdir().unwrap();
    let r = root().canonicalize().unwrap();
    let f = r.join("crates/ctxbench/tests/data/audio-open-vocab");
    let entry = |ctx: bool| {
        let extra = if ctx {
            format!(
                "context_lexicon = \"{}\"\n",
                f.join("context_lexicon.txt").display()
            )
        } else {
            String::new()
        };
        ps_entry("ov", &f.join("lexicon.txt"), &f.join("lm.arpa"), &extra)
    };
    let run = |ctx: bool, open: bool| {
        let reg = dir.path().join(format!("reg-{ctx}.toml"));
        std::fs::write(&reg, entry(ctx)).unwrap();
        let hyp = dir.path().join(format!("hyp-{ctx}-{open}"));
        let phrases = format!("file:{}", f.join("phrases.txt").display());
        let mut args = vec![
            "decode",
            "--registry",
            s(&reg),
            "--dataset",
            "ov",
            "--methods",
            "none",
            "--hyp-dir",
            s(&hyp),
        ];
        if open {
            args.extend(["--open-vocab", phrases.as_str()]);
        }
        let out = succeeds(&args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        // The output is named by --methods (none): the context rides on it.
        let hyps = table(&std::fs::read_to_string(hyp.join("none.txt")).unwrap());
        (stdout, hyps)
    };
    let refs = table(
        &std::fs::read_to_string(root().join("datasets/pocketsphinx-test/data/text")).unwrap(),
    );
    let total = |hyps: &std::collections::BTreeMap<String, String>| word_errors(&refs, hyps);
    let words = ["dashwood", "amiable", "respectable", "prudently"];
    let has = |hyps: &std::collections::BTreeMap<String, String>, w: &str| {
        hyps.values().any(|h| h.split_whitespace().any(|x| x == w))
    };
    let (_, base) = run(true, false);
    assert!(words.iter().all(|w| !has(&base, w)), "{base:?}");
    let (stdout, open) = run(true, true);
    assert!(stdout.contains("| 4/0 |"), "{stdout}");
    for w in words {
        assert!(has(&open, w), "{w} not recognised: {open:?}");
    }
    // 92 words: the out-of-vocabulary words cost 15 or more errors unbiased; with the context,
    // at most three (the full LM's graph makes none, `real_recordings_decode_from_wav_to_wer`).
    let (b, o) = (total(&base), total(&open));
    assert!(
        b >= 15 && o <= 3,
        "unbiased {b}, open-vocabulary {o} word errors"
    );
    // Without pronunciations for them, the four phrases are dropped and counted.
    let (stdout, unspelled) = run(false, true);
    assert!(stdout.contains("| 0/4 |"), "{stdout}");
    assert!(words.iter().all(|w| !has(&unspelled, w)));
}

/// `fbai_scoring` adds the LibriSpeech biasing benchmark's measures (score.py's definitions:
/// each utterance's entity words are its biased words; an inserted word is biased when it is
/// in that utterance's set), here on a peer's crafted hypotheses of pocketsphinx-test.
#[test]
fn fbai_scoring_counts_each_utterances_biased_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let r = root().canonicalize().unwrap();
    let t = r.join("datasets/pocketsphinx-test");
    let a = "sense_and_sensibility_01_austen_64kb-";
    std::fs::write(
        d.join("entities.txt"),
        format!(
            "{a}0870\t[BIASED] dashwood\n{a}0920\t[BIASED] amiable|[BIASED] respectable\n\
             {a}0930\t[BIASED] amiable\n"
        ),
    )
    .unwrap();
    let extra = format!(
        "entities = \"{}\"\nfbai_scoring = true\n",
        d.join("entities.txt").display()
    );
    std::fs::write(
        d.join("reg.toml"),
        ps_entry("fb", &t.join("lexicon.txt"), &t.join("lm.arpa"), &extra),
    )
    .unwrap();
    // The references, with a biased word substituted (0920's amiable), a biased word inserted
    // (amiable again in 0930) and a word inserted where it is not biased (dashwood in 0880).
    let text = std::fs::read_to_string(t.join("data/text")).unwrap();
    let words: usize = text.lines().map(|l| l.split_whitespace().count() - 1).sum();
    let hyp: String = text
        .lines()
        .map(|l| {
            let l = if l.starts_with(&format!("{a}0920")) {
                l.replacen(" amiable ", " amiably ", 1)
            } else if l.starts_with(&format!("{a}0930")) {
                format!("{l} amiable")
            } else if l.starts_with(&format!("{a}0880")) {
                format!("{l} dashwood")
            } else {
                l.to_string()
            };
            format!("{l}\n")
        })
        .collect();
    std::fs::write(d.join("hyp.txt"), hyp).unwrap();
    let csv = d.join("p.csv");
    let set = format!("peer_hyp={}", d.join("hyp.txt").display());
    let out = ctxbench(&[
        "decode",
        "--registry",
        s(&d.join("reg.toml")),
        "--dataset",
        "fb",
        "--method",
        "peer",
        "--set",
        &set,
        "--points-out",
        s(&csv),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let points = std::fs::read_to_string(&csv).unwrap();
    let mut lines = points.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let get = |k: &str| -> f64 {
        let i = header.iter().position(|h| *h == k).unwrap();
        row[i].parse().unwrap()
    };
    // Four biased reference words (dashwood, amiable, respectable, amiable): one substituted,
    // one inserted; the other insertion is unbiased.
    // (points.csv keeps four decimals.)
    assert!((get("fbai_b_wer") - 50.0).abs() < 1e-4);
    let n = words as f64;
    assert!(
        (get("fbai_u_wer") - 100.0 / (n - 4.0)).abs() < 1e-4,
        "{points}"
    );
    assert!((get("fbai_wer") - 300.0 / n).abs() < 1e-4);
}

/// `bestpath_language_weight` (pocketsphinx's `-bestpathlw` pass): each lattice's cheapest path
/// at another language weight. At the search's own weight (8.5) it is the search's 1-best,
/// word for word; at 2 the acoustics weigh four times more against the LM and the pass picks
/// other paths of the same lattices: errors where the search makes none. (A bad weight:
/// tests/bad_input/.)
#[test]
fn a_lattice_pass_at_another_language_weight_rescores_the_one_best() {
    let dir = tempfile::tempdir().unwrap();
    let t = root()
        .canonicalize()
        .unwrap()
        .join("datasets/pocketsphinx-test");
    let refs = table(&std::fs::read_to_string(t.join("data/text")).unwrap());
    let decode = |weight: &str| {
        let p = dir.path().join(format!("reg-{weight}.toml"));
        let entry = ps_entry(
            "bp",
            &t.join("lexicon.txt"),
            &t.join("lm.arpa"),
            &format!("bestpath_language_weight = {weight}\n"),
        );
        std::fs::write(&p, entry).unwrap();
        let hyp = dir.path().join(format!("hyp-{weight}"));
        let out = ctxbench(&[
            "decode",
            "--registry",
            s(&p),
            "--dataset",
            "bp",
            "--methods",
            "none",
            "--hyp-dir",
            s(&hyp),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        table(&std::fs::read_to_string(hyp.join("none.txt")).unwrap())
    };
    let same = decode("8.5");
    assert_eq!(word_errors(&refs, &same), 0, "{same:?}");
    let acoustic = decode("2.0");
    let total = word_errors(&refs, &acoustic);
    assert!(total >= 3, "{total} word errors: {acoustic:?}");
}

/// Word errors over pocketsphinx-test's 92 words through a radio channel at `snr_db` (`None`:
/// the clean recordings), with the SNR set by the entry or by `--set snr_db`.
fn radio_errors(dir: &Path, snr_db: Option<f64>, by_setting: bool) -> usize {
    let t = root()
        .canonicalize()
        .unwrap()
        .join("datasets/pocketsphinx-test");
    let channel = match (snr_db, by_setting) {
        (Some(_), true) => "[radio.channel]\nsnr_db = 99.0\n".to_string(),
        (Some(x), false) => format!("[radio.channel]\nsnr_db = {x}\n"),
        (None, _) => String::new(),
    };
    let reg = dir.join(format!("reg-{snr_db:?}-{by_setting}.toml"));
    std::fs::write(
        &reg,
        ps_entry(
            "radio",
            &t.join("lexicon.txt"),
            &t.join("lm.arpa"),
            &channel,
        ),
    )
    .unwrap();
    let hyp = dir.join(format!("hyp-{snr_db:?}-{by_setting}"));
    let set = format!("snr_db={}", snr_db.unwrap_or(0.0));
    let mut args = vec![
        "decode",
        "--registry",
        s(&reg),
        "--dataset",
        "radio",
        "--methods",
        "none",
        "--hyp-dir",
        s(&hyp),
    ];
    if by_setting {
        args.extend(["--set", set.as_str()]);
    }
    succeeds(&args);
    let refs = table(&std::fs::read_to_string(t.join("data/text")).unwrap());
    let hyps = table(&std::fs::read_to_string(hyp.join("none.txt")).unwrap());
    assert_eq!(hyps.len(), 10, "every recording decoded");
    word_errors(&refs, &hyps)
}

#[test]
fn a_radio_channel_makes_real_recordings_harder_as_its_snr_falls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let clean = radio_errors(d, None, false);
    let band_only = radio_errors(d, Some(40.0), false);
    let noisy = radio_errors(d, Some(5.0), false);
    assert_eq!(clean, 0);
    // The band and the clipper alone cost a few words; noise at 5 dB many more.
    assert!(band_only < noisy, "{band_only} {noisy}");
    assert!(noisy >= 15, "{noisy} of 92 words wrong at 5 dB");
    // `--set snr_db` overrides the entry's SNR: the same noise, the same errors.
    assert_eq!(radio_errors(d, Some(5.0), true), noisy);
}

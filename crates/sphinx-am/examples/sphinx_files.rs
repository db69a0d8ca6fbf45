//! Prepares real recordings as ctxbench `kind = "audio"` datasets for the CMU Sphinx en-us
//! model (issue 41): a Kaldi data directory (`text`, `wav.scp`), and what the HCLG is built from
//! when the dataset is decoded. Two modes:
//!
//! - `transcripts <root> <out> <wav dir>=<transcription> ...`: pocketsphinx's
//!   `<s> words </s> (utt)` transcriptions of WAVs; writes `<out>/data/`, `<out>/lexicon.txt`
//!   (CMUdict, the project's letter-to-sound for other words) and `<out>/lm.arpa` (a Kneser-Ney
//!   bigram of the transcripts). Made `datasets/pocketsphinx-test/` (`make sphinx-test-data`).
//! - `export <root> <export dir> <wav dir> <name>`: a folder written by `ctxbench export
//!   --with-lm` (its text, LM, lexicon, entities and biasing lists) and a WAV per utterance
//!   (Festival renderings, `make sphinx-atco2`); writes `<export dir>/audio/datasets.toml` and
//!   its data directory.
use ctx_data::kneser_ney::{estimate, KnOptions};
use ctx_data::pronounce::Pronouncer;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("transcripts") if args.len() > 4 => {
            let (root, out) = (Path::new(&args[2]), Path::new(&args[3]));
            let mut refs: Vec<(String, Vec<String>, PathBuf)> = Vec::new();
            for set in &args[4..] {
                let (wavs, trans) = set
                    .split_once('=')
                    .ok_or_else(|| format!("'{set}': expected <wav dir>=<transcription>"))?;
                for (id, words) in read_transcription(trans)? {
                    let wav = Path::new(wavs).join(format!("{id}.wav"));
                    if !wav.exists() {
                        return Err(format!("{trans}: utterance {id}: no {}", wav.display()).into());
                    }
                    refs.push((id, words, wav));
                }
            }
            let pron = Pronouncer::from_cmudict(&root.join("datasets/cmudict/cmudict.dict.gz"))?;
            let vocab: Vec<&String> = refs.iter().flat_map(|(_, w, _)| w).collect();
            let (words, _) = pron.lexicon_for(&vocab)?;
            let sentences: Vec<Vec<String>> = refs.iter().map(|(_, w, _)| w.clone()).collect();
            let opts = KnOptions {
                order: 2,
                ..KnOptions::default()
            };
            let (lm, _) = estimate(&sentences, &opts)?;
            write_data(out, &refs)?;
            lm.write(&out.join("lm.arpa"))?;
            words.write(&out.join("lexicon.txt"), false)?;
            println!(
                "{}: {} utterances, {} words, lexicon.txt and a bigram lm.arpa",
                out.display(),
                refs.len(),
                vocab.len()
            );
            Ok(())
        }
        Some("export") => {
            let [_, _, root, export, wavs, name] = args.as_slice() else {
                return Err(usage());
            };
            let export = Path::new(export);
            let text = std::fs::read_to_string(export.join("data/text"))?;
            let mut refs = Vec::new();
            for l in text.lines() {
                let mut it = l.split_whitespace();
                let Some(id) = it.next() else { continue };
                let wav = std::fs::canonicalize(Path::new(wavs))?.join(format!("{id}.wav"));
                refs.push((id.to_string(), it.map(str::to_string).collect(), wav));
            }
            let out = export.join("audio");
            write_data(&out, &refs)?;
            // Keep the export's entities, lists and LM (paths relative to audio/).
            let orig = std::fs::read_to_string(export.join("datasets.toml"))?;
            let mut keep = String::new();
            for l in orig.lines() {
                let key = l.split('=').next().unwrap_or("").trim();
                match key {
                    "entities" | "bias_utt" | "bias_list" | "bias_docs" | "lm" => {
                        let (k, v) = l.split_once('=').unwrap_or_default();
                        let v = v.trim().trim_matches('"');
                        writeln!(keep, "{} = \"../{v}\"", k.trim())?;
                    }
                    "ne_insertions_inside" | "entity_classes" => writeln!(keep, "{l}")?,
                    _ => {}
                }
            }
            let model = std::fs::canonicalize(Path::new(root).join("datasets/sphinx-en-us"))?;
            std::fs::write(
                out.join("datasets.toml"),
                format!(
                    "# Written by sphinx-am's example sphinx_files: recordings of {}, scored by CMU Sphinx en-us.\n\
                     [{name}]\nkind = \"audio\"\nmodel = \"{}\"\ndata = \"data\"\nlexicon = \"../lm/lexicon.txt\"\n\
                     {keep}licence = \"BSD-2-Clause (CMU Sphinx en-us model); the text's own licence\"\n\
                     description = \"{} utterances of {} as audio, CMU Sphinx en-us (sphinx-am), triphone HCLG with the export's LM and lexicon\"\n",
                    export.display(),
                    model.display(),
                    refs.len(),
                    export.display()
                ),
            )?;
            println!(
                "decode with: ctxbench decode --registry {}/datasets.toml --dataset {name}",
                out.display()
            );
            Ok(())
        }
        _ => Err(usage()),
    }
}

fn usage() -> Box<dyn std::error::Error> {
    "usage: sphinx_files transcripts <root> <out> <wav dir>=<transcription> ...\n       \
     sphinx_files export <root> <export dir> <wav dir> <name>"
        .into()
}

/// pocketsphinx's `<s> words </s> (utt)` lines.
fn read_transcription(path: &str) -> Res<Vec<(String, Vec<String>)>> {
    let text = std::fs::read_to_string(path)?;
    let mut refs = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (words, id) = l
            .rsplit_once('(')
            .ok_or_else(|| format!("{path} line {}: no '(utterance id)'", i + 1))?;
        let words: Vec<String> = words
            .split_whitespace()
            .filter(|w| *w != "<s>" && *w != "</s>")
            .map(str::to_lowercase)
            .collect();
        refs.push((id.trim().trim_end_matches(')').to_string(), words));
    }
    Ok(refs)
}

/// `<out>/data/text` and `wav.scp` (paths relative to the data directory where they can be).
fn write_data(out: &Path, refs: &[(String, Vec<String>, PathBuf)]) -> Res<()> {
    let data = out.join("data");
    std::fs::create_dir_all(&data)?;
    let (mut text, mut scp) = (String::new(), String::new());
    for (id, words, wav) in refs {
        writeln!(text, "{id} {}", words.join(" "))?;
        let rel = relative_to(wav, &data);
        writeln!(scp, "{id} {}", rel.display())?;
    }
    std::fs::write(data.join("text"), text)?;
    std::fs::write(data.join("wav.scp"), scp)?;
    Ok(())
}

/// `path` relative to `dir` when both are relative (`../cards/001.wav`), else absolute.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    if path.is_absolute() || dir.is_absolute() {
        return std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    }
    let (a, b): (Vec<_>, Vec<_>) = (path.components().collect(), dir.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut p = PathBuf::new();
    for _ in common..b.len() {
        p.push("..");
    }
    a[common..].iter().for_each(|c| p.push(c));
    p
}

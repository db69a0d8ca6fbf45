//! Prepares real recordings for ctxbench's `kind = "files"` datasets with the CMU Sphinx en-us
//! model (issue 41): every WAV's senone log-likelihoods as `<utt>.npy` (this crate's front end
//! and PTM scorer, identical to pocketsphinx's), an HCLG over the model's triphones, `words.txt`,
//! a Kaldi data directory and a `datasets.toml` entry, so that `ctxbench decode --registry
//! <out>/datasets.toml --dataset <name>` decodes real audio through the whole pipeline.
//!
//! Two modes:
//! - `cards <repo root> <wav dir> <transcription> <name> <out>`: pocketsphinx's
//!   `<s> words </s> (utt)` transcription; CMUdict pronunciations; a bigram of the transcripts
//!   (`make sphinx-cards`).
//! - `export <repo root> <export dir> <wav dir> <name>`: a folder written by `ctxbench export
//!   --with-lm --format npy` (its text, LM, lexicon, entities and biasing lists) and a WAV per
//!   utterance (e.g. Festival renderings, `make sphinx-atco2`); writes `sphinx/` inside it.
use ctx_core::arpa::ArpaLm;
use ctx_core::lexicon::{Lexicon, LexiconFormat};
use ctx_core::scores::write_npy;
use ctx_data::kneser_ney::{estimate, KnOptions};
use ctx_data::pronounce::Pronouncer;
use ctx_graph::compile::compile_hclg_units;
use ctx_graph::grammar::{build_grammar_fst, MissingWords};
use ctx_graph::lexicon_fst::{build_lexicon_fst, SilenceOptions};
use ctx_graph::rustfst::prelude::{ExpandedFst, SerializableFst};
use sphinx_am::features::utterance_features;
use sphinx_am::frontend::{Frontend, FrontendConfig};
use sphinx_am::hclg::{log_likelihoods, TriphoneLexicon};
use sphinx_am::ptm::PtmScorer;
use sphinx_am::Model;
use std::fmt::Write as _;
use std::path::Path;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("cards") => {
            let [_, _, root, wavs, trans, name, out] = args.as_slice() else {
                return Err(usage());
            };
            let refs = read_transcription(trans)?;
            let root = Path::new(root);
            let pron = Pronouncer::from_cmudict(&root.join("datasets/cmudict/cmudict.dict.gz"))?;
            let vocab: Vec<&String> = refs.iter().flat_map(|(_, w)| w).collect();
            let (words, _) = pron.lexicon_for(&vocab)?;
            let sentences: Vec<Vec<String>> = refs.iter().map(|(_, w)| w.clone()).collect();
            let opts = KnOptions {
                order: 2,
                ..KnOptions::default()
            };
            let (lm, _) = estimate(&sentences, &opts)?;
            let out = Path::new(out);
            write_files(root, &refs, &words, &lm, Path::new(wavs), out)?;
            lm.write(&out.join("lm.arpa"))?;
            // The lexicon in base phones, for a peer decoder (make peer-sphinx).
            words.write(&out.join("lexicon.txt"), false)?;
            write_registry(
                root,
                out,
                name,
                refs.len(),
                "lm = \"lm.arpa\"\n",
                "a bigram of the transcripts",
            )
        }
        Some("export") => {
            let [_, _, root, export, wavs, name] = args.as_slice() else {
                return Err(usage());
            };
            let (root, export) = (Path::new(root), Path::new(export));
            let text = std::fs::read_to_string(export.join("data/text"))?;
            let refs: Vec<(String, Vec<String>)> = text
                .lines()
                .filter_map(|l| {
                    let mut it = l.split_whitespace();
                    let id = it.next()?.to_string();
                    Some((id, it.map(str::to_string).collect()))
                })
                .collect();
            let words = Lexicon::read(&export.join("lm/lexicon.txt"), LexiconFormat::Kaldi)?;
            let lm = ArpaLm::read(&export.join("lm/G.arpa"))?;
            let out = export.join("sphinx");
            write_files(root, &refs, &words, &lm, Path::new(wavs), &out)?;
            // Keep the export's entities, lists and LM (paths relative to sphinx/).
            let orig = std::fs::read_to_string(export.join("datasets.toml"))?;
            let mut keep = String::new();
            for l in orig.lines() {
                let key = l.split('=').next().unwrap_or("").trim();
                match key {
                    "entities" | "bias_utt" | "bias_list" | "bias_docs" | "lm" => {
                        let (k, v) = l.split_once('=').unwrap();
                        let v = v.trim().trim_matches('"');
                        writeln!(keep, "{} = \"../{v}\"", k.trim())?;
                    }
                    "ne_insertions_inside" | "entity_classes" => writeln!(keep, "{l}")?,
                    _ => {}
                }
            }
            write_registry(
                root,
                &out,
                name,
                refs.len(),
                &keep,
                "the export's LM and lexicon",
            )
        }
        _ => Err(usage()),
    }
}

fn usage() -> Box<dyn std::error::Error> {
    "usage: sphinx_files cards <root> <wav dir> <transcription> <name> <out>\n       \
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

/// Scores, HCLG, words and the data directory under `out`.
fn write_files(
    root: &Path,
    refs: &[(String, Vec<String>)],
    words: &Lexicon,
    lm: &ArpaLm,
    wavs: &Path,
    out: &Path,
) -> Res<()> {
    let model = Model::load(&root.join("datasets/sphinx-en-us"))?;
    let tri = TriphoneLexicon::build(&model, words)?;
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.2,
    };
    let l = build_lexicon_fst(&tri.lexicon, &tri.units, Some(&sil))?;
    let (g, _) = build_grammar_fst(
        lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Skip,
    )?;
    let graph = compile_hclg_units(&l, &g, &tri.hmms)?;
    std::fs::create_dir_all(out.join("scores"))?;
    std::fs::create_dir_all(out.join("data"))?;
    graph.fst.write(out.join("HCLG.fst"))?;
    l.symbols.words.write(&out.join("words.txt"))?;
    let fe = Frontend::new(FrontendConfig::from_params(&model.feat)?)?;
    let scorer = PtmScorer::new(&model);
    let (mut text_out, mut dur_out) = (String::new(), String::new());
    let (mut am_secs, mut audio_secs) = (0.0, 0.0);
    for (id, w) in refs {
        let s = sphinx_am::audio::read_wav(&wavs.join(format!("{id}.wav")), 16_000)?;
        let t0 = std::time::Instant::now();
        let m = log_likelihoods(&scorer.score(&utterance_features(fe.cepstra(&s))))?;
        am_secs += t0.elapsed().as_secs_f64();
        audio_secs += s.len() as f64 / 16_000.0;
        write_npy(&out.join(format!("scores/{id}.npy")), &m)?;
        writeln!(text_out, "{id} {}", w.join(" "))?;
        writeln!(dur_out, "{id} {:.3}", s.len() as f64 / 16_000.0)?;
    }
    std::fs::write(out.join("data/text"), text_out)?;
    std::fs::write(out.join("data/utt2dur"), dur_out)?;
    println!(
        "{}: {} utterances, HCLG {} states over {} triphone units; front end + senone scores \
         {am_secs:.2} s for {audio_secs:.1} s of audio (RTFx {:.0}, one thread)",
        out.display(),
        refs.len(),
        graph.fst.num_states(),
        tri.units.len(),
        audio_secs / am_secs.max(1e-9)
    );
    Ok(())
}

/// The `kind = "files"` entry.
fn write_registry(root: &Path, out: &Path, name: &str, n: usize, extra: &str, lm: &str) -> Res<()> {
    let model = Model::load(&root.join("datasets/sphinx-en-us"))?;
    let sil: Vec<String> = model
        .mdef
        .senones(model.mdef.sil)
        .iter()
        .map(|s| s.to_string())
        .collect();
    std::fs::write(
        out.join("datasets.toml"),
        format!(
            "# Written by sphinx-am's example sphinx_files: real audio scored by CMU Sphinx en-us.\n\
             [{name}]\nkind = \"files\"\nmodel = \"hybrid\"\ngraph = \"HCLG.fst\"\nwords = \"words.txt\"\n\
             scores = \"scores\"\ndata = \"data\"\nframe_shift_s = 0.01\n\
             # pocketsphinx's language weight 6.5: the acoustic log-likelihoods count 1/6.5.\n\
             acoustic_scale = {:.6}\nscore_columns = {}\nsilence_columns = [{}]\n{extra}\
             licence = \"BSD-2-Clause (CMU Sphinx en-us model)\"\n\
             description = \"{n} utterances of real audio, CMU Sphinx en-us senones (sphinx-am), triphone HCLG with {lm}\"\n",
            1.0 / 6.5,
            model.mdef.n_senone,
            sil.join(", ")
        ),
    )?;
    println!(
        "decode with: ctxbench decode --registry {}/datasets.toml --dataset {name}",
        out.display()
    );
    Ok(())
}

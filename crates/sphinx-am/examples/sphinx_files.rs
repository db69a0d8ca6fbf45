//! Prepares real recordings for ctxbench's `kind = "files"` datasets with the CMU Sphinx en-us
//! model (issue 41): every WAV's senone log-likelihoods as `<utt>.npy` (this crate's front end
//! and PTM scorer, identical to pocketsphinx's), an HCLG over the model's triphones (CMUdict
//! pronunciations, a Kneser-Ney bigram of the transcripts), `words.txt`, a Kaldi data directory
//! and a `datasets.toml` entry. Then `ctxbench decode --registry <out>/datasets.toml --dataset
//! <name>` decodes real audio through the whole pipeline (`make sphinx-cards`).
//!
//! `cargo run --release -p sphinx-am --example sphinx_files -- <repo root> <wav dir>
//! <transcription> <name> <out dir>`; the transcription is pocketsphinx's
//! `<s> words </s> (utt)` format.
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, wavs, trans, name, out] = args.as_slice() else {
        return Err(
            "usage: sphinx_files <repo root> <wav dir> <transcription> <name> <out>".into(),
        );
    };
    let (root, wavs, out) = (Path::new(root), Path::new(wavs), Path::new(out));
    let text = std::fs::read_to_string(trans)?;
    let mut refs: Vec<(String, Vec<String>)> = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (words, id) = l
            .rsplit_once('(')
            .ok_or_else(|| format!("{trans} line {}: no '(utterance id)'", i + 1))?;
        let words: Vec<String> = words
            .split_whitespace()
            .filter(|w| *w != "<s>" && *w != "</s>")
            .map(str::to_lowercase)
            .collect();
        refs.push((id.trim().trim_end_matches(')').to_string(), words));
    }
    let model = Model::load(&root.join("datasets/sphinx-en-us"))?;
    let pron = Pronouncer::from_cmudict(&root.join("datasets/cmudict/cmudict.dict.gz"))?;
    let vocab: Vec<&String> = refs.iter().flat_map(|(_, w)| w).collect();
    let (words, _) = pron.lexicon_for(&vocab)?;
    let tri = TriphoneLexicon::build(&model, &words)?;
    let sentences: Vec<Vec<String>> = refs.iter().map(|(_, w)| w.clone()).collect();
    let opts = KnOptions {
        order: 2,
        ..KnOptions::default()
    };
    let (lm, _) = estimate(&sentences, &opts)?;
    let sil = SilenceOptions {
        unit: "SIL".into(),
        prob: 0.2,
    };
    let l = build_lexicon_fst(&tri.lexicon, &tri.units, Some(&sil))?;
    let (g, _) = build_grammar_fst(
        &lm,
        &l.symbols.words,
        l.symbols.word_disambig,
        MissingWords::Skip,
    )?;
    let graph = compile_hclg_units(&l, &g, &tri.hmms)?;
    std::fs::create_dir_all(out.join("scores"))?;
    std::fs::create_dir_all(out.join("data"))?;
    graph.fst.write(out.join("HCLG.fst"))?;
    l.symbols.words.write(&out.join("words.txt"))?;
    lm.write(&out.join("lm.arpa"))?;
    let fe = Frontend::new(FrontendConfig::from_params(&model.feat)?)?;
    let scorer = PtmScorer::new(&model);
    let (mut text_out, mut dur_out) = (String::new(), String::new());
    for (id, w) in &refs {
        let mut r = hound::WavReader::open(wavs.join(format!("{id}.wav")))?;
        let spec = r.spec();
        if spec.sample_rate != 16_000 || spec.channels != 1 || spec.bits_per_sample != 16 {
            return Err(format!(
                "{id}.wav: {} Hz, {} channel(s), {} bits; the model needs 16 kHz mono 16-bit",
                spec.sample_rate, spec.channels, spec.bits_per_sample
            )
            .into());
        }
        let s: Vec<i16> = r.samples::<i16>().collect::<Result<_, _>>()?;
        let m = log_likelihoods(&scorer.score(&utterance_features(fe.cepstra(&s))))?;
        write_npy(&out.join(format!("scores/{id}.npy")), &m)?;
        writeln!(text_out, "{id} {}", w.join(" "))?;
        writeln!(dur_out, "{id} {:.3}", s.len() as f64 / 16_000.0)?;
    }
    std::fs::write(out.join("data/text"), text_out)?;
    std::fs::write(out.join("data/utt2dur"), dur_out)?;
    let sil_senones: Vec<String> = model
        .mdef
        .senones(model.mdef.sil)
        .iter()
        .map(|s| s.to_string())
        .collect();
    std::fs::write(
        out.join("datasets.toml"),
        format!(
            "# Written by sphinx-am's example sphinx_files: real recordings scored by CMU Sphinx en-us.\n\
             [{name}]\nkind = \"files\"\nmodel = \"hybrid\"\ngraph = \"HCLG.fst\"\nwords = \"words.txt\"\n\
             scores = \"scores\"\ndata = \"data\"\nlm = \"lm.arpa\"\nframe_shift_s = 0.01\n\
             # pocketsphinx's language weight 6.5: the acoustic log-likelihoods count 1/6.5.\n\
             acoustic_scale = {:.6}\nscore_columns = {}\nsilence_columns = [{}]\n\
             licence = \"BSD-2-Clause (CMU Sphinx en-us model and pocketsphinx test data)\"\n\
             description = \"{} real recordings, CMU Sphinx en-us senones (sphinx-am), triphone HCLG with a bigram of the transcripts\"\n",
            1.0 / 6.5,
            model.mdef.n_senone,
            sil_senones.join(", "),
            refs.len()
        ),
    )?;
    println!(
        "{}: {} utterances, HCLG {} states; decode with: ctxbench decode --registry {}/datasets.toml --dataset {name}",
        out.display(),
        refs.len(),
        graph.fst.num_states(),
        out.display()
    );
    Ok(())
}

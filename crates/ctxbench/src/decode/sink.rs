//! The files a single decode writes beside its figures: hypotheses and CTM per output, the
//! decoded lattices and the running partials.

use crate::methods::OutputSink;
use crate::pipeline::{DecodeRun, Output, Setup};
use anyhow::{anyhow, bail, Context, Result};
use std::path::PathBuf;
use std::sync::Mutex;

/// The files of a single decode, fed by the family's group run: each output's Kaldi `text` and
/// CTM, the word lattices, the running partial hypotheses.
pub(super) struct DecodeFiles {
    pub(super) hyp_dir: Option<PathBuf>,
    pub(super) lattice_out: Option<PathBuf>,
    pub(super) partials_out: Option<PathBuf>,
    /// Output name per point (the file names under `hyp_dir`).
    pub(super) outputs: Vec<String>,
    pub(super) acoustic_scale: Option<f32>,
    pub(super) lattices: Mutex<String>,
    pub(super) partials: Mutex<String>,
    /// The lattices' word table when contexts wrote words outside words.txt: (the run's context
    /// words, the table's text).
    pub(super) lattice_words: Mutex<Option<(Vec<String>, String)>>,
}

impl DecodeFiles {
    /// Writes the lattices and partials gathered (atomically, once every group ran).
    pub(super) fn finish(&self) -> Result<()> {
        for (path, text, what) in [
            (&self.lattice_out, &self.lattices, "lattices"),
            (&self.partials_out, &self.partials, "the running hypotheses"),
        ] {
            if let Some(p) = path {
                let text = text
                    .lock()
                    .map_err(|_| anyhow!("a decode thread panicked"))?;
                ctx_core::io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
                eprintln!("wrote {what} to {}", p.display());
            }
        }
        let words = self
            .lattice_words
            .lock()
            .map_err(|_| anyhow!("a decode thread panicked"))?;
        if let (Some(p), Some((_, table))) = (&self.lattice_out, words.as_ref()) {
            let mut name = p.clone().into_os_string();
            name.push(".words.txt");
            let path = PathBuf::from(name);
            ctx_core::io::write_atomic(&path, |w| w.write_all(table.as_bytes()))?;
            eprintln!("wrote the lattices' word table to {}", path.display());
        }
        Ok(())
    }
}

impl OutputSink for DecodeFiles {
    fn decoded(&self, st: &Setup, run: &DecodeRun) -> Result<()> {
        if self.lattice_out.is_some() {
            let scale = self.acoustic_scale.unwrap_or(st.acoustic_scale);
            let mut text = String::new();
            for r in &run.results {
                crate::kaldi_lattice::write_utterance(&mut text, r, scale)?;
            }
            self.lattices
                .lock()
                .map_err(|_| anyhow!("a decode thread panicked"))?
                .push_str(&text);
            if !run.open_words.is_empty() {
                let mut held = self
                    .lattice_words
                    .lock()
                    .map_err(|_| anyhow!("a decode thread panicked"))?;
                match held.as_ref() {
                    Some((w, _)) if *w == run.open_words => {}
                    Some(_) => bail!(
                        "--lattice-out: two decodes numbered their context words differently \
                         (one word table cannot serve both): decode one method at a time"
                    ),
                    None => {
                        // words.txt, then the context words at their ids (a context word
                        // spelled like a graph word keeps both ids).
                        let table = &st.graph.symbols.words;
                        let mut t = Vec::new();
                        table.write_to(&mut t)?;
                        let mut t = String::from_utf8(t)?;
                        let base = table.len();
                        for (k, w) in run.open_words.iter().enumerate() {
                            t.push_str(&format!("{w} {}\n", base + k));
                        }
                        *held = Some((run.open_words.clone(), t));
                    }
                }
            }
        }
        if self.partials_out.is_some() {
            let mut text = String::new();
            let secs = |row: u64| row as f64 * st.frame_s;
            for r in &run.results {
                for (row, words) in r.running_partials() {
                    let w = run.words(st, &words).join(" ");
                    text.push_str(&format!("{}\t{:.2}\tpartial\t{w}\n", r.id, secs(row)));
                }
                let end = r.segments.last().map_or(0, |s| s.start_row + s.rows);
                let w = run.words(st, &r.words()).join(" ");
                text.push_str(&format!("{}\t{:.2}\tfinal\t{w}\n", r.id, secs(end)));
            }
            self.partials
                .lock()
                .map_err(|_| anyhow!("a decode thread panicked"))?
                .push_str(&text);
        }
        Ok(())
    }

    fn output(&self, point: usize, st: &Setup, o: &Output) -> Result<()> {
        let Some(dir) = &self.hyp_dir else {
            return Ok(());
        };
        let name = &self.outputs[point];
        let hyps: Vec<(&str, &[String])> = st
            .dataset
            .utterances
            .iter()
            .zip(&o.hyps)
            .map(|(u, h)| (u.id.as_str(), h.as_slice()))
            .collect();
        self.text(point, &hyps)?;
        // CTM: utterance, channel, start, duration, word (times from the frame shift).
        let mut ctm = String::new();
        // (The words as written in the text: context words spelled as in their list.)
        for ((u, t), words) in st.dataset.utterances.iter().zip(&o.timed).zip(&o.hyps) {
            for (w, tw) in words.iter().zip(t) {
                ctm.push_str(&format!(
                    "{} 1 {:.2} {:.2} {w}\n",
                    u.id, tw.start_s, tw.dur_s
                ));
            }
        }
        ctx_core::io::write_atomic(&dir.join(format!("{name}.ctm")), |w| {
            w.write_all(ctm.as_bytes())
        })?;
        Ok(())
    }

    fn text(&self, point: usize, hyps: &[(&str, &[String])]) -> Result<()> {
        let Some(dir) = &self.hyp_dir else {
            return Ok(());
        };
        let name = &self.outputs[point];
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut text = String::new();
        for (id, h) in hyps {
            text.push_str(id);
            for w in h.iter() {
                text.push(' ');
                text.push_str(w);
            }
            text.push('\n');
        }
        ctx_core::io::write_atomic(&dir.join(format!("{name}.txt")), |w| {
            w.write_all(text.as_bytes())
        })?;
        Ok(())
    }

    fn report(&self, line: &str) {
        eprintln!("{line}");
    }
}

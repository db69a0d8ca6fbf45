//! Kaldi data directories: `text`, `wav.scp`, `segments`, `utt2dur`, `utt2spk`.
//!
//! Durations come from `utt2dur` when present, else from `segments` (end − start), else from the
//! WAV headers of `wav.scp` (read with hound). An utterance whose duration cannot be found is an
//! error naming it: RTFx needs every second of audio accounted for.

use crate::error::{CoreError, Result};
use crate::io::{find_maybe_gz, open_read};
use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// One utterance of a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Utterance {
    /// Utterance id.
    pub id: String,
    /// Reference words.
    pub words: Vec<String>,
    /// Audio duration in seconds.
    pub duration_s: f64,
    /// Speaker id, when `utt2spk` lists one.
    pub speaker: Option<String>,
    /// Recording id, when `segments` cuts the utterance from a recording (a document).
    pub recording: Option<String>,
}

/// A `wav.scp` path as this crate reads it: as written when it exists from the working
/// directory (Kaldi's rule), else relative to the data directory `dir` (a folder that travels).
pub fn resolve_wav(dir: &Path, path: &str) -> PathBuf {
    let wav = PathBuf::from(path);
    if wav.is_relative() && !wav.exists() {
        dir.join(wav)
    } else {
        wav
    }
}

/// A Kaldi data directory's utterances, in the order of its `text` file.
#[derive(Debug, Clone, Default)]
pub struct KaldiDataDir {
    /// The utterances.
    pub utterances: Vec<Utterance>,
}

/// Reads a Kaldi `text`-style table: `utt-id word word ...` per line (an id alone means no words).
/// A repeated id is an error naming the line.
pub fn read_text_table(path: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in open_read(path)?.lines().enumerate() {
        let line = line.map_err(|e| CoreError::io(path, e))?;
        let line = crate::io::without_bom(i, &line);
        let mut f = line.split_whitespace();
        let Some(id) = f.next() else { continue };
        if !seen.insert(id.to_owned()) {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("utterance {id} appears twice"),
            ));
        }
        out.push((id.to_owned(), f.map(str::to_owned).collect()));
    }
    Ok(out)
}

fn read_pairs(path: &Path, min_fields: usize) -> Result<Vec<(usize, Vec<String>)>> {
    let mut out = Vec::new();
    for (i, line) in open_read(path)?.lines().enumerate() {
        let line = line.map_err(|e| CoreError::io(path, e))?;
        let line = crate::io::without_bom(i, &line);
        let f: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < min_fields {
            return Err(CoreError::parse(
                path,
                i + 1,
                format!("expected at least {min_fields} fields, got {}", f.len()),
            ));
        }
        out.push((i + 1, f));
    }
    Ok(out)
}

/// Refuses a key a table already had: `key` on line `line` of `path`, first on the line
/// `seen` remembers.
fn once(seen: &mut HashMap<String, usize>, path: &Path, line: usize, key: &str) -> Result<()> {
    match seen.insert(key.to_string(), line) {
        Some(first) => Err(CoreError::parse(
            path,
            line,
            format!("a duplicate line for {key} (first on line {first})"),
        )),
        None => Ok(()),
    }
}

fn parse_secs(path: &Path, line: usize, s: &str) -> Result<f64> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| CoreError::parse(path, line, format!("{s:?} is not a time in seconds")))
}

/// Duration of a WAV file from its header.
pub fn wav_duration(path: &Path) -> Result<f64> {
    let r = crate::wav::open(path)
        .map_err(|e| CoreError::format(path, format!("cannot read WAV header: {e}")))?;
    let spec = r.spec();
    Ok(r.duration() as f64 / spec.sample_rate as f64)
}

impl KaldiDataDir {
    /// Reads a data directory.
    pub fn read(dir: &Path) -> Result<Self> {
        let file = |name: &str| find_maybe_gz(&dir.join(name));
        let text_path = file("text")
            .ok_or_else(|| CoreError::format(dir, "not a Kaldi data directory: no `text` file"))?;
        let text = read_text_table(&text_path)?;

        let mut durations: HashMap<String, f64> = HashMap::new();
        let mut recordings: HashMap<String, String> = HashMap::new();
        if let Some(p) = file("segments") {
            // With a wav.scp beside it, every segment's recording must be one of its entries
            // (a segment of an unknown recording is a broken data folder, not a fact to keep).
            let wavs: Option<std::collections::HashSet<String>> = match file("wav.scp") {
                Some(w) => Some(
                    read_pairs(&w, 2)?
                        .into_iter()
                        .map(|(_, f)| f[0].clone())
                        .collect(),
                ),
                None => None,
            };
            for (line, f) in read_pairs(&p, 4)? {
                if wavs.as_ref().is_some_and(|w| !w.contains(&f[1])) {
                    return Err(CoreError::parse(
                        &p,
                        line,
                        format!(
                            "segment {} is of recording {}, which wav.scp does not list",
                            f[0], f[1]
                        ),
                    ));
                }
                recordings.insert(f[0].clone(), f[1].clone());
            }
        }
        if let Some(p) = file("utt2dur") {
            let mut seen = HashMap::new();
            for (line, f) in read_pairs(&p, 2)? {
                once(&mut seen, &p, line, &f[0])?;
                durations.insert(f[0].clone(), parse_secs(&p, line, &f[1])?);
            }
        } else if let Some(p) = file("segments") {
            let mut seen = HashMap::new();
            for (line, f) in read_pairs(&p, 4)? {
                once(&mut seen, &p, line, &f[0])?;
                let (s, e) = (parse_secs(&p, line, &f[2])?, parse_secs(&p, line, &f[3])?);
                if e < s {
                    return Err(CoreError::parse(
                        &p,
                        line,
                        format!("segment ends ({e}) before it starts ({s})"),
                    ));
                }
                durations.insert(f[0].clone(), e - s);
            }
        } else if let Some(p) = file("wav.scp") {
            for (line, f) in read_pairs(&p, 2)? {
                if f.last().is_some_and(|l| l.ends_with('|')) || f.len() > 2 {
                    return Err(CoreError::parse(
                        &p,
                        line,
                        "a piped wav.scp command cannot be measured; provide utt2dur",
                    ));
                }
                durations.insert(f[0].clone(), wav_duration(&resolve_wav(dir, &f[1]))?);
            }
        }
        let mut speakers: HashMap<String, String> = HashMap::new();
        if let Some(p) = file("utt2spk") {
            let mut seen = HashMap::new();
            for (line, f) in read_pairs(&p, 2)? {
                once(&mut seen, &p, line, &f[0])?;
                speakers.insert(f[0].clone(), f[1].clone());
            }
        }
        let mut utterances = Vec::with_capacity(text.len());
        for (id, words) in text {
            let duration_s = *durations.get(&id).ok_or_else(|| {
                CoreError::format(
                    dir,
                    format!("utterance {id}: no duration (add it to utt2dur, segments or wav.scp)"),
                )
            })?;
            let speaker = speakers.get(&id).cloned();
            let recording = recordings.get(&id).cloned();
            utterances.push(Utterance {
                id,
                words,
                duration_s,
                speaker,
                recording,
            });
        }
        Ok(Self { utterances })
    }

    /// Total audio in seconds.
    pub fn total_duration_s(&self) -> f64 {
        self.utterances.iter().map(|u| u.duration_s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicate_line_is_called_a_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("text"), "u1 hello\nu2 world\n").unwrap();
        for (file, body) in [
            ("utt2dur", "u1 1.0\nu2 2.0\nu1 3.0\n"),
            ("segments", "u1 r 0 1\nu2 r 1 2\nu1 r 2 3\n"),
            ("utt2spk", "u1 a\nu2 b\nu1 c\n"),
        ] {
            std::fs::write(d.join(file), body).unwrap();
            if file == "utt2spk" {
                std::fs::write(d.join("segments"), "u1 r 0 1\nu2 r 1 2\n").unwrap();
            }
            let e = KaldiDataDir::read(d).unwrap_err().to_string();
            assert!(
                e.contains(file)
                    && e.contains(":3:")
                    && e.contains("duplicate line for u1")
                    && e.contains("first on line 1"),
                "{file}: {e}"
            );
            std::fs::remove_file(d.join(file)).unwrap();
        }
    }

    #[test]
    fn durations_from_utt2dur_segments_and_wav_headers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("text"), "u1 hello world\nu2\n").unwrap();
        std::fs::write(d.join("segments"), "u1 rec 0.5 2.0\nu2 rec 3 4.25\n").unwrap();
        std::fs::write(d.join("utt2spk"), "u1 s1\nu2 s2\n").unwrap();
        let c = KaldiDataDir::read(d).unwrap();
        assert_eq!(c.utterances[0].words, ["hello", "world"]);
        assert!(c.utterances[1].words.is_empty());
        assert_eq!(c.utterances[0].speaker.as_deref(), Some("s1"));
        assert!((c.total_duration_s() - 2.75).abs() < 1e-9);

        std::fs::write(d.join("utt2dur"), "u1 1.0\nu2 2.0\n").unwrap();
        assert!((KaldiDataDir::read(d).unwrap().total_duration_s() - 3.0).abs() < 1e-9);

        std::fs::remove_file(d.join("utt2dur")).unwrap();
        std::fs::remove_file(d.join("segments")).unwrap();
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 8000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        for (name, n) in [("a.wav", 12000), ("b.wav", 4000)] {
            let mut w = hound::WavWriter::create(d.join(name), spec).unwrap();
            for _ in 0..n {
                w.write_sample(0i16).unwrap();
            }
            w.finalize().unwrap();
        }
        std::fs::write(d.join("wav.scp"), "u1 a.wav\nu2 b.wav\n").unwrap();
        let c = KaldiDataDir::read(d).unwrap();
        assert!((c.utterances[0].duration_s - 1.5).abs() < 1e-9);
        assert!((c.utterances[1].duration_s - 0.5).abs() < 1e-9);
    }

    #[test]
    fn missing_duration_names_the_utterance() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("text"), "u1 a\nu9 b\n").unwrap();
        std::fs::write(dir.path().join("utt2dur"), "u1 1.0\n").unwrap();
        let e = KaldiDataDir::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("u9"), "{e}");
        std::fs::write(dir.path().join("text"), "u1 a\nu1 b\n").unwrap();
        let e = KaldiDataDir::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("text:2") && e.contains("twice"), "{e}");
    }
}

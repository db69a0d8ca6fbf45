//! Earnings-21/22 transcripts: `.nlp` files (pipe-separated tokens with entity tags), their
//! `wer_tag` JSON sidecars (entity id → class) and `norm.json` normalisation candidates (entity id →
//! accepted verbalisations, e.g. `2020` → `twenty twenty`), as fstalign reads them.
//!
//! Layout of the published data: `nlp_references/<id>.nlp`, `wer_tags/<id>.wer_tag.json`,
//! `normalizations/<id>.norm.json`; the sidecars may also sit beside the `.nlp` file. Any of them may
//! be gzip-compressed (`.gz`).

use crate::error::{CoreError, Result};
use crate::io::{find_maybe_gz, name_without_gz, read_text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One row of an `.nlp` file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NlpToken {
    /// The token as written (`2020`, `we'll`, `<inaudible>`).
    pub token: String,
    /// Speaker id.
    pub speaker: String,
    /// Punctuation that follows the token.
    pub punctuation: String,
    /// Casing code (`UC`, `LC`, `CA`, `MC`).
    pub case: String,
    /// The first label of the `tags` column as `(entity id, class)`: tokens that share it form
    /// one normalisation span.
    pub label: Option<(String, String)>,
    /// Entity ids of the `wer_tags` column.
    pub wer_tags: Vec<String>,
}

/// An `.nlp` transcript.
#[derive(Debug, Clone, Default)]
pub struct NlpFile {
    /// The rows in order.
    pub tokens: Vec<NlpToken>,
}

/// One accepted verbalisation of a normalisation span.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct NormCandidate {
    /// Prior probability of this verbalisation.
    #[serde(default)]
    pub probability: f64,
    /// Its words.
    pub verbalization: Vec<String>,
}

/// The candidates for one entity id of a `norm.json` file.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Normalization {
    /// Entity class (`YEAR`, `CARDINAL`, ...).
    #[serde(default)]
    pub class: String,
    /// Accepted verbalisations.
    pub candidates: Vec<NormCandidate>,
}

#[derive(serde::Deserialize)]
struct WerTagEntry {
    entity_type: String,
}

impl NlpFile {
    /// Reads an `.nlp` file. The header names the columns; only `token` is required. A row with the
    /// wrong number of fields or a malformed tag list is an error naming the line.
    pub fn read(path: &Path) -> Result<Self> {
        // Any line end: LF, CRLF, or a lone CR (files saved with old Mac line ends).
        let text = read_text(path)?;
        let mut lines = text
            .split('\n')
            .flat_map(|l| l.strip_suffix('\r').unwrap_or(l).split('\r'))
            .map(str::to_string);
        let header = match lines.next() {
            Some(l) if !l.is_empty() => l,
            _ => return Err(CoreError::format(path, "empty .nlp file (no header)")),
        };
        let cols: Vec<&str> = header.trim_end().split('|').collect();
        let col = |name: &str| cols.iter().position(|c| *c == name);
        let token_col = col("token").ok_or_else(|| {
            CoreError::parse(path, 1, format!("header {header:?} has no `token` column"))
        })?;
        let (spk, punc, case, tags, wer) = (
            col("speaker"),
            col("punctuation"),
            col("case"),
            col("tags"),
            col("wer_tags"),
        );
        let mut out = NlpFile::default();
        for (i, line) in lines.enumerate() {
            let lineno = i + 2;
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split('|').collect();
            if f.len() != cols.len() {
                return Err(CoreError::parse(
                    path,
                    lineno,
                    format!("{} fields, the header has {}", f.len(), cols.len()),
                ));
            }
            let get = |c: Option<usize>| c.map(|c| f[c].to_owned()).unwrap_or_default();
            let label = match tags {
                Some(c) => parse_label(f[c]).map_err(|m| CoreError::parse(path, lineno, m))?,
                None => None,
            };
            let wer_tags = match wer {
                Some(c) => parse_list(f[c]).map_err(|m| CoreError::parse(path, lineno, m))?,
                None => Vec::new(),
            };
            out.tokens.push(NlpToken {
                token: f[token_col].trim().to_owned(),
                speaker: get(spk),
                punctuation: get(punc),
                case: get(case),
                label,
                wer_tags,
            });
        }
        if out.tokens.is_empty() {
            return Err(CoreError::format(
                path,
                "no tokens after the header (a reference with no words scores nothing)",
            ));
        }
        Ok(out)
    }
}

/// Parses a Python-style list of quoted strings: `[]`, `['5']`, `['0', '1', '6']`. An empty field
/// is an empty list: hypothesis `.nlp` files from ASR vendors leave the `tags` column blank.
fn parse_list(s: &str) -> std::result::Result<Vec<String>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let inner = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| format!("expected a list like ['1', '2'], got {s:?}"))?;
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let v = item
            .strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| item.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
            .ok_or_else(|| format!("list item {item:?} is not quoted"))?;
        out.push(v.to_owned());
    }
    Ok(out)
}

/// Parses the `tags` column and keeps its first `id:CLASS` label, as fstalign does.
fn parse_label(s: &str) -> std::result::Result<Option<(String, String)>, String> {
    let items = parse_list(s)?;
    let Some(first) = items.first() else {
        return Ok(None);
    };
    let (id, class) = first
        .split_once(':')
        .ok_or_else(|| format!("tag {first:?} is not of the form id:CLASS"))?;
    Ok(Some((id.to_owned(), class.to_owned())))
}

/// Reads a `wer_tag` JSON sidecar: entity id → entity class.
pub fn read_wer_tags(path: &Path) -> Result<BTreeMap<String, String>> {
    let text = read_text(path)?;
    let raw: BTreeMap<String, WerTagEntry> = serde_json::from_str(&text)
        .map_err(|e| CoreError::parse(path, e.line(), format!("bad wer_tag JSON: {e}")))?;
    Ok(raw.into_iter().map(|(k, v)| (k, v.entity_type)).collect())
}

/// Reads a `norm.json` sidecar: entity id → normalisation candidates.
pub fn read_normalizations(path: &Path) -> Result<BTreeMap<String, Normalization>> {
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map_err(|e| CoreError::parse(path, e.line(), format!("bad norm JSON: {e}")))
}

/// An Earnings transcript with its sidecars.
#[derive(Debug, Clone)]
pub struct EarningsDoc {
    /// Document id (the file name without `.nlp`).
    pub id: String,
    /// The transcript.
    pub nlp: NlpFile,
    /// Entity id → class, from the `wer_tag` sidecar (empty when there is none).
    pub entity_classes: BTreeMap<String, String>,
    /// Entity id → normalisation candidates (empty when there is none).
    pub normalizations: BTreeMap<String, Normalization>,
    /// Where the `.nlp` file was read from.
    pub path: PathBuf,
    /// Inconsistencies found while loading that did not stop it (each names file and line).
    pub warnings: Vec<String>,
}

/// Class given to an entity id that a token uses but the `wer_tag` sidecar does not list.
pub const UNTYPED: &str = "UNTYPED";

/// The document id of an `.nlp` path: its name without `.gz` and `.nlp`.
pub fn nlp_doc_id(path: &Path) -> Option<String> {
    name_without_gz(path)
        .strip_suffix(".nlp")
        .map(str::to_owned)
}

fn find_sidecar(nlp: &Path, id: &str, suffix: &str, sibling_dir: &str) -> Option<PathBuf> {
    let dir = nlp.parent().unwrap_or(Path::new("."));
    let name = format!("{id}{suffix}");
    find_maybe_gz(&dir.join(&name)).or_else(|| {
        let up = dir.parent()?;
        find_maybe_gz(&up.join(sibling_dir).join(&name))
    })
}

impl EarningsDoc {
    /// Reads an `.nlp` file and, when found, its `<id>.wer_tag.json` and `<id>.norm.json` sidecars
    /// (beside it or in the sibling `wer_tags/` and `normalizations/` folders). An entity id that a
    /// token uses but the sidecar does not list gets the class [`UNTYPED`] and a warning naming the
    /// line (the published Earnings-21 data has one: id 1057 of file 4320211).
    pub fn load(nlp_path: &Path) -> Result<Self> {
        let id = nlp_doc_id(nlp_path)
            .ok_or_else(|| CoreError::format(nlp_path, "expected a file named <id>.nlp"))?;
        let nlp = NlpFile::read(nlp_path)?;
        let mut warnings = Vec::new();
        let entity_classes = match find_sidecar(nlp_path, &id, ".wer_tag.json", "wer_tags") {
            Some(p) => {
                let mut tags = read_wer_tags(&p)?;
                for (i, t) in nlp.tokens.iter().enumerate() {
                    for tag in &t.wer_tags {
                        if !tags.contains_key(tag) {
                            warnings.push(format!(
                                "{}:{}: entity id {tag} is not in {}; counted as class {UNTYPED}",
                                nlp_path.display(),
                                i + 2,
                                p.display()
                            ));
                            tags.insert(tag.clone(), UNTYPED.to_owned());
                        }
                    }
                }
                tags
            }
            None => BTreeMap::new(),
        };
        let normalizations = match find_sidecar(nlp_path, &id, ".norm.json", "normalizations") {
            Some(p) => read_normalizations(&p)?,
            None => BTreeMap::new(),
        };
        Ok(Self {
            id,
            nlp,
            entity_classes,
            normalizations,
            path: nlp_path.to_path_buf(),
            warnings,
        })
    }

    /// The `.nlp` files of a directory (plain or `.gz`), sorted by document id.
    pub fn list_dir(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
        let rd = std::fs::read_dir(dir).map_err(|e| CoreError::io(dir, e))?;
        let mut out: Vec<(String, PathBuf)> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|p| nlp_doc_id(&p).map(|id| (id, p)))
            .collect();
        out.sort();
        if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(CoreError::format(
                dir,
                format!(
                    "document {} is there twice ({} and {})",
                    w[0].0,
                    w[0].1.display(),
                    w[1].1.display()
                ),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_tags_and_sidecars() {
        let dir = tempfile::tempdir().unwrap();
        let refs = dir.path().join("nlp_references");
        let tags = dir.path().join("wer_tags");
        std::fs::create_dir_all(&refs).unwrap();
        std::fs::create_dir_all(&tags).unwrap();
        std::fs::write(
            refs.join("42.nlp"),
            "token|speaker|ts|endTs|punctuation|case|tags|wer_tags\n\
             Hello|0||||UC|[]|[]\n\
             2020|0|||.|CA|['0:YEAR']|['0', '1']\n",
        )
        .unwrap();
        std::fs::write(
            tags.join("42.wer_tag.json"),
            r#"{"0": {"entity_type": "YEAR"}, "1": {"entity_type": "DATE"}}"#,
        )
        .unwrap();
        let doc = EarningsDoc::load(&refs.join("42.nlp")).unwrap();
        assert_eq!(doc.id, "42");
        assert_eq!(doc.nlp.tokens.len(), 2);
        let t = &doc.nlp.tokens[1];
        assert_eq!(t.label, Some(("0".into(), "YEAR".into())));
        assert_eq!(t.wer_tags, ["0", "1"]);
        assert_eq!(t.punctuation, ".");
        assert_eq!(doc.entity_classes["1"], "DATE");
        assert!(doc.normalizations.is_empty());
    }

    #[test]
    fn malformed_rows_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("7.nlp");
        std::fs::write(&p, "token|speaker|tags|wer_tags\na|0|[]|[]\nb|0|[]\n").unwrap();
        let e = NlpFile::read(&p).unwrap_err().to_string();
        assert!(e.contains("7.nlp:3"), "{e}");
        std::fs::write(&p, "token|speaker|tags|wer_tags\na|0|['5']|[]\n").unwrap();
        let e = NlpFile::read(&p).unwrap_err().to_string();
        assert!(e.contains("7.nlp:2") && e.contains("id:CLASS"), "{e}");
        std::fs::write(&p, "token|speaker|tags|wer_tags\na|0|[]|['9']\n").unwrap();
        std::fs::write(
            dir.path().join("7.wer_tag.json"),
            r#"{"1": {"entity_type": "ORG"}}"#,
        )
        .unwrap();
        let doc = EarningsDoc::load(&p).unwrap();
        assert_eq!(doc.entity_classes["9"], UNTYPED);
        assert!(
            doc.warnings[0].contains("7.nlp:2") && doc.warnings[0].contains("entity id 9"),
            "{:?}",
            doc.warnings
        );
    }
}

//! The front end's settings shipped with a model (`feat.params`): `-name value` per line.
//! They override a decoder's defaults, so a reader must honour them (pocketsphinx does).

use crate::bytes::read_model_file;
use crate::error::{Result, SphinxError};
use std::path::Path;

/// `feat.params` as (name without the dash, value) pairs in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeatParams {
    /// The entries.
    pub entries: Vec<(String, String)>,
}

impl FeatParams {
    /// Reads `feat.params`; a line that is not `-name value` is an error naming the line.
    ///
    /// ```
    /// # let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sphinx-en-us");
    /// let p = sphinx_am::FeatParams::read(&dir.join("feat.params")).unwrap();
    /// assert_eq!(p.get("nfilt"), Some("25"));
    /// assert_eq!(p.get("remove_noise"), Some("yes"));
    /// ```
    pub fn read(path: &Path) -> Result<Self> {
        let (path, data) = read_model_file(path)?;
        let text = String::from_utf8(data).map_err(|e| SphinxError::Format {
            path: path.clone(),
            what: format!("not UTF-8 text: {e}"),
        })?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(SphinxError::Format {
                    path: path.clone(),
                    what: format!("line {}: '{line}' is not '-name value'", i + 1),
                });
            };
            let Some(name) = name.strip_prefix('-') else {
                return Err(SphinxError::Format {
                    path: path.clone(),
                    what: format!("line {}: '{name}' does not start with '-'", i + 1),
                });
            };
            entries.push((name.to_string(), value.to_string()));
        }
        Ok(Self { entries })
    }

    /// The value of `name` (the last one when given twice), if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

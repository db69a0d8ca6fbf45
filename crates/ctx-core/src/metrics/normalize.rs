//! Text normalisation before scoring.
//!
//! [`TextNorm::Fstalign`] follows fstalign's treatment of Earnings transcripts: tokens are
//! lower-cased, punctuation at either end of a token is stripped (inner apostrophes and hyphens
//! stay: `we'll`, `covid-19`), and non-speech tags such as `<inaudible>` or `<crosstalk>` are
//! removed from both sides, so they count neither as reference words nor as insertions.
//! [`TextNorm::Exact`] compares tokens as given, like Kaldi's `compute-wer`.

/// How tokens are normalised before alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextNorm {
    /// Compare tokens exactly as written.
    #[default]
    Exact,
    /// Lower-case, strip edge punctuation, drop `<...>` non-speech tags.
    Fstalign,
}

const EDGE_PUNCT: &[char] = &[
    '.', ',', '?', '!', ';', ':', '"', '\'', '(', ')', '[', ']', '{', '}', '…', '“', '”', '‘', '’',
    '«', '»', '¿', '¡',
];

/// True for non-speech tags such as `<inaudible>`, `<laugh>`, `<unk>`.
pub fn is_nonspeech_tag(token: &str) -> bool {
    token.len() >= 2 && token.starts_with('<') && token.ends_with('>')
}

impl TextNorm {
    /// Normalises one token; `None` means the token is dropped.
    pub fn token(self, token: &str) -> Option<String> {
        match self {
            TextNorm::Exact => (!token.is_empty()).then(|| token.to_owned()),
            TextNorm::Fstalign => {
                if is_nonspeech_tag(token) {
                    return None;
                }
                let t = token.trim_matches(|c: char| EDGE_PUNCT.contains(&c) || c.is_whitespace());
                // `<inaudible>,`: a tag with punctuation glued on (vendor files) is still a tag.
                (!t.is_empty() && !is_nonspeech_tag(t)).then(|| t.to_lowercase())
            }
        }
    }

    /// Normalises a sequence of tokens, dropping those that vanish.
    pub fn words<S: AsRef<str>>(self, tokens: &[S]) -> Vec<String> {
        tokens
            .iter()
            .filter_map(|t| self.token(t.as_ref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fstalign_normalisation() {
        let n = TextNorm::Fstalign;
        assert_eq!(n.token("Inc."), Some("inc".into()));
        assert_eq!(n.token("We'll"), Some("we'll".into()));
        assert_eq!(n.token("COVID-19,"), Some("covid-19".into()));
        assert_eq!(n.token("50%"), Some("50%".into()));
        assert_eq!(n.token("<inaudible>"), None);
        assert_eq!(n.token("<crosstalk>,"), None);
        assert_eq!(n.token("'"), None);
        assert_eq!(n.token("the-"), Some("the-".into()));
        assert_eq!(TextNorm::Exact.token("Inc."), Some("Inc.".into()));
    }
}

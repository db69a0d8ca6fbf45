//! Pronunciations for any word: CMUdict first, then rules for the words it lacks (entity names,
//! waypoints, callsign parts), so that every word of a biasing list can enter the lexicon.
//!
//! Order of attempts, each reported as a [`Source`]:
//! 1. [`Source::Dict`]: CMUdict (stress digits stripped; all variants kept).
//! 2. [`Source::Compound`]: a word joined by `-` or `_` (`C_S_A`, `covid-19`) is the concatenation of
//!    its parts' first pronunciations; digits are read as digit words.
//! 3. [`Source::Spelled`]: a short word without a vowel letter (`klm`, `dhl`) is spelled letter by
//!    letter, as such codes are spoken.
//! 4. [`Source::Rules`]: letter-to-sound rules (longest grapheme match, a little context), a crude
//!    but deterministic English reading that only uses the 39 CMUdict phones.

use ctx_core::lexicon::{Lexicon, LexiconEntry, LexiconFormat};
use std::collections::BTreeMap;
use std::path::Path;

/// How a pronunciation was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// From the dictionary.
    Dict,
    /// Concatenated from the parts of a compound or from digits.
    Compound,
    /// Spelled letter by letter.
    Spelled,
    /// Letter-to-sound rules.
    Rules,
}

/// Errors of the pronouncer.
#[derive(Debug, thiserror::Error)]
pub enum PronounceError {
    /// A word has characters no rule can read.
    #[error("word {word:?}: cannot pronounce character {ch:?}")]
    Unreadable {
        /// The word.
        word: String,
        /// The first unreadable character.
        ch: char,
    },
    /// The dictionary could not be read.
    #[error(transparent)]
    Core(#[from] ctx_core::CoreError),
}

/// The 39 CMUdict phones (without stress).
pub const CMU_PHONES: [&str; 39] = [
    "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH",
    "IH", "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH",
    "UW", "V", "W", "Y", "Z", "ZH",
];

const LETTER_NAMES: [&str; 26] = [
    "EY",
    "B IY",
    "S IY",
    "D IY",
    "IY",
    "EH F",
    "JH IY",
    "EY CH",
    "AY",
    "JH EY",
    "K EY",
    "EH L",
    "EH M",
    "EH N",
    "OW",
    "P IY",
    "K Y UW",
    "AA R",
    "EH S",
    "T IY",
    "Y UW",
    "V IY",
    "D AH B AH L Y UW",
    "EH K S",
    "W AY",
    "Z IY",
];

const DIGITS: [&str; 10] = [
    "Z IH R OW",
    "W AH N",
    "T UW",
    "TH R IY",
    "F AO R",
    "F AY V",
    "S IH K S",
    "S EH V AH N",
    "EY T",
    "N AY N",
];

/// A dictionary plus fallbacks.
#[derive(Debug, Clone)]
pub struct Pronouncer {
    dict: Lexicon,
}

fn split(p: &str) -> Vec<String> {
    p.split_whitespace().map(str::to_owned).collect()
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

/// Letter-to-sound rules over a lower-case ASCII word (letters and apostrophes only).
fn rules(word: &str) -> Vec<String> {
    let w: Vec<char> = word.chars().filter(|&c| c != '\'').collect();
    let n = w.len();
    let at = |i: usize| -> char { w.get(i).copied().unwrap_or(' ') };
    let starts = |i: usize, s: &str| s.chars().enumerate().all(|(k, c)| at(i + k) == c);
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < n {
        let c = at(i);
        // Multi-letter graphemes, longest first: (spelling, phones, only at word start).
        const GRAPHEMES: [(&str, &str, bool); 38] = [
            ("ough", "AO", false),
            ("augh", "AO", false),
            ("tch", "CH", false),
            ("sch", "S K", false),
            ("igh", "AY", false),
            ("eau", "OW", false),
            ("ch", "CH", false),
            ("sh", "SH", false),
            ("th", "TH", false),
            ("ph", "F", false),
            ("gh", "G", true),
            ("ng", "NG", false),
            ("ck", "K", false),
            ("qu", "K W", false),
            ("wh", "W", false),
            ("kn", "N", true),
            ("wr", "R", true),
            ("ee", "IY", false),
            ("ea", "IY", false),
            ("oo", "UW", false),
            ("ou", "AW", false),
            ("ow", "OW", false),
            ("oi", "OY", false),
            ("oy", "OY", false),
            ("ai", "EY", false),
            ("ay", "EY", false),
            ("ei", "EY", false),
            ("ey", "EY", false),
            ("au", "AO", false),
            ("aw", "AO", false),
            ("ie", "IY", false),
            ("ue", "UW", false),
            ("ui", "UW", false),
            ("er", "ER", false),
            ("ir", "ER", false),
            ("ur", "ER", false),
            ("ar", "AA R", false),
            ("or", "AO R", false),
        ];
        if let Some(&(g, p, _)) = GRAPHEMES
            .iter()
            .find(|(g, _, initial)| (!initial || i == 0) && starts(i, g))
        {
            out.extend(p.split(' '));
            i += g.len();
            continue;
        }
        if c == 'g' && at(i + 1) == 'h' {
            // Silent "gh" inside a word (caught above only at the start).
            i += 2;
            continue;
        }
        // A doubled consonant sounds once.
        if !is_vowel(c) && at(i + 1) == c {
            i += 1;
            continue;
        }
        let next = at(i + 1);
        let soft = matches!(next, 'e' | 'i' | 'y');
        let p = match c {
            'a' => "AE",
            'b' => "B",
            'c' if soft => "S",
            'c' => "K",
            'd' => "D",
            'e' if i + 1 == n && n > 2 => "",
            'e' => "EH",
            'f' => "F",
            'g' if soft => "JH",
            'g' => "G",
            'h' => "HH",
            'i' => "IH",
            'j' => "JH",
            'k' => "K",
            'l' => "L",
            'm' => "M",
            'n' => "N",
            'o' => "AA",
            'p' => "P",
            'q' => "K",
            'r' => "R",
            's' => "S",
            't' => "T",
            'u' => "AH",
            'v' => "V",
            'w' => "W",
            'x' => "K S",
            'y' if i == 0 => "Y",
            'y' => "IY",
            'z' => "Z",
            _ => "",
        };
        out.extend(p.split(' ').filter(|s| !s.is_empty()));
        i += 1;
    }
    out.into_iter().map(str::to_owned).collect()
}

impl Pronouncer {
    /// Wraps a lexicon (phones should be stress-free CMU phones).
    pub fn new(dict: Lexicon) -> Self {
        Self { dict }
    }

    /// Reads CMUdict (plain or gzip), stripping stress.
    pub fn from_cmudict(path: &Path) -> Result<Self, PronounceError> {
        Ok(Self::new(Lexicon::read(
            path,
            LexiconFormat::CmuDict { strip_stress: true },
        )?))
    }

    /// Pronunciations of `word` (lower-cased first) and how they were found.
    pub fn pronounce(&self, word: &str) -> Result<(Vec<Vec<String>>, Source), PronounceError> {
        let w = word.to_lowercase();
        let dict: Vec<Vec<String>> = self
            .dict
            .pronunciations(&w)
            .map(|e| e.phones.clone())
            .collect();
        if !dict.is_empty() {
            return Ok((dict, Source::Dict));
        }
        if let Some(bad) = w
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '\'' | '-' | '_')))
        {
            return Err(PronounceError::Unreadable {
                word: word.to_owned(),
                ch: bad,
            });
        }
        let parts: Vec<&str> = w.split(['-', '_']).filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return Err(PronounceError::Unreadable {
                word: word.to_owned(),
                ch: w.chars().next().unwrap_or(' '),
            });
        }
        if parts.len() > 1 || w.chars().any(|c| c.is_ascii_digit()) {
            let mut phones = Vec::new();
            for p in parts {
                // Runs of letters and of digits within a part.
                let mut run = String::new();
                let flush =
                    |run: &mut String, phones: &mut Vec<String>| -> Result<(), PronounceError> {
                        if !run.is_empty() {
                            let (pr, _) = self.pronounce(run)?;
                            phones.extend(pr[0].iter().cloned());
                            run.clear();
                        }
                        Ok(())
                    };
                for c in p.chars() {
                    if let Some(d) = c.to_digit(10) {
                        flush(&mut run, &mut phones)?;
                        phones.extend(split(DIGITS[d as usize]));
                    } else {
                        run.push(c);
                    }
                }
                flush(&mut run, &mut phones)?;
            }
            return Ok((vec![phones], Source::Compound));
        }
        let letters: Vec<char> = w.chars().filter(|c| c.is_ascii_alphabetic()).collect();
        if !letters.is_empty()
            && (letters.len() == 1 || (letters.len() <= 5 && !letters.iter().any(|&c| is_vowel(c))))
        {
            let phones = letters
                .iter()
                .flat_map(|&c| split(LETTER_NAMES[(c as u8 - b'a') as usize]))
                .collect();
            return Ok((vec![phones], Source::Spelled));
        }
        let phones = rules(&w);
        if phones.is_empty() {
            return Err(PronounceError::Unreadable {
                word: word.to_owned(),
                ch: w.chars().next().unwrap_or(' '),
            });
        }
        Ok((vec![phones], Source::Rules))
    }

    /// A lexicon for `words` (each lower-cased) with the count of words per [`Source`]; the first
    /// unreadable word is an error naming it.
    pub fn lexicon_for<S: AsRef<str>>(
        &self,
        words: &[S],
    ) -> Result<(Lexicon, BTreeMap<Source, usize>), PronounceError> {
        let mut lex = Lexicon::new();
        let mut by_source = BTreeMap::new();
        for w in words {
            let w = w.as_ref().to_lowercase();
            if lex.contains(&w) {
                continue;
            }
            let (prons, src) = self.pronounce(&w)?;
            *by_source.entry(src).or_default() += 1;
            for phones in prons {
                lex.push(LexiconEntry {
                    word: w.clone(),
                    prob: 1.0,
                    phones,
                });
            }
        }
        Ok((lex, by_source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn pron() -> Pronouncer {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.dict");
        std::fs::write(
            &p,
            "read R IY1 D\nread(2) R EH1 D\nhansa HH AE1 N S AH0\nsky S K AY1\n",
        )
        .unwrap();
        Pronouncer::from_cmudict(&p).unwrap()
    }

    #[test]
    fn each_fallback_in_turn() {
        let p = pron();
        let (r, s) = p.pronounce("Read").unwrap();
        assert_eq!((r.len(), s), (2, Source::Dict));
        assert_eq!(r[1], ["R", "EH", "D"]);
        let (r, s) = p.pronounce("sky-hansa").unwrap();
        assert_eq!(s, Source::Compound);
        assert_eq!(r[0].join(" "), "S K AY HH AE N S AH");
        let (r, s) = p.pronounce("C_S_A").unwrap();
        assert_eq!(
            (r[0].join(" ").as_str(), s),
            ("S IY EH S EY", Source::Compound)
        );
        let (r, s) = p.pronounce("a320").unwrap();
        assert_eq!(
            (r[0].join(" ").as_str(), s),
            ("EY TH R IY T UW Z IH R OW", Source::Compound)
        );
        let (r, s) = p.pronounce("klm").unwrap();
        assert_eq!(
            (r[0].join(" ").as_str(), s),
            ("K EY EH L EH M", Source::Spelled)
        );
        let (r, s) = p.pronounce("lufthansa").unwrap();
        assert_eq!(s, Source::Rules);
        assert_eq!(r[0].join(" "), "L AH F TH AE N S AE");
        // "ie" is one grapheme (IY) and "nn" sounds once: crude but as the rules say.
        assert_eq!(p.pronounce("vienna").unwrap().0[0].join(" "), "V IY N AE");
        assert_eq!(
            p.pronounce("checkpoint").unwrap().0[0].join(" "),
            "CH EH K P OY N T"
        );
    }

    #[test]
    fn rules_use_only_cmu_phones_and_bad_words_are_errors() {
        let inv: BTreeSet<&str> = CMU_PHONES.into_iter().collect();
        for w in [
            "gnuzz",
            "xylophone",
            "qatar",
            "phyllis",
            "knight",
            "yeovil",
            "schiphol",
            "ough",
            "tchad",
            "bb",
        ] {
            let (r, _) = pron().pronounce(w).unwrap();
            assert!(
                !r[0].is_empty() && r[0].iter().all(|p| inv.contains(p.as_str())),
                "{w}: {:?}",
                r[0]
            );
        }
        let e = pron().pronounce("zürich").unwrap_err().to_string();
        assert!(e.contains("zürich") && e.contains('ü'), "{e}");
        let (lex, by) = pron()
            .lexicon_for(&["read", "klm", "lufthansa", "READ"])
            .unwrap();
        assert_eq!(lex.len(), 4);
        assert_eq!(by[&Source::Dict], 1);
        assert_eq!(by[&Source::Rules], 1);
    }
}

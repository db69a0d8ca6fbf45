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
//!
//! Written forms with numbers and symbols (`2021`, `$2.1`, `20%`, `r&d`, `10:30`), as the Earnings
//! transcripts have them, are first verbalised ([`verbalize`]: cardinals, years, decimals,
//! currencies, percent, `&` = "and") and reported as [`Source::Verbalized`]; digits inside a
//! letter run (`a320`, `5g`) are read digit by digit, as codes are spoken.

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
    /// A written form with numbers or symbols, verbalised first.
    Verbalized,
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

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const SCALES: [&str; 5] = ["", "thousand", "million", "billion", "trillion"];

/// Cardinal words of `n` < 1000 (nothing for 0).
pub(crate) fn below_thousand(n: u64, out: &mut Vec<String>) {
    let (h, r) = (n / 100, n % 100);
    if h > 0 {
        out.push(ONES[h as usize].into());
        out.push("hundred".into());
    }
    if r >= 20 {
        out.push(TENS[(r / 10) as usize].into());
        if r % 10 > 0 {
            out.push(ONES[(r % 10) as usize].into());
        }
    } else if r > 0 {
        out.push(ONES[r as usize].into());
    }
}

/// Spoken words of a digit string: years 1100–2099 as years ("twenty twenty one", "two thousand
/// nine"), other numbers as cardinals; leading zeros and numbers of 16+ digits digit by digit.
fn number_words(digits: &str, as_year: bool) -> Vec<String> {
    let mut out = Vec::new();
    if digits.is_empty() {
        return out;
    }
    if (digits.len() > 1 && digits.starts_with('0')) || digits.len() > 15 {
        for c in digits.chars() {
            out.push(ONES[c.to_digit(10).unwrap() as usize].into());
        }
        return out;
    }
    let n: u64 = digits.parse().unwrap();
    if n == 0 {
        return vec!["zero".into()];
    }
    if as_year && digits.len() == 4 && (1100..2100).contains(&n) && !(2000..2010).contains(&n) {
        below_thousand(n / 100, &mut out);
        match n % 100 {
            0 => out.push("hundred".into()),
            r if r < 10 => {
                out.push("oh".into());
                out.push(ONES[r as usize].into());
            }
            r => below_thousand(r, &mut out),
        }
        return out;
    }
    let mut groups = Vec::new();
    let mut m = n;
    while m > 0 {
        groups.push(m % 1000);
        m /= 1000;
    }
    for (i, &g) in groups.iter().enumerate().rev() {
        if g > 0 {
            below_thousand(g, &mut out);
            if i > 0 {
                out.push(SCALES[i].into());
            }
        }
    }
    out
}

/// Spoken words for a written form with numbers or symbols, or `None` when a character cannot be
/// read. `$2.1` → "two point one dollars", `20%` → "twenty percent", `2021` → "twenty twenty
/// one", `1,200` → "one thousand two hundred", `r&d` → "r and d", `10:30` → "ten thirty",
/// `u.s.` → "u s"; letters between are kept as words, non-ASCII letters folded (`ł` → `l`).
pub fn verbalize(word: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = word
        .chars()
        .map(|c| match c {
            'ł' => 'l',
            'ø' => 'o',
            'ı' => 'i',
            'é' | 'è' | 'ê' => 'e',
            'á' | 'à' | 'ä' => 'a',
            'ó' | 'ö' => 'o',
            'ü' | 'ú' => 'u',
            'ñ' => 'n',
            '–' | '—' => '-',
            c => c,
        })
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut unit: Option<&str> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            // A number: digits with thousands commas and one decimal point.
            let mut int = String::new();
            let mut frac = String::new();
            let mut j = i;
            while j < chars.len() {
                let d = chars[j];
                let next_digit = chars.get(j + 1).is_some_and(|x| x.is_ascii_digit());
                if d.is_ascii_digit() {
                    if frac.is_empty() && !chars[i..j].contains(&'.') {
                        int.push(d);
                    } else {
                        frac.push(d);
                    }
                } else if !((d == ',' || d == '.') && next_digit && !chars[i..j].contains(&'.')) {
                    // Thousands commas and one decimal point stay inside the number.
                    break;
                }
                j += 1;
            }
            let letters_around = (i > 0 && chars[i - 1].is_ascii_alphabetic())
                || chars.get(j).is_some_and(|x| x.is_ascii_alphabetic());
            if letters_around && frac.is_empty() {
                // A code: digit by digit.
                for d in int.chars() {
                    out.push(ONES[d.to_digit(10).unwrap() as usize].into());
                }
            } else {
                out.extend(number_words(&int, unit.is_none() && frac.is_empty()));
                if !frac.is_empty() {
                    out.push("point".into());
                    for d in frac.chars() {
                        out.push(ONES[d.to_digit(10).unwrap() as usize].into());
                    }
                }
                if let Some(u) = unit.take() {
                    out.push(u.into());
                }
            }
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '\'' {
            let mut j = i;
            let mut run = String::new();
            while j < chars.len() && (chars[j].is_ascii_alphabetic() || chars[j] == '\'') {
                run.push(chars[j]);
                j += 1;
            }
            if run.chars().any(|c| c.is_ascii_alphabetic()) {
                out.push(run);
            }
            i = j;
            continue;
        }
        match c {
            '$' => unit = Some("dollars"),
            '€' => unit = Some("euros"),
            '£' => unit = Some("pounds"),
            '¥' => unit = Some("yen"),
            '₽' => unit = Some("rubles"),
            '₦' => unit = Some("naira"),
            '₱' => unit = Some("pesos"),
            '₵' => unit = Some("cedis"),
            '¢' => out.push("cents".into()),
            '%' => out.push("percent".into()),
            '&' => out.push("and".into()),
            '+' => out.push("plus".into()),
            '@' => out.push("at".into()),
            '=' => out.push("equals".into()),
            '#' => out.push("number".into()),
            '/' => out.push("slash".into()),
            '.' | ',' | ':' | '-' | '_' | '*' | '\\' => {}
            _ => return None,
        }
        i += 1;
    }
    if let Some(u) = unit {
        out.push(u.into());
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
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
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '\'' | '-' | '_');
        let pure_number = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit());
        if !w.chars().all(plain) || w.split(['-', '_']).any(pure_number) {
            let spoken = verbalize(&w).ok_or_else(|| PronounceError::Unreadable {
                word: word.to_owned(),
                ch: w.chars().find(|&c| !plain(c)).unwrap_or(' '),
            })?;
            let mut phones = Vec::new();
            for s in &spoken {
                let (pr, _) = self.pronounce(s).map_err(|_| PronounceError::Unreadable {
                    word: word.to_owned(),
                    ch: s.chars().find(|&c| !plain(c)).unwrap_or(' '),
                })?;
                phones.extend(pr[0].iter().cloned());
            }
            return Ok((vec![phones], Source::Verbalized));
        }
        if let Some(bad) = w.chars().find(|&c| !plain(c)) {
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
                        if run.chars().any(|c| c.is_ascii_alphabetic()) {
                            let (pr, _) = self.pronounce(run)?;
                            phones.extend(pr[0].iter().cloned());
                        }
                        run.clear();
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
    fn written_numbers_and_symbols_are_verbalised() {
        let v = |w: &str| verbalize(w).map(|x| x.join(" "));
        assert_eq!(v("2021").as_deref(), Some("twenty twenty one"));
        assert_eq!(v("2005").as_deref(), Some("two thousand five"));
        assert_eq!(v("1900").as_deref(), Some("nineteen hundred"));
        assert_eq!(v("$2.1").as_deref(), Some("two point one dollars"));
        assert_eq!(
            v("$2,021").as_deref(),
            Some("two thousand twenty one dollars")
        );
        assert_eq!(v("20%").as_deref(), Some("twenty percent"));
        assert_eq!(
            v("1,200,005").as_deref(),
            Some("one million two hundred thousand five")
        );
        assert_eq!(v("r&d").as_deref(), Some("r and d"));
        assert_eq!(v("10:30").as_deref(), Some("ten thirty"));
        assert_eq!(v("u.s.").as_deref(), Some("u s"));
        assert_eq!(v("q4").as_deref(), Some("q four"));
        assert_eq!(v("007").as_deref(), Some("zero zero seven"));
        assert_eq!(v("€115").as_deref(), Some("one hundred fifteen euros"));
        assert_eq!(v("☃"), None);
        let p = pron();
        let (r, s) = p.pronounce("20%").unwrap();
        assert_eq!(s, Source::Verbalized);
        assert_eq!(r[0][..4].join(" "), "T W EH N");
        assert!(p.pronounce("☃").is_err());
        // covid-19: the pure-number part is a cardinal.
        let (_, s) = p.pronounce("covid-19").unwrap();
        assert_eq!(s, Source::Verbalized);
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
        let e = pron().pronounce("z☃rich").unwrap_err().to_string();
        assert!(e.contains("z☃rich") && e.contains('☃'), "{e}");
        // Accented letters are folded.
        assert!(pron().pronounce("zürich").is_ok());

        let (lex, by) = pron()
            .lexicon_for(&["read", "klm", "lufthansa", "READ"])
            .unwrap();
        assert_eq!(lex.len(), 4);
        assert_eq!(by[&Source::Dict], 1);
        assert_eq!(by[&Source::Rules], 1);
    }
}

//! Pronouncing the real Earnings-21 oracle list with the shipped CMUdict.

use ctx_data::pronounce::{PronounceError, Pronouncer, Source, CMU_PHONES};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn every_oracle_word_gets_cmu_phones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let p = Pronouncer::from_cmudict(&root.join("cmudict/cmudict.dict.gz")).unwrap();
    let list = std::fs::read_to_string(root.join("earnings21/bias_lists/oracle_list.txt")).unwrap();
    let words: BTreeSet<String> = list.split_whitespace().map(str::to_lowercase).collect();
    let (lex, by) = p.lexicon_for(&words.iter().collect::<Vec<_>>()).unwrap();
    let inv: BTreeSet<String> = CMU_PHONES.iter().map(|s| s.to_string()).collect();
    lex.check_phones(&inv).unwrap();
    assert_eq!(by.values().sum::<usize>(), words.len());
    // Most oracle words are ordinary English or common names.
    assert!(
        by[&Source::Dict] * 10 > words.len() * 7,
        "{by:?} of {}",
        words.len()
    );
    // Written forms with symbols ("&", ".") are verbalised: "at&t" reads "at and t".
    assert_eq!(
        by[&Source::Verbalized],
        words.iter().filter(|w| w.contains(['&', '.'])).count()
    );
    println!("oracle words: {}, by source {by:?}", words.len());
}

#[test]
fn the_whole_earnings22_vocabulary_is_pronounced_or_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let p = Pronouncer::from_cmudict(&root.join("cmudict/cmudict.dict.gz")).unwrap();
    let text = ctx_core::io::read_text(&root.join("earnings22/lm_text.txt.gz")).unwrap();
    let words: BTreeSet<&str> = text.split_whitespace().collect();
    let mut by = std::collections::BTreeMap::new();
    let mut unreadable = Vec::new();
    for w in &words {
        match p.pronounce(w) {
            Ok((_, s)) => *by.entry(s).or_insert(0usize) += 1,
            Err(PronounceError::Unreadable { word, .. }) => {
                assert_eq!(&word, w, "the error names the word");
                unreadable.push(*w);
            }
            Err(e) => panic!("{e}"),
        }
    }
    println!(
        "earnings22 vocabulary: {} words, by source {by:?}, unreadable {unreadable:?}",
        words.len()
    );
    // Only a handful of tokens use characters no rule reads.
    assert!(unreadable.len() * 1000 < words.len(), "{unreadable:?}");
}

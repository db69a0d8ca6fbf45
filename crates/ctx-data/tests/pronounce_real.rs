//! Pronouncing the real Earnings-21 oracle list with the shipped CMUdict.

use ctx_data::pronounce::{Pronouncer, Source, CMU_PHONES};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn every_readable_oracle_word_gets_cmu_phones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let p = Pronouncer::from_cmudict(&root.join("cmudict/cmudict.dict.gz")).unwrap();
    let list = std::fs::read_to_string(root.join("earnings21/bias_lists/oracle_list.txt")).unwrap();
    let words: BTreeSet<String> = list.split_whitespace().map(str::to_lowercase).collect();
    let readable: Vec<&String> = words
        .iter()
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '\'' | '-' | '_'))
        })
        .collect();
    let (lex, by) = p.lexicon_for(&readable).unwrap();
    let inv: BTreeSet<String> = CMU_PHONES.iter().map(|s| s.to_string()).collect();
    lex.check_phones(&inv).unwrap();
    assert_eq!(by.values().sum::<usize>(), readable.len());
    // Most oracle words are ordinary English or common names.
    assert!(
        by[&Source::Dict] * 10 > readable.len() * 7,
        "{by:?} of {}",
        readable.len()
    );
    // Words with other characters ("&", ".") are refused by name, never silently dropped.
    if let Some(odd) = words.iter().find(|w| !readable.contains(w)) {
        assert!(p
            .pronounce(odd)
            .unwrap_err()
            .to_string()
            .contains(odd.as_str()));
    }
    println!(
        "oracle words: {} readable of {}, by source {by:?}",
        readable.len(),
        words.len()
    );
}

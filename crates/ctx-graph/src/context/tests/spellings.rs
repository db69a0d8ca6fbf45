//! The context graph of a list with NeMo's spellings (`WORD_SPELLING1_…`): a path per
//! spelling, writing the phrase's own words.

use super::*;

#[test]
fn a_phrase_with_spellings_reads_each_and_writes_its_own_words() {
    // NeMo's form: "zorblax inc" heard as "zorro mute" or "zorblax"; "mute" has a spelling
    // no one can spell; "zed" has no spellable one.
    let text = "zorblax inc_zorro mute_zorblax\t3\nmute_nobody knows_mute corp\nzed_nobody\n";
    let nemo = |t: &str| ContextList::parse_with(t, Path::new("ctx"), 2.0, true, Some('_'));
    let g = ContextGraph::compile(&nemo(text).unwrap(), spell, CtcTopology::Normal, None);
    let g = g.unwrap();
    assert_eq!(g.phrases, 2);
    assert_eq!(g.unspellable, ["nobody knows", "nobody"]);
    assert_eq!(g.words, ["zorblax", "inc", "mute"]);
    let gr = &g.graph;
    // zorro mute (7 5 6) writes zorblax on its first word's token, inc on its second's;
    // zorblax (7 7 9), one word, writes inc on its next token.
    assert_eq!(read(gr, &[t(7), t(5), t(6)]), Some((-3.0, vec![1, 2])));
    assert_eq!(read(gr, &[t(7), B, t(7), t(9)]), Some((-3.0, vec![1, 2])));
    // mute corp (6 4) writes mute; the word itself is no spelling of it.
    assert_eq!(read(gr, &[t(6), t(4)]), Some((-2.0, vec![3])));
    assert_eq!(read(gr, &[t(6)]), None);
    // A phrase longer than a spelling's tokens cannot be written by it.
    let err = ContextGraph::compile(
        &nemo("a b c_mute\n").unwrap(),
        spell,
        CtcTopology::Normal,
        None,
    );
    let want = "'a b c' has more words than its spelling 'mute' has units";
    assert!(err.unwrap_err().to_string().contains(want));
}

"""CtcDecoder.from_lm (pyctcdecode's build_ctcdecoder habit): a character model's labels and an
ARPA LM make a TLG; decoding hand-made log-probs gives the spoken words; contexts add words the
LM lacks; bad labels raise."""

import numpy as np
import pytest

import ctxbench

# A character model, NeMo-style: the blank last, a space as the word delimiter.
LABELS = [" ", "a", "c", "d", "g", "o", "t", ""]
ARPA = """\\data\\
ngram 1=6
ngram 2=3

\\1-grams:
-1.0\t<s>\t-0.3
-0.7\t</s>
-0.6\tcat\t-0.3
-0.6\tdog\t-0.3
-0.9\tgod\t-0.3
-0.9\tcod\t-0.3

\\2-grams:
-0.2\t<s> cat
-0.2\tcat dog
-0.2\tdog </s>

\\end\\
"""


def say(text, labels=LABELS, blank=None, hold=2, gap=1):
    """Log-probs of `text` spoken one character at a time: each label held `hold` frames at
    probability 0.9, a blank gap between (required between repeats), blanks around."""
    cols = {l: i for i, l in enumerate(labels)}
    b = len(labels) - 1 if blank is None else blank
    seq = [b, b]
    for ch in text:
        seq += [cols[ch]] * hold + [b] * gap
    seq += [b, b]
    lp = np.full((len(seq), len(labels)), np.log(0.1 / (len(labels) - 1)), dtype=np.float32)
    for t, c in enumerate(seq):
        lp[t, c] = np.log(0.9)
    return lp


@pytest.fixture
def lm(tmp_path):
    p = tmp_path / "lm.arpa"
    p.write_text(ARPA)
    return p


def test_characters_and_an_lm_decode_the_spoken_words(lm, tmp_path):
    dec = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=str(tmp_path / "cache"))
    assert dec.blank == 7 and dec.has_slot
    info = dec.graph_info
    assert info["unspellable"] == "" and not info["cached"]
    assert dec.decode(say("cat dog")).text == "cat dog"
    # Without the delimiter spoken between the words, the LM's words still segment it.
    assert dec.decode(say("catdog")).text == "cat dog"
    # "tac" is no word of the LM: not decoded as itself.
    assert "tac" not in dec.decode(say("tac")).text.split()
    # Word times: "dog" starts after "cat " (2 lead blanks + 4 × 3 frames), 40 ms a frame.
    w = dec.decode(say("cat dog")).words
    assert [x.word for x in w] == ["cat", "dog"]
    assert w[1].start == pytest.approx(14 * 0.04)
    # A second decoder finds the graph in the cache.
    again = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=str(tmp_path / "cache"))
    assert again.graph_info["cached"]
    assert again.decode(say("cat dog")).text == "cat dog"


def test_contexts_decode_a_word_the_lm_lacks_and_only_where_given(lm):
    dec = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=None)
    plain = dec.decode(say("tac"))
    assert plain.text != "tac"
    hyp = dec.decode(say("tac"), contexts=[("tac", 5.0)])
    assert hyp.text == "tac"
    # Per utterance: the first gets the phrase, the second none.
    hyps = dec.decode_batch([say("tac"), say("tac")], contexts=[["tac"], None])
    assert [h.text for h in hyps] == ["tac", plain.text]
    # A phrase of two words, one of them in the LM.
    assert dec.decode(say("dog tac"), contexts=["dog tac"]).text == "dog tac"


def test_a_negative_weight_penalises_the_lm_words(lm):
    dec = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=None)
    assert dec.decode(say("god")).text == "god"
    # "god" at -20: the graph's own path pays 20, so "dog"/"cod"-like paths win.
    assert dec.decode(say("god"), contexts=[("god", -20.0)]).text != "god"


def test_the_blank_may_sit_anywhere(lm):
    # The same model with its columns in another order: the blank first.
    order = [7, 0, 1, 2, 3, 4, 5, 6]
    labels = [LABELS[i] for i in order]
    dec = ctxbench.CtcDecoder.from_lm(labels, lm, cache_dir=None)
    assert dec.blank == 0
    lp = say("cat dog")[:, order]
    assert dec.decode(lp).text == "cat dog"
    assert dec.decode(say("tac")[:, order], contexts=["tac"]).text == "tac"


def test_pieces_spell_words_from_their_word_start(tmp_path):
    labels = ["<blk>", "▁c", "at", "▁d", "og", "▁", "a", "c", "t", "o", "g", "d"]
    lm = tmp_path / "lm.arpa"
    lm.write_text(ARPA)
    dec = ctxbench.CtcDecoder.from_lm(labels, lm, cache_dir=None)
    cols = {l: i for i, l in enumerate(labels)}
    seq = [0, 0]
    for p in ["▁c", "at", "▁d", "og"]:
        seq += [cols[p]] * 2 + [0]
    lp = np.full((len(seq), len(labels)), np.log(0.1 / 11), dtype=np.float32)
    for t, c in enumerate(seq):
        lp[t, c] = np.log(0.9)
    assert dec.decode(lp).text == "cat dog"


@pytest.mark.parametrize("labels, kwargs, exc, needle", [
    (["a", "b"], {}, ValueError, "no blank label"),
    (["", "<pad>", "a"], {}, ValueError, "could each be the blank"),
    (["", "a", "a"], {}, ValueError, "columns 1 and 2 are both"),
    (["", "a"], {"blank": 5}, ValueError, "blank column 5 is beyond"),
    (["", "x", "y"], {}, ValueError, "the labels spell none of its"),
])
def test_bad_labels_raise_naming_them(lm, labels, kwargs, exc, needle):
    with pytest.raises(exc, match=needle):
        ctxbench.CtcDecoder.from_lm(labels, lm, cache_dir=None, **kwargs)


def test_bad_contexts_raise_naming_the_element(lm):
    dec = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=None)
    lp = say("cat")
    cases = [
        ("cat", TypeError, "contexts: expected a list"),
        ([("cat", "x")], TypeError, r"contexts\[0\]: the weight is not a number"),
        ([("cat", 1.0, 2.0)], TypeError, r"contexts\[0\]: expected \(phrase, weight\)"),
        ([""], ValueError, r"contexts\[0\]: an empty phrase"),
        ([("cat", float("inf"))], ValueError, r"contexts\[0\]: weight inf"),
        ([3], TypeError, r"contexts\[0\]: expected a phrase"),
    ]
    for contexts, exc, needle in cases:
        with pytest.raises(exc, match=needle):
            dec.decode(lp, contexts=contexts)
    with pytest.raises(ValueError, match="contexts: 1 lists for 2 utterances"):
        dec.decode_batch([lp, lp], contexts=[["cat"]])
    with pytest.warns(UserWarning, match="cannot spell: xyz"):
        dec.decode(lp, contexts=["xyz"])


def test_a_missing_lm_names_it(tmp_path):
    with pytest.raises(ValueError, match="lm: .*nope.arpa"):
        ctxbench.CtcDecoder.from_lm(LABELS, tmp_path / "nope.arpa", cache_dir=None)


def export_labels(e):
    """The exported model's labels: tokens.txt's token k reads column k - 1."""
    ids = {}
    for line in open(e / "graph" / "tokens.txt", encoding="utf-8"):
        tok, i = line.split()
        ids[int(i)] = tok
    width = max(i for i, t in ids.items() if not t.startswith("#"))
    return [ids.get(c + 1, f"<unused{c}>") for c in range(width)]


def test_from_lm_on_an_export_rebuilds_the_clis_graph_and_contexts_find_the_names(export, tmp_path):
    e, ids, arrays = export
    dec = ctxbench.CtcDecoder.from_lm(export_labels(e), e / "lm" / "G.arpa",
                                      lexicon=e / "lm" / "lexicon.txt", acoustic_scale=2.0,
                                      cache_dir=None)
    assert dec.graph_info["unspellable"] == ""
    # The same LM and lexicon as the CLI's TLG (plus the slot, unused without contexts): the
    # same words as `ctxbench decode` on the exported graph.
    want = dict(line.rstrip("\n").partition(" ")[::2] for line in open(e / "hyp" / "none.txt"))
    plain = dec.decode_batch(arrays, ids)
    assert [h.text for h in plain] == [want[u] for u in ids]
    # Each utterance's list phrases (the export's bias_utt.tsv) as contexts: the names'
    # error rate falls, the other words' does not rise by much.
    lists = {}
    for line in open(e / "bias_utt.tsv", encoding="utf-8"):
        u, _, phrases = line.rstrip("\n").partition("\t")
        lists[u] = phrases.split("|")
    biased = dec.decode_batch(arrays, ids, contexts=[lists.get(u) for u in ids])
    refs, ents = e / "data" / "text", e / "entities.txt"
    r0 = ctxbench.score(refs, {u: h.text for u, h in zip(ids, plain)}, entities=ents)
    r1 = ctxbench.score(refs, {u: h.text for u, h in zip(ids, biased)}, entities=ents)
    assert r1["ne_wer"] < r0["ne_wer"] - 2.0, (r0["ne_wer"], r1["ne_wer"])
    assert r1["u_wer"] < r0["u_wer"] + 2.0, (r0["u_wer"], r1["u_wer"])


def test_compiled_contexts_are_kept_across_calls_and_still_warn(lm):
    dec = ctxbench.CtcDecoder.from_lm(LABELS, lm, cache_dir=None)
    for _ in range(2):
        with pytest.warns(UserWarning, match="cannot spell: xyz"):
            hyps = dec.decode_batch([say("tac"), say("cat")], contexts=[["tac", "xyz"], ["tac", "xyz"]])
        assert [h.text for h in hyps] == ["tac", "cat"]

#!/usr/bin/env python3
"""Issue 55: pocketsphinx's general-English LM (`en-us.lm.bin`, binary trie) read by ctxbench
(`ctxbench lm from-sphinx`) against pocketsphinx's own scoring: every word of the given
sentences scored in its trigram context by pocketsphinx's `NGramModel.prob` (logmath units,
base 1.0001) and by the ARPA ctxbench wrote (the back-off rule by hand), with the largest
difference in log10.

    .venv-peers/bin/python scripts/sphinx_lm_check.py ARPA SENTENCES   (a Kaldi text file)
"""
import math
import os
import sys

import pocketsphinx as p

sys.path.insert(0, os.path.dirname(__file__))
import en_us_lm  # noqa: E402  (its ARPA reader)


def pocketsphinx_scores(sents):
    m = os.path.join(p.get_model_path(), "en-us", "en-us.lm.bin")
    config, lmath = p.Config(), p.LogMath(1.0001)  # kept alive with the model
    lm = p.NGramModel(config, lmath, m)
    log10 = math.log10(1.0001)
    # prob(words): the word, then its history, most recent first.
    return [[lm.prob([w] + s[max(0, i - 2):i][::-1]) * log10 for i, w in enumerate(s)]
            for s in sents]


def arpa_ngrams(path, need):
    """The ARPA's n-grams over the words in `need`: {words: (log10 p, log10 back-off)}."""
    return {tuple(ws): (lp, bo) for _, ws, lp, bo in en_us_lm.arpa_ngrams(path)
            if all(w in need for w in ws)}


def score(grams, w, hist):
    """log10 p(w | hist) by the back-off rule."""
    hist = tuple(hist)
    bo = 0.0
    while hist and hist + (w,) not in grams:
        bo += grams.get(hist, (0.0, 0.0))[1]
        hist = hist[1:]
    return bo + grams[hist + (w,)][0]


def main():
    arpa, text = sys.argv[1], sys.argv[2]
    sents = [line.split()[1:] for line in open(text, encoding="utf-8")]
    grams = arpa_ngrams(arpa, {w for s in sents for w in s})
    theirs = pocketsphinx_scores(sents)
    diffs = [abs(score(grams, w, s[max(0, i - 2):i]) - t)
             for s, ts in zip(sents, theirs) for i, (w, t) in enumerate(zip(s, ts))]
    print(f"{len(diffs)} words of {len(sents)} sentences scored in trigram context: "
          f"largest |ctxbench ARPA - pocketsphinx| = {max(diffs):.2e} log10")
    if max(diffs) > 1e-3:
        sys.exit("the converted LM disagrees with pocketsphinx")


if __name__ == "__main__":
    main()

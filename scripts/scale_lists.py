#!/usr/bin/env python3
"""Seeded phrase lists for the bias-scale experiment (issue 68), written to datasets/scale-lists/.

  scripts/scale_lists.py WORDS_TXT [OUT_DIR]

- invented-names-N.txt.gz: N invented company names (two to three syllables per word, one or two
  words, a common suffix on 60%) — out of any vocabulary: only open-vocabulary contexts can
  write them; they are the distractors a CRM or a radar feed adds to a stream's list.
- vocab-phrases-N.txt.gz: N phrases of one to three words drawn from WORDS_TXT (a graph's
  words.txt: the in-vocabulary methods — word, phrase, arc boosting — need words the graph has).

N = 1,000, 5,000 and 20,000; each smaller list is the first N lines of the larger one, so a
list's growth only adds phrases. Seeds are fixed: the files are reproducible byte for byte.
"""
import gzip
import random
import sys
from pathlib import Path

SIZES = [1000, 5000, 20000]
ONSETS = ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
          "br", "cr", "tr", "st", "pl", "gr", "qu", "sh", "th", "dr", "fl", "kl", "sk"]
NUCLEI = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y", "ar", "or", "en"]
CODAS = ["", "n", "r", "x", "s", "l", "m", "t", "nd", "rk", "st", "ve"]
SUFFIXES = ["inc", "holdings", "technologies", "capital", "systems", "group", "partners",
            "energy", "therapeutics", "bank", "labs", "networks"]


def invented(n):
    r = random.Random(68)
    word = lambda: "".join(r.choice(ONSETS) + r.choice(NUCLEI)
                           for _ in range(r.randint(2, 3))) + r.choice(CODAS)
    seen, out = set(), []
    while len(out) < n:
        name = [word() for _ in range(r.randint(1, 2))]
        if r.random() < 0.6:
            name.append(r.choice(SUFFIXES))
        p = " ".join(name)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def vocab_phrases(words_txt, n):
    words = sorted({l.split()[0] for l in open(words_txt, encoding="utf-8")
                    if l.strip() and l.split()[0].isalpha()})
    r = random.Random(6868)
    seen, out = set(), []
    while len(out) < n:
        p = " ".join(r.choice(words) for _ in range(r.randint(1, 3)))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def write(out_dir, stem, phrases):
    for k in SIZES:
        path = out_dir / f"{stem}-{k}.txt.gz"
        # mtime 0: the same bytes on every run.
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write("".join(p + "\n" for p in phrases[:k]).encode())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = Path(sys.argv[2] if len(sys.argv) > 2 else "datasets/scale-lists")
    out_dir.mkdir(parents=True, exist_ok=True)
    write(out_dir, "invented-names", invented(max(SIZES)))
    write(out_dir, "vocab-phrases", vocab_phrases(sys.argv[1], max(SIZES)))


if __name__ == "__main__":
    main()

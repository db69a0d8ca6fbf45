#!/usr/bin/env python3
"""Turn Earnings .nlp transcripts into LM training text: one sentence per line.

Tokens are lower-cased, <...> non-speech tags dropped, and sentences split after '.', '?' or '!'
in the punctuation column. Usage: nlp_sentences.py FILE_OR_DIR... > text.txt (.nlp or .nlp.gz).
"""
import gzip
import os
import sys


def files(args):
    for a in args:
        if os.path.isdir(a):
            for f in sorted(os.listdir(a)):
                if f.endswith(".nlp") or f.endswith(".nlp.gz"):
                    yield os.path.join(a, f)
        else:
            yield a


def main():
    out = sys.stdout
    for path in files(sys.argv[1:]):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        cols = lines[0].split("|")
        tok, punc = cols.index("token"), cols.index("punctuation")
        sent = []
        for line in lines[1:]:
            c = line.split("|")
            t = c[tok].strip().lower()
            if t and not (t.startswith("<") and t.endswith(">")):
                sent.append(t)
            if c[punc] in (".", "?", "!") and sent:
                out.write(" ".join(sent) + "\n")
                sent = []
        if sent:
            out.write(" ".join(sent) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compare the lengths of two decodes' hypotheses (Kaldi `text` files written by
`ctxbench decode --hyp-dir`): words in each, and the segments where the second has at least
more than N words fewer than the first (a search that stops early, such as a beam trapped after a
completed keyword).

    python3 scripts/hyp_lengths.py BASE/none.txt BIASED/none.txt [--shorter-by 20]

Prints one line per measure and the five segments that lost most, with the biased text's end.
Exits 1 with the file and line on a malformed line or a segment missing from either file.
"""
import argparse
import sys


def read_text(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            utt, _, words = line.partition(" ")
            if not utt:
                sys.exit(f"{path}:{n}: a line without a segment id")
            if utt in out:
                sys.exit(f"{path}:{n}: segment {utt} appears twice")
            out[utt] = words.split()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("other")
    ap.add_argument("--shorter-by", type=int, default=20)
    a = ap.parse_args()
    base, other = read_text(a.base), read_text(a.other)
    if set(base) != set(other):
        missing = sorted(set(base) ^ set(other))[:3]
        sys.exit(f"{a.base} and {a.other} hold different segments (e.g. {', '.join(missing)})")
    lost = sorted(((len(base[u]) - len(other[u]), u) for u in base), reverse=True)
    print(f"segments: {len(base)}")
    print(f"words: {sum(len(v) for v in base.values())} in {a.base}, "
          f"{sum(len(v) for v in other.values())} in {a.other}")
    print(f"segments more than {a.shorter_by} words shorter: "
          f"{sum(1 for d, _ in lost if d > a.shorter_by)}")
    for d, u in lost[:5]:
        print(f"  {u}: {d} fewer, ends '... {' '.join(other[u][-6:])}'")


if __name__ == "__main__":
    main()

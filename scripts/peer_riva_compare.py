#!/usr/bin/env python3
"""Compares riva-asrlib-decoder's 1-best (peer_riva.py: `utt word ...` lines) with ctxbench's
(`decode --hyp-dir`'s none.txt, the same format) utterance by utterance; prints one summary line
(identical / differing / missing on either side) and the first differences.

Usage: peer_riva_compare.py RIVA.txt OURS.txt LABEL
"""
import sys


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                out[parts[0]] = parts[1:]
    return out


def main():
    riva, ours, label = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
    same = [u for u in riva if u in ours and riva[u] == ours[u]]
    diff = [u for u in riva if u in ours and riva[u] != ours[u]]
    only_riva = [u for u in riva if u not in ours]
    only_ours = [u for u in ours if u not in riva]
    print(f"{label}: {len(same)} identical, {len(diff)} differ, {len(only_riva)} only riva, "
          f"{len(only_ours)} only ctxbench")
    for u in diff[:5]:
        print(f"  {u}\n    riva: {' '.join(riva[u])}\n    ours: {' '.join(ours[u])}")
    sys.exit(0 if not diff and not only_riva and not only_ours else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""KenLM's per-token queries for a full-vocabulary step, beside `ctxbench lm arrays` (004).

For `rows` LM states along a seeded walk from <s>, scores every label with KenLM's BaseScore,
one query per label (what a CPU LM offers), and prints label scores per second. Values are
compared with ctxbench's by `make peer-kenlm`. Usage: kenlm_query_peer.py LM.arpa [LABELS] [--rows N]
"""

import argparse
import gzip
import random
import sys
import time

import kenlm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lm")
    ap.add_argument("labels", nargs="?")
    ap.add_argument("--rows", type=int, default=20)
    a = ap.parse_args()
    model = kenlm.Model(a.lm)
    if a.labels:
        labels = []
        for line in open(a.labels, encoding="utf-8"):
            f = line.split()
            if f and f[0] not in ("<eps>", "<blk>") and not (f[0].startswith("#") and len(f[0]) > 1):
                labels.append(f[0])
    else:
        labels = []
        opener = gzip.open if a.lm.endswith(".gz") else open
        with opener(a.lm, "rt", encoding="utf-8") as fh:
            in1 = False
            for line in fh:
                if line.startswith("\\1-grams:"):
                    in1 = True
                    continue
                if in1:
                    if line.startswith("\\"):
                        break
                    f = line.split()
                    if len(f) >= 2 and f[1] not in ("<s>", "</s>"):
                        labels.append(f[1])
    rng = random.Random(0x1A77)
    state = kenlm.State()
    model.BeginSentenceWrite(state)
    out = kenlm.State()
    n, total, check = 0, 0.0, 0.0
    for _ in range(a.rows):
        t = time.perf_counter()
        for lab in labels:
            check += model.BaseScore(state, lab, out)
        total += time.perf_counter() - t
        n += len(labels)
        nxt = kenlm.State()
        model.BaseScore(state, labels[rng.randrange(len(labels))], nxt)
        state = nxt
    print(
        f"kenlm per-token queries: {len(labels)} labels x {a.rows} states: {total:.3f} s, "
        f"{n / total / 1e6:.2f} M label scores/s (checksum {check:.2f})"
    )


if __name__ == "__main__":
    sys.exit(main())

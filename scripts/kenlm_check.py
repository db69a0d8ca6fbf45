#!/usr/bin/env python3
"""Peer check: score a text with KenLM's Python module on an ARPA file written by ctxbench.

Prints the total log10 probability (with <s> and </s>), tokens and perplexity, for comparison with
`ctxbench lm ppl`. Usage: kenlm_check.py LM.arpa[.gz] TEXT. Needs `pip install kenlm` (the Makefile's
`peer-kenlm` target makes a venv for it); never needed by `make test` or `make reproduce`.
"""
import sys

import kenlm

model = kenlm.Model(sys.argv[1])
total, tokens = 0.0, 0
with open(sys.argv[2], encoding="utf-8") as fh:
    for line in fh:
        words = line.split()
        if not words:
            continue
        total += model.score(" ".join(words), bos=True, eos=True)
        tokens += len(words) + 1
print(f"kenlm: {tokens} tokens (incl. </s>): log10 p = {total:.2f}, perplexity = {10 ** (-total / tokens):.2f}")

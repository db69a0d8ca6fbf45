#!/usr/bin/env python3
"""Writes crates/ctx-graph/tests/fixtures/openfst/: a small HCLG-like graph written by OpenFst itself (through
kaldifst from PyPI, which links OpenFst 1.7), as a `vector` and as a `const` FST, with its
words.txt. The files are committed; rerun this script only to regenerate them:

    python3 -m venv /tmp/kf && /tmp/kf/bin/pip install kaldifst==1.8.3
    /tmp/kf/bin/python scripts/make_openfst_fixtures.py

The graph (input label k reads pdf k-1; outputs are words):
    0 -1:hello-> 1, 1 -1:eps-> 1, 1 -2:world-> 2, 2 -2:eps-> 2, 2 final
    0 -3:goodbye-> 3, 3 -3:eps-> 3, 3 -eps:eps/0.5-> 2
"""
import os
import kaldifst

out = os.path.join(os.path.dirname(__file__), "..", "crates", "ctx-graph", "tests", "fixtures", "openfst")
os.makedirs(out, exist_ok=True)
words = ["<eps>", "hello", "world", "goodbye", "#0", "<s>", "</s>"]
with open(os.path.join(out, "words.txt"), "w") as f:
    for i, w in enumerate(words):
        f.write(f"{w} {i}\n")
text = """0 1 1 1 0.25
1 1 1 0 0.1
1 2 2 2 0.5
2 2 2 0 0.1
0 3 3 3 1.0
3 3 3 0 0.1
3 2 0 0 0.5
2 0.75
"""
fst = kaldifst.compile(s=text, acceptor=False)
fst.write(os.path.join(out, "small.vector.fst"))
kaldifst.StdConstFst(fst).write(os.path.join(out, "small.const.fst"))
with open(os.path.join(out, "PROVENANCE.md"), "w") as f:
    f.write(
        "# OpenFst fixtures\n\n"
        "Written by `scripts/make_openfst_fixtures.py` with kaldifst "
        + kaldifst.__version__
        + " (PyPI; OpenFst inside), not by ctxbench, so the tests check compatibility with\n"
        "OpenFst's own writer: `small.vector.fst` (type vector) and `small.const.fst` (type const),\n"
        "standard arcs, and `words.txt`. The graph is drawn in the script's docstring.\n"
    )
print("wrote", out)

#!/usr/bin/env python3
"""Regenerates crates/ctx-core/tests/data/sphinx_lm/*.lm.bin.gz: each ARPA there converted to
pocketsphinx's binary trie format by pocketsphinx itself (PyPI's pocketsphinx, in .venv-peers).

    .venv-peers/bin/python scripts/sphinx_lm_fixtures.py
"""
import glob
import gzip
import os
import shutil
import sys
import tempfile

import pocketsphinx as p

D = os.path.join(os.path.dirname(__file__), "..", "crates", "ctx-core", "tests", "data", "sphinx_lm")


def main():
    config, lmath = p.Config(), p.LogMath(1.0001)  # kept alive with the model (see en_us_lm.py)
    for arpa in sorted(glob.glob(os.path.join(D, "*.arpa"))):
        if arpa.endswith(".pocketsphinx.arpa"):
            continue
        name = os.path.basename(arpa)[: -len(".arpa")]
        with tempfile.TemporaryDirectory() as t:
            b = os.path.join(t, name + ".lm.bin")
            p.NGramModel(config, lmath, arpa).write(b, p.NGramModel.str_to_type("bin"))
            with open(b, "rb") as src, gzip.GzipFile(os.path.join(D, name + ".lm.bin.gz"), "wb", 9, mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            if name == "small":
                back = p.NGramModel(config, lmath, b)
                back.write(os.path.join(D, "small.pocketsphinx.arpa"), p.NGramModel.str_to_type("arpa"))
        print(f"wrote {name}.lm.bin.gz", file=sys.stderr)


if __name__ == "__main__":
    main()

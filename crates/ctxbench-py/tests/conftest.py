"""Shared fixtures: the CLI (CTXBENCH_BIN, set by make python-test) and an exported quick set
decoded by it."""

import os
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("CTXBENCH_BIN", "target/ci/ctxbench")


def cli(*args):
    """Runs the CLI; its stdout."""
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def export(tmp_path_factory):
    """40 utterances of the ATCO2 quick set with a TLG graph, scores as .npy, the LM and
    lexicon the graph was built from, and the CLI's hypotheses (text and CTM) for them."""
    e = tmp_path_factory.mktemp("export")
    cli("export", "--dataset", "atco2-sim-1h", "--quick", "--kind", "tlg-normal",
        "--format", "npy", "--limit", "40", "--with-lm", "--out", str(e))
    cli("decode", "--registry", str(e / "datasets.toml"), "--dataset", "atco2-sim-1h-files",
        "--methods", "none", "--hyp-dir", str(e / "hyp"))
    ids = [line.split()[0] for line in open(e / "data" / "text")]
    arrays = [np.load(e / "scores" / f"{u}.npy") for u in ids]
    return e, ids, arrays



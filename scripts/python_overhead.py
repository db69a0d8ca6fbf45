"""The Python API's cost over the CLI's (issue 56): the same exported set decoded by
`ctxbench decode` (its RTFx: audio / search seconds; files read and CTC input checks outside
the clock) and by `CtcDecoder.decode_batch` in calls of 64 arrays: its RTFx as the CLI counts
it (`dec.timing`), and the clock around each call (the numpy copy, the input checks, the
search, the words spelled into Python objects). The overhead is that clock over the search and
checks inside it. Also checks both give the same text.

Usage: .venv-py/bin/python scripts/python_overhead.py [BIN]   (after `make python`)
"""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ctxbench

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/ci/ctxbench"
BATCH, REPEATS = 64, 3


def cli(e, threads, hyp_dir=None):
    args = [BIN, "decode", "--registry", str(e / "datasets.toml"), "--dataset",
            "atco2-sim-1h-files", "--methods", "none", "--threads", str(threads)]
    if hyp_dir:
        args += ["--hyp-dir", str(hyp_dir)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    row = next(l for l in out.splitlines() if l.startswith("| none"))
    return float(row.split("|")[11])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        e = Path(tmp)
        subprocess.run([BIN, "export", "--dataset", "atco2-sim-1h", "--kind", "tlg-normal",
                        "--format", "npy", "--out", str(e)], check=True, capture_output=True)
        ids = [l.split()[0] for l in open(e / "data" / "text")]
        audio = sum(float(l.split()[1]) for l in open(e / "data" / "utt2dur"))
        arrays = [np.load(e / "scores" / f"{u}.npy") for u in ids]
        scale = float(re.search(r"acoustic_scale = ([0-9.]+)", open(e / "datasets.toml").read())[1])
        cli(e, 1, e / "hyp")
        want = [l.rstrip("\n").partition(" ")[2] for l in open(e / "hyp" / "none.txt")]
        print(f"ATCO2-1h, {len(ids)} utterances, {audio:.0f} s of audio, TLG (tlg-normal), beam 15")
        print("| threads | CLI RTFx | Python RTFx (search, as the CLI) | Python wall RTFx | "
              "binding overhead (wall over search + checks) |")
        print("| --- | --- | --- | --- | --- |")
        for threads in (1, 2):
            dec = ctxbench.CtcDecoder(str(e / "graph" / "TLG.fst"), str(e / "graph" / "words.txt"),
                                      tokens=str(e / "graph" / "tokens.txt"),
                                      acoustic_scale=scale, threads=threads)
            best_cli, best = 0.0, None
            for _ in range(REPEATS):
                best_cli = max(best_cli, cli(e, threads))
                wall, search, checks, texts = 0.0, 0.0, 0.0, []
                for i in range(0, len(arrays), BATCH):
                    t = time.perf_counter()
                    hyps = dec.decode_batch(arrays[i:i + BATCH], ids[i:i + BATCH])
                    wall += time.perf_counter() - t
                    search += dec.timing["decode_s"]
                    checks += dec.timing["check_s"]
                    texts += [h.text for h in hyps]
                assert texts == want, "Python and CLI texts differ"
                if best is None or wall < best[0]:
                    best = (wall, search, checks)
            wall, search, checks = best
            print(f"| {threads} | {best_cli:.0f} | {audio / search:.0f} | {audio / wall:.0f} | "
                  f"{100 * (wall / (search + checks) - 1):.1f}% |")
        print("texts identical to the CLI's on every utterance")


if __name__ == "__main__":
    main()

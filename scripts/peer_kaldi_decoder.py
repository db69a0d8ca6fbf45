"""Kaldi's FasterDecoder (PyPI kaldi-decoder) beside ctxbench on an exported CTC set (issue 70).

Usage: peer_kaldi_decoder.py EXPORT OURS_HYP [--beam B] [--max-active N]

EXPORT is a `ctxbench export --kind tlg-normal --format npy` folder (graph/TLG.fst, words.txt,
scores/*.npy, datasets.toml with the model's acoustic scale); OURS_HYP the `none.txt` that
`ctxbench decode --registry EXPORT/datasets.toml --dataset <name>` wrote with its defaults. Kaldi
decodes each utterance whole with the scores times the acoustic scale (FasterDecoder has no
acoustic scale of its own) at the same beam and max-active; the script prints how many 1-best
word sequences are identical and exits 1 when any differs.
"""

import argparse
import glob
import os
import re
import sys

import kaldi_decoder as kd
import kaldifst
import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("export")
    ap.add_argument("ours")
    ap.add_argument("--beam", type=float, default=15.0)
    ap.add_argument("--max-active", type=int, default=7000)
    ap.add_argument("--min-active", type=int, default=0,
                    help="FasterDecoder's min_active (its default 20 keeps tokens past the beam; "
                         "ours has none)")
    ap.add_argument("--hyp-out", help="write Kaldi's 1-best here (utterance id, words)")
    a = ap.parse_args()
    reg = open(os.path.join(a.export, "datasets.toml")).read()
    m = re.search(r"^acoustic_scale = ([0-9.]+)", reg, re.M)
    if not m:
        sys.exit(f"{a.export}/datasets.toml: no acoustic_scale")
    scale = float(m.group(1))
    words = {}
    for line in open(os.path.join(a.export, "graph", "words.txt")):
        w, i = line.split()
        words[int(i)] = w
    ours = {}
    for line in open(a.ours):
        parts = line.split(maxsplit=1)
        if parts:
            ours[parts[0]] = parts[1].split() if len(parts) > 1 else []
    fst = kaldifst.StdVectorFst.read(os.path.join(a.export, "graph", "TLG.fst"))
    opts = kd.FasterDecoderOptions(beam=a.beam, max_active=a.max_active, min_active=a.min_active)
    dec = kd.FasterDecoder(fst, opts)
    same, total, first = 0, 0, None
    out = open(a.hyp_out, "w") if a.hyp_out else None
    for f in sorted(glob.glob(os.path.join(a.export, "scores", "*.npy"))):
        utt = os.path.basename(f)[: -len(".npy")]
        lp = np.ascontiguousarray(np.load(f).astype(np.float32) * scale)
        dec.decode(kd.DecodableCtc(lp, offset=0))
        ok, best = dec.get_best_path()
        if not ok:
            sys.exit(f"{utt}: FasterDecoder found no path")
        _, _, osyms, _ = kaldifst.get_linear_symbol_sequence(best)
        hyp = [words[o] for o in osyms if o != 0]
        if out:
            out.write(" ".join([utt] + hyp) + "\n")
        if utt not in ours:
            sys.exit(f"{a.ours}: no hypothesis for {utt}")
        total += 1
        if hyp == ours[utt]:
            same += 1
        elif first is None:
            first = f"{utt}: Kaldi '{' '.join(hyp)}', ours '{' '.join(ours[utt])}'"
    print(f"Kaldi FasterDecoder vs ctxbench defaults (beam {a.beam}, max-active {a.max_active}, "
          f"min-active {a.min_active}): "
          f"{same}/{total} identical 1-best word sequences")
    if first:
        print(f"first difference: {first}")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main())

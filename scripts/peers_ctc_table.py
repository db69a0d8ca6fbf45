#!/usr/bin/env python3
"""Writes results/peers-ctc/table.md from the hypotheses, timings and scores of peers_ctc.sh."""

import json
import os
import sys

ROWS = [
    ("ours-normal", "ctxbench ctc-wfst, TLG normal"),
    ("ours-compact", "ctxbench ctc-wfst, TLG compact"),
    ("flashlight", "flashlight-text LexiconDecoder + KenLM"),
    ("pyctcdecode", "pyctcdecode + KenLM"),
    ("ours-normal-boost", "ctxbench ctc-wfst, TLG normal, word boosting (list words, +6)"),
    ("pyctcdecode-hotwords", "pyctcdecode + KenLM, hotwords (list words, 6 / scale)"),
    (
        "ours-normal-open",
        "ctxbench ctc-wfst, TLG normal, open-vocabulary context (list phrases, weight 5, entry 4, pauses ≤ 1 s)",
    ),
]


def load(p):
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def main():
    root, e21_limit = sys.argv[1], sys.argv[2]
    out = ["# 001's CPU comparison on identical inputs: ctxbench against flashlight-text and pyctcdecode", ""]
    out.append(
        "Same exported log-probs (`ctxbench export --format npy --with-lm`: the calibrated simulated CTC\n"
        "model), the ARPA LM and BPE lexicon the TLG was built from, LM weight 1/acoustic scale (0.5 in\n"
        "natural-log units) for all, beam 15 in ctxbench's cost units (7.5 in log-probability units for\n"
        "the peers), flashlight and pyctcdecode with 32 hypotheses; one core each, offline, whole\n"
        "utterances; seconds of decoding only (no file reading). Every row is scored by `ctxbench score`.\n"
        f"Earnings-21: the first {e21_limit} utterances (calls in file order). Command: `make peers-ctc`.\n"
    )
    for ds in sorted(os.listdir(os.path.join(root, "hyp"))):
        d = os.path.join(root, "hyp", ds)
        out.append(f"## {ds}\n")
        out.append("| decoder | WER | NE-WER | U-WER | RTFx (1 core) | × flashlight |")
        out.append("|---|---|---|---|---|---|")
        rtfx = {}
        rows = []
        for key, label in ROWS:
            sp, tp = os.path.join(d, f"{key}.score.json"), os.path.join(d, f"{key}.json")
            if not (os.path.exists(sp) and os.path.exists(tp)):
                continue
            s, t = load(sp), load(tp)
            # ctxbench decode's JSON holds its figures per output (the peers' at the top).
            if "outputs" in t:
                t = t["outputs"][0]
            audio, secs = t["audio_s"], t["decode_s"]
            rtfx[key] = audio / max(secs, 1e-9)
            rows.append((key, label, s))
        for key, label, s in rows:
            f = lambda v: "-" if v is None else f"{v:.1f}"
            ratio = rtfx[key] / rtfx["flashlight"] if "flashlight" in rtfx else None
            out.append(
                f"| {label} | {f(s['wer'])} | {f(s['ne_wer'])} | {f(s['u_wer'])} | "
                f"{rtfx[key]:,.0f} | {'-' if ratio is None else f'{ratio:.2f}'} |"
            )
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()

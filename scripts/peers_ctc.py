#!/usr/bin/env python3
"""Peer CTC decoders on a `ctxbench export --format npy --with-lm` folder (001's comparison).

Decodes every utterance of the export, one core, with
  - flashlight-text's LexiconDecoder + KenLM (001's CPU baseline): the lexicon and ARPA the TLG was
    built from, the same LM weight as ctxbench (1 / acoustic scale, in natural-log units);
  - pyctcdecode (prefix beam search with KenLM and the LM's unigrams), optionally with hotwords:
    each utterance's own list words, weight = word boost / acoustic scale (ctxbench's boost in
    log-probability units).
Writes `<out>/<name>.txt` (Kaldi text) and `<out>/<name>.json` (seconds of decoding only, audio seconds,
settings). Scoring is left to `ctxbench score`, so every row is scored the same way.

Usage: peers_ctc.py EXPORT_DIR OUT_DIR [--beam-size N] [--beam F] [--hotword-boost F] [--limit N]
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            rows.append((n, parts))
    return rows


def load_export(d):
    """Utterance ids, column labels, lexicon, acoustic scale, per-utterance lists."""
    reg = open(os.path.join(d, "datasets.toml"), encoding="utf-8").read()
    scale, frame_s = None, 0.04
    for line in reg.splitlines():
        if line.startswith("acoustic_scale"):
            scale = float(line.split("=")[1])
        if line.startswith("frame_shift_s"):
            frame_s = float(line.split("=")[1])
    if scale is None:
        sys.exit(f"{d}/datasets.toml: no acoustic_scale")
    # tokens.txt: id 0 <eps>, 1 the blank (score column 0), k -> column k - 1.
    tokens = {}
    for n, p in read_table(os.path.join(d, "graph", "tokens.txt")):
        if len(p) != 2:
            sys.exit(f"{d}/graph/tokens.txt line {n}: expected `token id`")
        tokens[int(p[1])] = p[0]
    width = max(k for k in tokens if not tokens[k].startswith("#"))
    labels = [tokens.get(c + 1, f"<unused{c}>") for c in range(width)]
    if labels[0] != "<blk>":
        sys.exit(f"{d}/graph/tokens.txt: column 0 is {labels[0]!r}, not the blank <blk>")
    lexicon = {}
    for n, p in read_table(os.path.join(d, "lm", "lexicon.txt")):
        lexicon.setdefault(p[0], []).append(p[1:])
    utts = [(p[0], p[1:]) for _, p in read_table(os.path.join(d, "data", "text"))]
    lists = {}
    bias = os.path.join(d, "bias_utt.tsv")
    if os.path.exists(bias):
        with open(bias, encoding="utf-8") as f:
            for line in f:
                if "\t" in line:
                    u, phrases = line.rstrip("\n").split("\t", 1)
                    words = sorted({w for ph in phrases.split("|") for w in ph.split()})
                    lists[u] = words
    docs = os.path.join(d, "bias_docs")
    segments = os.path.join(d, "data", "segments")
    if os.path.isdir(docs) and os.path.exists(segments):
        for _, p in read_table(segments):
            f = os.path.join(docs, f"{p[1]}.txt")
            if os.path.exists(f):
                with open(f, encoding="utf-8") as fh:
                    lists[p[0]] = sorted({w for line in fh for w in line.split()})
    return utts, labels, lexicon, scale, lists, frame_s


def scores(d, utt):
    m = np.load(os.path.join(d, "scores", f"{utt}.npy")).astype(np.float32)
    return np.ascontiguousarray(m)


def flashlight(d, out, args):
    from flashlight.lib.text.decoder import (
        CriterionType,
        KenLM,
        LexiconDecoder,
        LexiconDecoderOptions,
        SmearingMode,
        Trie,
    )
    from flashlight.lib.text.dictionary import Dictionary, create_word_dict

    utts, labels, lexicon, scale, _, frame_s = load_export(d)
    tokens = Dictionary(labels)
    words = create_word_dict({"<unk>": [], **lexicon})
    lm = KenLM(os.path.join(d, "lm", "G.arpa"), words)
    blank = tokens.get_index("<blk>")
    trie = Trie(tokens.index_size(), blank)
    start = lm.start(False)
    for w, spellings in lexicon.items():
        wi = words.get_index(w)
        _, s = lm.score(start, wi)
        for sp in spellings:
            trie.insert([tokens.get_index(t) for t in sp], wi, s)
    trie.smear(SmearingMode.MAX)
    # ctxbench's cost is scale * (-log p) + G (natural log); flashlight maximises
    # log p + w * log10 P_LM: the same search with w = ln(10) / scale, beam = beam / scale.
    opts = LexiconDecoderOptions(
        beam_size=args.beam_size,
        beam_size_token=args.beam_size_token,
        beam_threshold=args.beam / scale if args.fl_beam is None else args.fl_beam,
        lm_weight=math.log(10.0) / scale if args.fl_lm_weight is None else args.fl_lm_weight,
        word_score=args.fl_word_score,
        unk_score=-math.inf,
        sil_score=0.0,
        log_add=False,
        criterion_type=CriterionType.CTC,
    )
    dec = LexiconDecoder(opts, trie, lm, blank, blank, words.get_index("<unk>"), [], False)
    hyps, secs, frames = [], 0.0, 0
    for utt, _ in utts[: args.limit]:
        m = scores(d, utt)
        t = time.perf_counter()
        r = dec.decode(m.ctypes.data, m.shape[0], m.shape[1])
        secs += time.perf_counter() - t
        frames += m.shape[0]
        best = [words.get_entry(i) for i in r[0].words if i >= 0] if r else []
        hyps.append((utt, best))
    write(out, args.fl_name, hyps, secs, frames * frame_s, vars(args) | {"lm_weight": opts.lm_weight})


def pyctc(d, out, args, hotwords):
    from pyctcdecode import build_ctcdecoder

    utts, labels, lexicon, scale, lists, frame_s = load_export(d)
    vocab = [""] + [
        ("⁇" if lab == "<unk>" else lab) for lab in labels[1:]
    ]  # "" = the blank for pyctcdecode
    unigrams = [w for w in lexicon if not w.startswith("<")]
    dec = build_ctcdecoder(
        vocab,
        kenlm_model_path=os.path.join(d, "lm", "G.arpa"),
        unigrams=unigrams,
        alpha=1.0 / scale,
        beta=0.0,
    )
    name = "pyctcdecode-hotwords" if hotwords else "pyctcdecode"
    hyps, secs, frames = [], 0.0, 0
    for utt, _ in utts[: args.limit]:
        m = scores(d, utt)
        hw = lists.get(utt, []) if hotwords else None
        t = time.perf_counter()
        text = dec.decode(
            m,
            beam_width=args.beam_size,
            beam_prune_logp=-args.beam / scale,
            hotwords=hw,
            hotword_weight=args.hotword_boost / scale,
        )
        secs += time.perf_counter() - t
        frames += m.shape[0]
        hyps.append((utt, text.split()))
    write(out, name, hyps, secs, frames * frame_s, vars(args))


def write(out, name, hyps, secs, audio_s, settings):
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, f"{name}.txt.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for utt, words in hyps:
            f.write(" ".join([utt] + words) + "\n")
    os.replace(tmp, os.path.join(out, f"{name}.txt"))
    info = {"decoder": name, "decode_s": secs, "audio_s": audio_s, "utterances": len(hyps)}
    info["settings"] = {k: v for k, v in settings.items() if k not in ("export", "out")}
    with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
    print(f"{name}: {len(hyps)} utterances, {audio_s:.0f} s audio, {secs:.2f} s decoding", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export")
    ap.add_argument("out")
    ap.add_argument("--beam-size", type=int, default=32)
    ap.add_argument("--beam-size-token", type=int, default=32)
    ap.add_argument("--beam", type=float, default=15.0, help="ctxbench's search beam (cost units)")
    ap.add_argument("--hotword-boost", type=float, default=6.0, help="ctxbench's word boost")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--fl-lm-weight", type=float, default=None, help="flashlight: instead of ln(10)/scale")
    ap.add_argument("--fl-word-score", type=float, default=0.0, help="flashlight: word insertion bonus")
    ap.add_argument("--fl-beam", type=float, default=None, help="flashlight: instead of beam/scale")
    ap.add_argument("--fl-name", default="flashlight", help="flashlight: output name")
    ap.add_argument("--only", default="flashlight,pyctcdecode,pyctcdecode-hotwords")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if "flashlight" in only:
        flashlight(args.export, args.out, args)
    if "pyctcdecode" in only:
        pyctc(args.export, args.out, args, False)
    if "pyctcdecode-hotwords" in only:
        pyctc(args.export, args.out, args, True)


if __name__ == "__main__":
    main()

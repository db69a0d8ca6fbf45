"""Issue 56's benchmark: ctxbench's Python API beside pyctcdecode and beside the CLI, on one
exported set (`ctxbench export --kind tlg-normal --format npy --with-lm`: the calibrated
simulated CTC model's log-probs, the ARPA LM and BPE lexicon its TLG was built from).

- pyctcdecode + KenLM (its prefix beam search, 32 hypotheses), without and with per-utterance
  hotwords (each utterance's list words at 6 / acoustic scale, as `make peers-ctc`), one
  `decode` call per utterance (its `decode_batch` takes one hotword list for a whole batch);
- `ctxbench.CtcDecoder.from_lm(labels, G.arpa, lexicon=...)` — the pyctcdecode habit: the TLG
  built from the labels and the LM (class slot included) — `decode_batch` in calls of 64,
  without and with per-utterance `contexts` (each utterance's list phrases, weight 5);
- `ctxbench.CtcDecoder` on the exported TLG beside `ctxbench decode` on the same files: the
  binding's own cost (wall clock of the calls over the search and input checks they report)
  as a share of the CLI's decode time.

One thread everywhere, whole utterances, beam 15 (7.5 in pyctcdecode's log-probability units).
Every row scored by `ctxbench.score` (the CLI's scorer). Writes a Markdown table to stdout.

Usage: .venv-peers/bin/python scripts/python_vs_pyctcdecode.py EXPORT_DIR [BIN]
"""

import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from peers_ctc import load_export  # noqa: E402  (the export's labels, lexicon, lists)

import ctxbench  # noqa: E402

BATCH, BEAM, BOOST, BEAM_SIZE = 64, 15.0, 6.0, 32


def phrase_lists(d):
    """Each utterance's list phrases (bias_utt.tsv: `utt<TAB>phrase|phrase…`)."""
    out = {}
    with open(os.path.join(d, "bias_utt.tsv"), encoding="utf-8") as f:
        for line in f:
            u, _, phrases = line.rstrip("\n").partition("\t")
            out[u] = [p for p in phrases.split("|") if p.strip()]
    return out


def score(d, hyps):
    r = ctxbench.score(os.path.join(d, "data", "text"), hyps,
                       entities=os.path.join(d, "entities.txt"))
    return r["wer"], r["ne_wer"], r["u_wer"]


def batches(ids, arrays):
    for i in range(0, len(ids), BATCH):
        yield ids[i:i + BATCH], arrays[i:i + BATCH]


def ours(dec, ids, arrays, lists=None):
    """Texts, wall seconds of the calls, and the search and check seconds they report (checks:
    the CTC input checks and the arrays' admission, outside the CLI's RTFx too)."""
    texts, wall, search, check = {}, 0.0, 0.0, 0.0
    for b_ids, b_arr in batches(ids, arrays):
        ctx = [lists.get(u) or None for u in b_ids] if lists else None
        t = time.perf_counter()
        hyps = dec.decode_batch(b_arr, b_ids, contexts=ctx)
        wall += time.perf_counter() - t
        search += dec.timing["decode_s"]
        check += dec.timing["check_s"] + dec.timing["inputs_s"]
        texts.update((u, h.text) for u, h in zip(b_ids, hyps))
    return texts, wall, search, check


def pyctc(d, labels, lexicon, scale, ids, arrays, lists):
    from pyctcdecode import build_ctcdecoder

    vocab = [""] + [("⁇" if lab == "<unk>" else lab) for lab in labels[1:]]
    dec = build_ctcdecoder(vocab, kenlm_model_path=os.path.join(d, "lm", "G.arpa"),
                           unigrams=[w for w in lexicon if not w.startswith("<")],
                           alpha=1.0 / scale, beta=0.0)
    texts, secs = {}, 0.0
    for u, m in zip(ids, arrays):
        t = time.perf_counter()
        texts[u] = " ".join(dec.decode(m, beam_width=BEAM_SIZE, beam_prune_logp=-BEAM / scale,
                                       hotwords=lists.get(u) if lists else None,
                                       hotword_weight=BOOST / scale).split())
        secs += time.perf_counter() - t
    return texts, secs


def cli(bin_, d):
    """The CLI's RTFx on the export (one thread, whole utterances)."""
    out = subprocess.run([bin_, "decode", "--registry", os.path.join(d, "datasets.toml"),
                          "--dataset", "atco2-sim-1h-files", "--methods", "none", "--threads", "1",
                          "--no-endpointing", "--beam", str(BEAM)],
                         check=True, capture_output=True, text=True).stdout
    row = next(line for line in out.splitlines() if line.startswith("| none"))
    return float(row.split("|")[11])


def main():
    d = sys.argv[1]
    bin_ = sys.argv[2] if len(sys.argv) > 2 else "target/release/ctxbench"
    utts, labels, lexicon, scale, word_lists, _ = load_export(d)
    ids = [u for u, _ in utts]
    arrays = [np.ascontiguousarray(np.load(os.path.join(d, "scores", f"{u}.npy")), dtype=np.float32)
              for u in ids]
    audio = sum(a.shape[0] for a in arrays) * 0.04
    phrases = phrase_lists(d)
    common = dict(acoustic_scale=scale, beam=BEAM, threads=1, endpointing=False)
    rows = []

    t = time.perf_counter()
    lm = ctxbench.CtcDecoder.from_lm(labels, os.path.join(d, "lm", "G.arpa"),
                                     lexicon=os.path.join(d, "lm", "lexicon.txt"), cache_dir=None,
                                     **common)
    build = time.perf_counter() - t
    for name, lists in (("", None), (", contexts (list phrases, weight 5)", phrases)):
        texts, wall, _, _ = ours(lm, ids, arrays, lists)
        rows.append((f"ctxbench Python, `CtcDecoder.from_lm`{name}", score(d, texts), audio / wall))
    for name, lists in (("", None), (", hotwords (list words, 6 / scale)", word_lists)):
        texts, secs = pyctc(d, labels, lexicon, scale, ids, arrays, lists)
        rows.append((f"pyctcdecode + KenLM{name}", score(d, texts), audio / secs))

    g = os.path.join(d, "graph")
    dec = ctxbench.CtcDecoder(os.path.join(g, "TLG.fst"), os.path.join(g, "words.txt"),
                              tokens=os.path.join(g, "tokens.txt"), **common)
    best = None
    for _ in range(3):
        texts, wall, search, check = ours(dec, ids, arrays)
        if best is None or wall < best[0]:
            best = (wall, search, check, texts)
    wall, search, check, texts = best
    rtfx_cli = max(cli(bin_, d) for _ in range(3))
    rows.append(("ctxbench Python, `CtcDecoder` on the exported TLG", score(d, texts), audio / wall))

    print(f"atco2-sim-1h: {len(ids)} utterances, {audio:.0f} s of audio; one thread; beam {BEAM:g}; "
          f"Python calls of {BATCH} arrays; TLG from labels + LM built in {build:.1f} s")
    print()
    print("| decoder | WER | NE-WER | U-WER | RTFx (wall, 1 thread) |")
    print("| --- | --- | --- | --- | --- |")
    for name, (w, ne, u), rtfx in rows:
        print(f"| {name} | {w:.1f} | {ne:.1f} | {u:.1f} | {rtfx:,.0f} |")
    print()
    cli_s = audio / rtfx_cli
    own = wall - search - check
    print(f"Binding cost on the exported TLG (best of 3): calls {wall:.3f} s = search {search:.3f} s "
          f"(RTFx {audio / search:,.0f}) + input checks and admission {check:.3f} s + the binding's "
          f"own {own:.3f} s; the CLI's decode time {cli_s:.3f} s (RTFx {rtfx_cli:,.0f}, best of 3; "
          f"its file reading and input checks outside it): the binding's own cost is "
          f"{100 * own / cli_s:.1f}% of it.")


if __name__ == "__main__":
    main()

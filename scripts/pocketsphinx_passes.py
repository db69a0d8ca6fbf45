#!/usr/bin/env python3
"""pocketsphinx 5.1.1's three search passes, one at a time, on a set's recordings and LM.

pocketsphinx decodes in up to three passes: a lexicon-tree Viterbi pass (`-lw`, 6.5), a flat
whole-word pass over the words the first found (`-fwdflat`, at `-fwdflatlw` 8.5), and a best
path through the resulting word lattice (`-bestpath`, at `-bestpathlw` 9.5). This prints the
WER of the tree pass alone, tree + flat, tree + lattice, and all three, so the weight a single
static-graph search should use can be read off (docs/methods.md, issue 55).

    .venv-peers/bin/python scripts/pocketsphinx_passes.py <text> <wav.scp> <lm.arpa> <lexicon.txt>
"""
import os
import sys
import wave

from pocketsphinx import Decoder, get_model_path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_pocketsphinx import edit_distance, pocketsphinx_dict, wav_path  # noqa: E402


def main():
    text, scp, arpa, lexicon = sys.argv[1:5]
    wavs = {}
    for line in open(scp):
        parts = line.split()
        if parts:
            wavs[parts[0]] = wav_path(os.path.dirname(scp), parts[1])
    refs = [(p[0], p[1:]) for p in (l.split() for l in open(text)) if p and p[0] in wavs]
    dic = pocketsphinx_dict(lexicon)
    hmm = os.path.join(get_model_path(), "en-us", "en-us")
    passes = [
        ("tree (-lw 6.5)", dict(fwdflat=False, bestpath=False)),
        ("tree + flat (-fwdflatlw 8.5)", dict(bestpath=False)),
        ("tree + lattice (-bestpathlw 9.5)", dict(fwdflat=False)),
        ("all three (the default)", {}),
    ]
    for name, kw in passes:
        d = Decoder(hmm=hmm, loglevel="FATAL", lm=arpa, dict=dic, **kw)
        errors = words = 0
        for utt, ref in refs:
            with wave.open(wavs[utt]) as w:
                data = w.readframes(w.getnframes())
            d.start_utt()
            d.process_raw(data, full_utt=True)
            d.end_utt()
            hyp = d.hyp().hypstr.split() if d.hyp() else []
            errors += edit_distance(ref, hyp)
            words += len(ref)
        print(f"{name}: WER {100.0 * errors / words:.2f} ({errors} errors, {words} words)")
    os.unlink(dic)


if __name__ == "__main__":
    main()

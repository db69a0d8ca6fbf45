#!/usr/bin/env python3
"""pocketsphinx 5.1.1 on the same recordings as ctxbench's real rows (issue 41's peer row).

Decodes every utterance of a Kaldi `text` whose recording a `wav.scp` lists (what a ctxbench
`kind = "audio"` dataset reads) with pocketsphinx itself, twice: with its own default English LM
and dictionary, and with the set's LM and lexicon (what ctxbench's graph is built from). Prints
WER and RTFx (wall time of pocketsphinx's front end, scoring and search, one thread) per run.
Reference words with `_` (a spelled code, `k_l_m`) count as their letters for the default LM.

    .venv-peers/bin/python scripts/peer_pocketsphinx.py <text> <wav.scp> <lm.arpa> <lexicon.txt> [hyp dir]

With a hyp dir, each run's hypotheses are written there as Kaldi `text` files (`default.txt`,
`same-lm.txt`) for `ctxbench score` and the runner's `peer` method, each with its timing
(`default.json`, `same-lm.json`: audio seconds and pocketsphinx's wall seconds), so the peer is a
row of the experiment tables (`make peer-sphinx` writes results/peers/pocketsphinx/).
"""
import json
import os
import sys
import tempfile
import time
import wave

from pocketsphinx import Decoder, get_model_path


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a):
        cur = [i + 1]
        for j, y in enumerate(b):
            cur.append(min(prev[j] + (x != y), prev[j + 1] + 1, cur[j] + 1))
        prev = cur
    return prev[-1]


def wav_path(data, path):
    """ctx-core's rule: as written when it exists from here, else relative to the data dir."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    return os.path.join(data, path)


def run(refs, wavs, out=None, **kw):
    hmm = os.path.join(get_model_path(), "en-us", "en-us")
    d = Decoder(hmm=hmm, loglevel="ERROR", **kw)
    errors = words = 0
    audio = secs = 0.0
    for utt, ref in refs:
        with wave.open(wavs[utt]) as w:
            data = w.readframes(w.getnframes())
            audio += w.getnframes() / w.getframerate()
        t0 = time.perf_counter()
        d.start_utt()
        d.process_raw(data, full_utt=True)
        d.end_utt()
        secs += time.perf_counter() - t0
        hyp = d.hyp().hypstr.split() if d.hyp() else []
        if out is not None:
            out.write(f"{utt} {' '.join(hyp)}\n")
        errors += edit_distance(ref, hyp)
        words += len(ref)
    if out is not None:
        out.close()
        hyps = out.name[: -len(".tmp")]
        os.replace(out.name, hyps)
        timing = hyps[: -len(".txt")] + ".json"
        with open(timing + ".tmp", "w") as t:
            json.dump({"audio_s": round(audio, 3), "wall_s": round(secs, 3)}, t)
            t.write("\n")
        os.replace(timing + ".tmp", timing)
    return 100.0 * errors / words, audio / secs, words


def pocketsphinx_dict(lexicon):
    """A temporary pocketsphinx dictionary of a Kaldi lexicon (`word phone ...`, a word's
    pronunciations on lines of their own); the caller removes it."""
    with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False) as f:
        seen = {}
        for line in open(lexicon):
            word, *phones = line.split()
            if phones:
                # pocketsphinx names a word's further pronunciations word(2), word(3), ...
                seen[word] = seen.get(word, 0) + 1
                name = word if seen[word] == 1 else f"{word}({seen[word]})"
                f.write(f"{name} {' '.join(phones)}\n")
        return f.name


def main():
    text, scp, arpa, lexicon = sys.argv[1:5]
    hyp_dir = sys.argv[5] if len(sys.argv) > 5 else None
    if hyp_dir:
        os.makedirs(hyp_dir, exist_ok=True)

    def hyp_file(name):
        # Written under .tmp and renamed when complete (run() does), never half-written.
        return open(os.path.join(hyp_dir, name + ".tmp"), "w") if hyp_dir else None

    wavs = {}
    for line in open(scp):
        parts = line.split()
        if parts:
            wavs[parts[0]] = wav_path(os.path.dirname(scp), parts[1])
    refs = []
    for line in open(text):
        parts = line.split()
        if parts and parts[0] in wavs:
            refs.append((parts[0], parts[1:]))
    spelled = [(u, [x for w in ws for x in (w.split("_") if "_" in w else [w])]) for u, ws in refs]
    out = hyp_file("default.txt")
    wer, rtfx, n = run(spelled, wavs, out)
    print(f"pocketsphinx, its default LM and dictionary: WER {wer:.1f} ({n} words), RTFx {rtfx:.0f}")
    dic = pocketsphinx_dict(lexicon)
    out = hyp_file("same-lm.txt")
    wer, rtfx, n = run(refs, wavs, out, lm=arpa, dict=dic)
    print(f"pocketsphinx, the set's LM and lexicon: WER {wer:.1f} ({n} words), RTFx {rtfx:.0f}")
    os.unlink(dic)


if __name__ == "__main__":
    main()

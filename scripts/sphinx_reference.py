#!/usr/bin/env python3
"""Reference dumps of pocketsphinx 5.1.1 for crates/sphinx-am's tests (issue 41).

For each WAV (16 kHz, mono, 16-bit): a fresh Decoder with the wheel's en-us model, `full_utt`
processing (batch CMN), `compallsen=True`, `pl_window=0`, dumping the cepstra before CMN
(`mfclogdir`) and every senone's score per frame (`senlogdir`). Written to OUT/<name>.mfc (as
pocketsphinx writes it: a big-endian int32 count, then big-endian floats) and OUT/<name>.sen.txt
(one line per frame: the best senone and the FNV-1a 64-bit hash of the frame's 5,126 scores as
little-endian int16, so the test checks every value without committing megabytes).

    python3 -m venv /tmp/psvenv && /tmp/psvenv/bin/pip install pocketsphinx==5.1.1
    /tmp/psvenv/bin/python scripts/sphinx_reference.py crates/sphinx-am/tests/data/reference \
        datasets/pocketsphinx-test/cards/*.wav
"""
import os
import shutil
import struct
import sys
import tempfile
import wave

from pocketsphinx import Decoder, get_model_path


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main() -> None:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    hmm = os.path.join(get_model_path(), "en-us", "en-us")
    for wav in sys.argv[2:]:
        name = os.path.splitext(os.path.basename(wav))[0]
        with wave.open(wav) as w:
            if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
                sys.exit(f"{wav}: not 16 kHz mono 16-bit")
            data = w.readframes(w.getnframes())
        tmp = tempfile.mkdtemp()
        mfc, sen = os.path.join(tmp, "mfc"), os.path.join(tmp, "sen")
        os.makedirs(mfc)
        os.makedirs(sen)
        # A fresh decoder per utterance: noise-removal state would carry over otherwise.
        d = Decoder(hmm=hmm, mfclogdir=mfc, senlogdir=sen, compallsen=True, pl_window=0,
                    loglevel="ERROR")
        d.start_utt()
        d.process_raw(data, full_utt=True)
        d.end_utt()
        (m,) = os.listdir(mfc)
        shutil.copy(os.path.join(mfc, m), os.path.join(out, name + ".mfc"))
        (s,) = os.listdir(sen)
        raw = open(os.path.join(sen, s), "rb").read()
        pos = raw.index(b"endhdr\n") + 7 + 4
        lines = []
        while pos < len(raw):
            (n,) = struct.unpack_from("<h", raw, pos)
            pos += 2
            scores = raw[pos:pos + 2 * n]
            pos += 2 * n
            vals = struct.unpack("<%dh" % n, scores)
            best = min(range(n), key=lambda i: (vals[i], i))
            lines.append(f"{best} {fnv1a64(scores):016x}")
        with open(os.path.join(out, name + ".sen.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        shutil.rmtree(tmp)
        hyp = d.hyp()
        print(name, len(lines), "frames;", hyp.hypstr if hyp else "")


if __name__ == "__main__":
    main()

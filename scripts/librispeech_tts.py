#!/usr/bin/env python3
"""The LibriSpeech biasing benchmark (Le et al. 2021) spoken by Festival (issue 55, item 4).

Reads the benchmark's reference file (`test-clean.biasing_100.tsv`: utt, text, the reference's
rare words, the per-utterance biasing list of 100) and writes a ctxbench `kind = "audio"` data
folder for every `--every`-th utterance (all with `--every 1`):

    <out>/ref.tsv             the benchmark's reference lines kept (`ctxbench score --format fbai`)
    <out>/data/text           Kaldi text
    <out>/data/wav.scp        <utt> ../wav/<utt>.wav
    <out>/entities.txt        utt<TAB>[BIASED] word|word   (the reference's rare words)
    <out>/lists.txt           utt<TAB>w|w|...              (its biasing_100 list)
    <out>/lexicon-lists.txt   a pronunciation for every list word, in the model's phones
    <out>/g2p.txt             the list words pronounced by Festival's letter-to-sound rules
    <out>/render.txt          utt<TAB>voice: who speaks each utterance
    <out>/published/*.txt     with --hyps: the published systems' hypotheses (real LibriSpeech
                              audio) of the utterances kept, as Kaldi text

Pronunciations come from pocketsphinx's own dictionary (cmudict-en-us.dict) when it has the
word, else from Festival's CMU lexicon and letter-to-sound rules (`lex.lookup`), its phones
mapped to the model's (ax → AH, axr → ER, stress dropped). The WAVs are rendered by
scripts/tts_render.sh, two voices alternating by speaker (cmu_us_slt_arctic_hts, a female HTS
voice; kal_diphone, a male diphone voice), 16 kHz.

    python3 scripts/librispeech_tts.py <ref.tsv[.gz]> <cmudict-en-us.dict> <out> [--every N] [--hyps DIR]
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

VOICES = ["cmu_us_slt_arctic_hts", "kal_diphone"]
# The published systems of Le et al. 2021 whose hypotheses are kept (test-clean, N = 100).
PUBLISHED = [
    ("rnnt-baseline", "test-clean.b1.rnnt_baseline.tsv"),
    ("deep-biasing-100", "test-clean.s1.b1+db-rnnt.biasing_100.tsv"),
    ("wfst-biasing-100", "test-clean.s2.b1+wfst.biasing_100.tsv"),
]
# Festival's CMU lexicon phone set → CMU Sphinx en-us's.
FEST = {"ax": "AH", "axr": "ER", "pau": None}


def read_ref(path):
    rows = []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                sys.exit(f"{path}:{n}: expected 4 tab-separated columns, got {len(parts)}")
            utt, text, rare, lst = parts
            rows.append((utt, text, json.loads(rare), json.loads(lst), line))
    return rows


def read_dict(path):
    d = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            w, *ph = line.split()
            if "(" in w:  # alternative pronunciations: the first is kept
                continue
            d.setdefault(w, ph)
    return d


def festival_g2p(words):
    """Pronunciations from Festival's lexicon + letter-to-sound rules, one call for all.
    Festival spells no apostrophe: `x's` is x's pronunciation with the possessive ending
    (IH Z after a sibilant, S after another voiceless consonant, else Z); any other apostrophe
    is dropped."""
    if not words:
        return {}
    stem = {}
    for w in words:
        base = w[:-2] if w.endswith("'s") else w
        stem[w] = base.replace("'", "")
    with tempfile.NamedTemporaryFile("w", suffix=".scm", delete=False) as f:
        f.write("(voice_kal_diphone)\n")
        for s in sorted(set(stem.values())):
            f.write(f'(format t "W\\t%s\\t%l\\n" "{s}" (lex.lookup "{s}" nil))\n')
        script = f.name
    try:
        out = subprocess.run(["festival", "-b", script], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(script)
    base_pron = {}
    for line in out.splitlines():
        if not line.startswith("W\t"):
            continue
        _, w, entry = line.split("\t", 2)
        # lex.lookup prints ("word" pos (((ph ph) stress) ((ph) stress))): the phones are the
        # bare symbols of the syllable lists after the part of speech.
        body = entry[entry.find("((") :] if "((" in entry else ""
        mapped = [FEST.get(p, p.upper()) for p in re.findall(r"[a-z]+", body)]
        mapped = [p for p in mapped if p]
        if mapped:
            base_pron[w] = mapped
    pron = {}
    for w, s in stem.items():
        ph = base_pron.get(s)
        if not ph:
            continue
        if w.endswith("'s"):
            last = ph[-1]
            ph = ph + (["IH", "Z"] if last in {"S", "Z", "SH", "ZH", "CH", "JH"} else ["S"] if last in {"P", "T", "K", "F", "TH"} else ["Z"])
        pron[w] = ph
    return pron


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("dict")
    ap.add_argument("out")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--no-render", action="store_true")
    ap.add_argument("--hyps", help="the benchmark's hyp/ folder (published systems)")
    a = ap.parse_args()
    rows = read_ref(a.ref)[:: a.every]
    cmu = read_dict(a.dict)
    phones = {p for ph in cmu.values() for p in ph}
    os.makedirs(os.path.join(a.out, "data"), exist_ok=True)
    list_words = sorted({w for r in rows for w in r[3]} | {w for r in rows for w in r[2]})
    missing = [w for w in list_words if w not in cmu]
    g2p = festival_g2p(missing)
    bad = [w for w in missing if w not in g2p or not set(g2p[w]) <= phones]
    if bad:
        sys.exit(f"librispeech_tts: no pronunciation in the model's phones for {bad[:10]}")

    def write(name, lines):
        path = os.path.join(a.out, name)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(lines)
        os.replace(path + ".tmp", path)

    write("ref.tsv", [r[4] for r in rows])
    write("data/text", [f"{u} {t}\n" for u, t, *_ in rows])
    write("data/wav.scp", [f"{u} ../wav/{u}.wav\n" for u, *_ in rows])
    write("entities.txt", [f"{u}\t" + "|".join(f"[BIASED] {w}" for w in rare) + "\n" for u, _, rare, *_ in rows])
    write("lists.txt", [f"{u}\t" + "|".join(lst) + "\n" for u, _, _, lst, _ in rows])
    write("lexicon-lists.txt", [f"{w} {' '.join(cmu.get(w) or g2p[w])}\n" for w in list_words])
    write("g2p.txt", [f"{w} {' '.join(g2p[w])}\n" for w in missing])
    if a.hyps:
        os.makedirs(os.path.join(a.out, "published"), exist_ok=True)
        keep = {r[0] for r in rows}
        for name, f in PUBLISHED:
            hyp = {}
            with open(os.path.join(a.hyps, f), encoding="utf-8") as h:
                for line in h:
                    u, _, t = line.rstrip("\n").partition("\t")
                    if u in keep:
                        hyp[u] = t
            missing_h = keep - hyp.keys()
            if missing_h:
                sys.exit(f"{f}: no hypothesis for {sorted(missing_h)[:5]}")
            write(f"published/{name}.txt", [f"{u} {hyp[u]}\n" for u, *_ in rows])
    speakers = sorted({u.split("-")[0] for u, *_ in rows})
    voice_of = {s: VOICES[i % len(VOICES)] for i, s in enumerate(speakers)}
    write("render.txt", [f"{u}\t{voice_of[u.split('-')[0]]}\n" for u, *_ in rows])
    print(
        f"librispeech_tts: {len(rows)} utterances, {len(list_words)} list words "
        f"({len(missing)} pronounced by Festival's letter-to-sound rules), {len(speakers)} speakers"
    )
    if a.no_render:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for v in VOICES:
        sel = [(u, t) for u, t, *_ in rows if voice_of[u.split("-")[0]] == v]
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.writelines(f"{u} {t}\n" for u, t in sel)
            text = f.name
        try:
            subprocess.run([os.path.join(here, "tts_render.sh"), text, os.path.join(a.out, "wav"), v], check=True)
        finally:
            os.unlink(text)


if __name__ == "__main__":
    main()

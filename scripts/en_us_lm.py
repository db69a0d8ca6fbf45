#!/usr/bin/env python3
"""pocketsphinx's general English LM as a pruned bigram ARPA our HCLG can hold (issue 41).

pocketsphinx 5.1.1 ships `en-us.lm.bin` (3-gram, 72,547 words, 2.05M bigrams, 1.67M trigrams)
in a binary trie. Its own converters fail on it: `sphinx_lm_convert` (Debian sphinxbase-utils)
stops at an assertion in the bigrams, and the Python API writes unigrams and bigrams correctly
(with `LogMath(1.0001)`) and then crashes in the trigrams. This script runs that conversion in a
child process, keeps the complete unigram and bigram sections (checked against the header's
counts; the crash loses the last few dozen bigrams, counted as pruned), and prunes them to a bigram LM:

- the vocabulary: the `--vocab` most probable words (plus `<s>`, `</s>`), unigrams renormalised
  over it;
- bigrams whose words are both kept and whose log10 probability is at least `--min-logp`;
- every history's back-off weight recomputed so that each P(. | h) sums to one over the kept
  vocabulary (the mass of dropped bigrams goes to the back-off).

It also writes `lexicon.txt` (pocketsphinx's `cmudict-en-us.dict` for the kept words, variants
`word(2)` as further pronunciations) and a `datasets.toml` with the `pocketsphinx-test-en-us`
audio entry: the ten real recordings of `datasets/pocketsphinx-test/` with this LM.

    .venv-peers/bin/python scripts/en_us_lm.py <repo root> <out dir> [--vocab N] [--min-logp X]
"""
import argparse
import math
import os
import subprocess
import sys

from pocketsphinx import get_model_path


def convert(raw):
    code = (
        "import pocketsphinx as p, os, sys\n"
        "m = os.path.join(p.get_model_path(), 'en-us', 'en-us.lm.bin')\n"
        # Config and LogMath must outlive the model (temporaries leave it reading freed
        # memory: garbage probabilities, differently on every run).
        "config = p.Config()\nlmath = p.LogMath(1.0001)\n"
        "lm = p.NGramModel(config, lmath, m)\n"
        "lm.write(sys.argv[1], p.NGramModel.str_to_type('arpa'))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, raw])
    print(f"en_us_lm: pocketsphinx's ARPA writer exited with {r.returncode} (it crashes in the trigrams)")


def read(raw):
    counts, uni, bi = {}, {}, []
    section = None
    with open(raw, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ngram "):
                n, c = line[6:].split("=")
                counts[int(n)] = int(c)
            elif line.startswith("\\1-grams:"):
                section = 1
            elif line.startswith("\\2-grams:"):
                section = 2
            elif line.startswith("\\3-grams:") or line.startswith("\\end"):
                break
            elif section and line.strip():
                parts = line.split("\t")
                if section == 1 and len(parts) >= 2:
                    uni[parts[1]] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else 0.0)
                elif section == 2 and len(parts) >= 3:
                    bi.append((parts[1], parts[2], float(parts[0])))
    # The crash loses the writer's last buffer: the final few dozen bigrams (of words late in
    # the alphabet). They count as pruned (the back-off weights are recomputed below); more
    # than 0.01% missing means the conversion went wrong earlier.
    if len(uni) != counts.get(1) or len(bi) < counts.get(2, 0) * 0.9999:
        sys.exit(f"en_us_lm: {raw}: {len(uni)} unigrams and {len(bi)} bigrams read, the header says "
                 f"{counts.get(1)} and {counts.get(2)}: the conversion stopped too early")
    bad = [w for w, (lp, bo) in uni.items() if not (-99.0 <= lp <= 0.0 and -99.0 <= bo <= 99.0)]
    if bad:
        sys.exit(f"en_us_lm: {raw}: {len(bad)} unigrams with impossible values (first: {bad[0]} {uni[bad[0]]})")
    print(f"en_us_lm: {len(bi)} of {counts[2]} bigrams read (the rest lost in the crash, treated as pruned)")
    return uni, bi


def arpa_ngrams(path):
    """Every n-gram of an ARPA file, in file order: (order, words, log10 p, log10 back-off)."""
    sec = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("\\") and line.endswith("-grams:"):
                sec = int(line[1:line.index("-")])
                continue
            if not line or line.startswith("\\") or sec == 0:
                continue
            parts = line.split("\t")
            yield sec, parts[1].split(), float(parts[0]), float(parts[2]) if len(parts) > 2 else 0.0


def read_full(path):
    """Every order of an ARPA written by `ctxbench lm from-sphinx` (the whole binary trie)."""
    uni, bi, tri = {}, [], []
    for n, ws, lp, bo in arpa_ngrams(path):
        if n == 1:
            uni[ws[0]] = (lp, bo)
        elif n == 2:
            bi.append((ws[0], ws[1], lp))
        elif n == 3:
            tri.append((ws[0], ws[1], ws[2], lp))
    print(f"en_us_lm: {path}: {len(uni)} unigrams, {len(bi)} bigrams, {len(tri)} trigrams")
    return uni, bi, tri


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=100000)
    ap.add_argument("--min-logp", type=float, default=-2.5)
    ap.add_argument("--from-arpa", help="the whole LM as ctxbench lm from-sphinx wrote it "
                    "(every order; default: pocketsphinx's own writer, bigrams only)")
    ap.add_argument("--trigrams", action="store_true",
                    help="keep trigrams too (log10 p >= --min-logp, history bigram kept; needs --from-arpa)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tri = []
    if a.from_arpa:
        uni, bi, tri = read_full(a.from_arpa)
    else:
        if a.trigrams:
            sys.exit("en_us_lm: --trigrams needs --from-arpa (pocketsphinx's writer crashes in them)")
        raw = os.path.join(a.out, "en-us.raw.arpa")
        convert(raw)
        uni, bi = read(raw)
        os.unlink(raw)
    words = sorted((w for w in uni if w not in ("<s>", "</s>")), key=lambda w: (-uni[w][0], w))
    vocab = set(words[: a.vocab]) | {"<s>", "</s>"}
    p1 = {w: 10 ** uni[w][0] for w in vocab if w != "<s>"}
    z = sum(p1.values())
    p1 = {w: p / z for w, p in p1.items()}
    kept = {}
    for h, w, lp in bi:
        if h in vocab and w in vocab and lp >= a.min_logp:
            kept.setdefault(h, []).append((w, lp))
    bow = {}
    for h, ws in kept.items():
        num = 1.0 - sum(10 ** lp for _, lp in ws)
        den = 1.0 - sum(p1.get(w, 0.0) for w, _ in ws)
        bow[h] = math.log10(max(num, 1e-9) / max(den, 1e-9))
    n2 = sum(len(v) for v in kept.values())
    # Trigrams whose history bigram is kept, and each such history's back-off recomputed so
    # that P(. | h1 h2) sums to one over the vocabulary: the mass of the kept trigrams against
    # what the pruned bigram model gives the same words.
    p2 = {(h, w): 10 ** lp for h, ws in kept.items() for w, lp in ws}
    kept3 = {}
    if a.trigrams:
        for h1, h2, w, lp in tri:
            if lp >= a.min_logp and (h1, h2) in p2 and w in vocab:
                kept3.setdefault((h1, h2), []).append((w, lp))
    bow2 = {}
    for (h1, h2), ws in kept3.items():
        num = 1.0 - sum(10 ** lp for _, lp in ws)
        den = 1.0 - sum(p2.get((h2, w), 10 ** bow.get(h2, 0.0) * p1.get(w, 0.0)) for w, _ in ws)
        bow2[(h1, h2)] = math.log10(max(num, 1e-9) / max(den, 1e-9))
    n3 = sum(len(v) for v in kept3.values())
    lm = os.path.join(a.out, "lm.arpa")
    with open(lm + ".tmp", "w") as f:
        f.write(f"\\data\\\nngram 1={len(vocab)}\nngram 2={n2}\n")
        if n3:
            f.write(f"ngram 3={n3}\n")
        f.write("\n\\1-grams:\n")
        for w in sorted(vocab):
            lp = -99.0 if w == "<s>" else math.log10(p1[w])
            f.write(f"{lp:.6f}\t{w}\t{bow.get(w, 0.0):.6f}\n")
        f.write("\n\\2-grams:\n")
        for h in sorted(kept):
            for w, lp in sorted(kept[h]):
                b = f"\t{bow2[(h, w)]:.6f}" if (h, w) in bow2 else ""
                f.write(f"{lp:.6f}\t{h} {w}{b}\n")
        if n3:
            f.write("\n\\3-grams:\n")
            for h in sorted(kept3):
                for w, lp in sorted(kept3[h]):
                    f.write(f"{lp:.6f}\t{h[0]} {h[1]} {w}\n")
        f.write("\n\\end\\\n")
    os.replace(lm + ".tmp", lm)  # never a half-written LM
    dic = os.path.join(get_model_path(), "en-us", "cmudict-en-us.dict")
    n_pron = 0
    lexicon = os.path.join(a.out, "lexicon.txt")
    with open(dic) as f, open(lexicon + ".tmp", "w") as o:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            word = parts[0].split("(")[0]
            if word in vocab:
                o.write(f"{word}\t{' '.join(parts[1:])}\n")
                n_pron += 1
    os.replace(lexicon + ".tmp", lexicon)
    root = os.path.abspath(a.root)
    out = os.path.abspath(a.out)
    reg = os.path.join(a.out, "datasets.toml")
    with open(reg + ".tmp", "w") as f:
        f.write(
            "# Written by scripts/en_us_lm.py: pocketsphinx's test recordings with its general English LM, pruned.\n"
            "[pocketsphinx-test-en-us]\nkind = \"audio\"\n"
            f"model = \"{root}/datasets/sphinx-en-us\"\ndata = \"{root}/datasets/pocketsphinx-test/data\"\n"
            f"lexicon = \"{out}/lexicon.txt\"\nlm = \"{out}/lm.arpa\"\n"
            "licence = \"BSD-2-Clause (pocketsphinx model, LM and dictionary)\"\n"
            f"description = \"10 real recordings, CMU Sphinx en-us, pocketsphinx's en-us LM as a {len(vocab) - 2}-word {'trigram' if n3 else 'bigram'} (log10 p >= {a.min_logp})\"\n"
        )
    os.replace(reg + ".tmp", reg)
    print(f"en_us_lm: {lm}: {len(vocab)} words, {n2} bigrams (of {len(bi)}), {n3} trigrams (of {len(tri)}), {n_pron} pronunciations")


if __name__ == "__main__":
    main()

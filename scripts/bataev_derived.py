#!/usr/bin/env python3
"""Derived figures of 004's tables from a bataev-table points.csv: per model and dataset the
relative WER reduction of greedy + NGPU-LM over greedy (WERR), the share of the greedy-to-beam +
LM gap it recovers, and the fusion overhead 1 - RTFx(greedy + NGPU-LM) / RTFx(greedy) for the
full-vocabulary and the pruned query (all from one run of the experiment).

Usage: scripts/bataev_derived.py results/bataev-table1/points.csv > results/bataev-table1/derived.md
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by[(r["dataset"], r["row"])] = r
datasets = sorted({r["dataset"] for r in rows})
models = []
for r in rows:
    m = r["row"].split(" ")[0]
    if m not in models:
        models.append(m)


def get(ds, row, col):
    r = by.get((ds, row))
    return float(r[col]) if r and r.get(col) else None


print("| model | dataset | greedy WER | + NGPU-LM | beam + LM | WERR % | gap recovered % "
      "| overhead full % | overhead pruned % |")
print("|---|---|---|---|---|---|---|---|---|")
for m in models:
    for ds in datasets:
        g = get(ds, f"{m} greedy", "wer")
        f = get(ds, f"{m} greedy + NGPU-LM", "wer")
        b = get(ds, f"{m} beam + LM", "wer")
        rg = get(ds, f"{m} greedy", "rtfx")
        rf = get(ds, f"{m} greedy + NGPU-LM", "rtfx")
        rp = get(ds, f"{m} greedy + NGPU-LM, pruned query", "rtfx")
        if None in (g, f):
            continue
        werr = 100 * (g - f) / g
        gap = f"{100 * (g - f) / (g - b):.0f}" if b is not None and g - b > 1e-9 else "-"
        full = f"{100 * (1 - rf / rg):.1f}" if rf and rg else "-"
        pruned = f"{100 * (1 - rp / rg):.1f}" if rp and rg else "-"
        bs = f"{b:.1f}" if b is not None else "-"
        print(f"| {m} | {ds} | {g:.1f} | {f:.1f} | {bs} | {werr:.1f} | {gap} | {full} | {pruned} |")

#!/usr/bin/env bash
# Time and peak memory of `ctxbench score` aligning one long utterance (the figures of
# docs/guide.md's scoring section): one line of N seeded random words, N = 30k, 60k, 120k, against
# itself, then against its words reversed (an unrelated hypothesis: the widest band).
# Usage: scripts/align_memory.sh [BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/ctxbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import random, sys
random.seed(1)
w = [f"w{random.randint(0, 5000)}" for _ in range(120000)]
for n in (30000, 60000, 120000):
    open(f"{sys.argv[1]}/al{n}", "w").write("u1 " + " ".join(w[:n]) + "\n")
    open(f"{sys.argv[1]}/rev{n}", "w").write("u1 " + " ".join(reversed(w[:n])) + "\n")
PY
for n in 30000 60000 120000; do
    /usr/bin/time -f "$n words, itself: %e s, peak %M KB" "$BIN" score --ref "$tmp/al$n" --hyp "$tmp/al$n" > /dev/null
done
for n in 30000 60000; do
    /usr/bin/time -f "$n words, reversed: %e s, peak %M KB" "$BIN" score --ref "$tmp/al$n" --hyp "$tmp/rev$n" > /dev/null
done

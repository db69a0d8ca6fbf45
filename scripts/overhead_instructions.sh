#!/usr/bin/env bash
# What biasing adds to decoding, counted in instructions instead of seconds: deterministic, so
# it shows differences of a percent that the shared machine's timing noise hides. Each variant
# of benches/overhead.rs runs once under callgrind (ONLY=..., ROUNDS=1) with collection limited
# to decode_utterance; a run with no variant (only the unbiased decode) is subtracted, so the
# figure is the variant's decode against the unbiased one. Needs valgrind (apt install valgrind);
# about 2 minutes per variant. Usage: scripts/overhead_instructions.sh ["variant text" ...]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt install valgrind)" >&2; exit 1; }
cargo bench -q -p ctxbench --bench overhead --no-run
bin=$(ls -t target/release/deps/overhead-* | grep -v '\.d$' | head -1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Instructions and simulated conditional-branch mispredictions of one run: "Ir Bcm".
count() {
  ONLY="$1" ROUNDS=1 valgrind --tool=callgrind --branch-sim=yes \
    --toggle-collect='*decode_utterance*' --callgrind-out-file="$out/cg.out" \
    "$bin" --bench >"$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
  awk '/Collected :/ {print $4, $6}' "$out/log"
}
if [ $# -eq 0 ]; then
  set -- "unbiased again" "Algorithm 1 arcs of" "lookups only" "worst case" "phrase automaton"
fi
read -r base_ir base_bcm < <(count "no such variant")
echo "unbiased decode: $base_ir instructions (the base each variant is compared to)"
echo
echo "| variant (ONLY=...) | instructions | simulated branch misses |"
echo "|---|---|---|"
for v in "$@"; do
  read -r ir bcm < <(count "$v")
  awk -v v="$v" -v ir="$ir" -v bcm="$bcm" -v bi="$base_ir" -v bb="$base_bcm" \
    'BEGIN { printf "| %s | %+.2f%% | %+.2f%% |\n", v, 100 * (ir - 2 * bi) / bi, 100 * (bcm - 2 * bb) / bb }'
done

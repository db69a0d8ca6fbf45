#!/usr/bin/env bash
# What biasing adds to decoding, counted in instructions instead of seconds: deterministic, so
# it shows differences of a percent that the shared machine's timing noise hides. Each variant
# of benches/overhead.rs runs once under callgrind (ONLY=..., ROUNDS=1) with collection limited
# to decode_utterance; a run with no variant (only the unbiased decode) is subtracted, so the
# figure is the variant's decode against the unbiased one. Needs valgrind (apt install valgrind);
# about 2 minutes per variant. Usage: scripts/overhead_instructions.sh ["variant text" ...]
# CACHE_SIM=1 also simulates the caches and adds a column of L1 misses (I1 + D1 read + write).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt install valgrind)" >&2; exit 1; }
cargo bench -q -p ctxbench --bench overhead --no-run
bin=$(ls -t target/release/deps/overhead-* | grep -v '\.d$' | head -1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cache=no
[ "${CACHE_SIM:-0}" = 1 ] && cache=yes
# Instructions, simulated conditional-branch mispredictions and L1 misses (0 without
# CACHE_SIM=1) of one run: "Ir Bcm L1m".
count() {
  ONLY="$1" ROUNDS=1 valgrind --tool=callgrind --branch-sim=yes --cache-sim=$cache \
    --toggle-collect='*decode_utterance*' --callgrind-out-file="$out/cg.out" \
    "$bin" --bench >"$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
  awk '/Events *:/ { for (i = 4; i <= NF; i++) col[$i] = i }
       /Collected :/ { l1 = 0; if ("D1mr" in col) l1 = $col["I1mr"] + $col["D1mr"] + $col["D1mw"];
                       print $col["Ir"], $col["Bcm"], l1 }' "$out/log"
}
if [ $# -eq 0 ]; then
  set -- "unbiased again" "Algorithm 1 arcs of" "lookups only" "worst case" "phrase automaton"
fi
read -r base_ir base_bcm base_l1 < <(count "no such variant")
echo "unbiased decode: $base_ir instructions (the base each variant is compared to)"
echo
echo "| variant (ONLY=...) | instructions | simulated branch misses | simulated L1 misses |"
echo "|---|---|---|---|"
for v in "$@"; do
  read -r ir bcm l1 < <(count "$v")
  awk -v v="$v" -v ir="$ir" -v bcm="$bcm" -v l1="$l1" -v bi="$base_ir" -v bb="$base_bcm" -v bl="$base_l1" \
    'BEGIN { c = bl > 0 ? sprintf("%+.2f%%", 100 * (l1 - 2 * bl) / bl) : "(CACHE_SIM=1)"
             printf "| %s | %+.2f%% | %+.2f%% | %s |\n", v, 100 * (ir - 2 * bi) / bi, 100 * (bcm - 2 * bb) / bb, c }'
done

#!/usr/bin/env bash
# Builds every dataset graph once (release) and prints sizes and times: the README's graph table.
# Usage: scripts/graph_sizes.sh [cache-dir]   (make graph-sizes)
set -euo pipefail
cache="${1:-cache/graphs-sizes}"
bin=target/release/ctxbench
for ds in atco2-sim-1h atco2-sim-4h earnings21; do
  for kind in hclg tlg-compact tlg-normal; do
    /usr/bin/time -f "peak memory %M KB" "$bin" graph build --dataset "$ds" --kind "$kind" --cache "$cache" 2>&1 | tail -2
  done
done

#!/usr/bin/env bash
# 002 Table 2 (chen18-table2): decoder-only speed, lattices on, CPU 1 and 2 threads measured
# here, GPU rows from the committed GPU runs (results/gpu/*/throughput.csv, made by
# scripts/gpu_run.sh on a GPU machine). Without one the table says so instead of leaving the
# rows out. Writes results/chen18-table2/points.csv and table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/ctxbench}
out=results/chen18-table2
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" throughput --backend cpu --threads 1 --streams 1,16,128 --csv "$tmp/points.csv" >&2
"$BIN" throughput --backend cpu --threads 2 --streams 128 --csv "$tmp/points.csv" >&2
gpu_rows=0
for f in results/gpu/*/throughput.csv; do
    [ -f "$f" ] || continue
    grep ',cuda,' "$f" | sed "s|\$|,$(dirname "$f" | xargs basename)|" >> "$tmp/gpu.csv" || true
done
[ -f "$tmp/gpu.csv" ] && gpu_rows=$(wc -l < "$tmp/gpu.csv")
# One core's RTFx (CPU, 1 thread, 128 streams) is the speed-up's unit, as in 002 and 001.
base=$(awk -F, '$3 == "cpu" && $5 == 1 && $6 == 128 { print $9 }' "$tmp/points.csv")
{
    head -1 "$tmp/points.csv" | sed 's/$/,run/'
    tail -n +2 "$tmp/points.csv" | sed "s/\$/,$(date -u +%Y-%m-%d)-this-machine/"
    [ "$gpu_rows" -gt 0 ] && cat "$tmp/gpu.csv"
} > "$out/points.csv.tmp"
mv "$out/points.csv.tmp" "$out/points.csv"
{
    echo "# 002 Table 2 — decoder speed against concurrent streams, CPU and GPU"
    echo
    echo "Decoder only (scores precomputed), lattices recorded, quick ATCO2-1h set cycled to N"
    echo "streams, each decoded offline as one segment. Speed-up: RTFx over one CPU core's at 128"
    echo "streams ($base). 002 reports 9.7x (lattice decoder, one sequence) and 34x (8 sequences,"
    echo "MPS) over its CPU baseline; 001 47-67x per GPU over one core."
    echo
    echo "Command: \`scripts/chen18_table2.sh\` (CPU rows here; GPU rows from results/gpu/)."
    echo
    echo "| backend | device | threads | streams | RTFx | frames/s | speed-up | arcs/s | measured |"
    echo "|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$out/points.csv" | awk -F, -v base="$base" '{
        gsub(/"/, "", $4);
        printf "| %s | %s | %s | %s | %.0f | %.0f | %.1fx | %s | %s |\n", $3, $4, $5, $6, $9, $10, $9 / base, $11, $14 }'
    if [ "$gpu_rows" -eq 0 ]; then
        echo "| cuda | - | - | 1, 16, 128, 512, 2048 | awaiting a GPU run | | | | see results/gpu/README.md |"
    fi
} > "$out/table.md.tmp"
mv "$out/table.md.tmp" "$out/table.md"
cat "$out/table.md"

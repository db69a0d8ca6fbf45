#!/usr/bin/env bash
# 002 Table 2 (chen18-table2): decoder-only speed, lattices on, CPU 1 and 2 threads measured
# here, GPU rows from the committed GPU runs (results/gpu/*/throughput.csv, made by
# scripts/gpu_run.sh on a GPU machine, with that machine's own CPU rows). Without one the
# table says so instead of leaving the rows out. A row's speed-up is over one core of the
# machine that measured it (its run's CPU row at 1 thread and 128 streams): the GPU machine's
# cores are not this one's. Writes results/chen18-table2/points.csv and table.md.
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
cols=$(head -1 "$tmp/points.csv" | awk -F, '{ print NF }')
for f in results/gpu/*/throughput.csv; do
    [ -f "$f" ] || continue
    # Every row of the run, CPU and GPU, padded to this throughput's columns (older runs have
    # no step/host columns), the run's name last.
    run=$(dirname "$f" | xargs basename)
    tail -n +2 "$f" | awk -F, -v n="$cols" -v run="$run" \
        '{ for (i = NF; i < n; i++) $0 = $0 ","; print $0 "," run }' >> "$tmp/gpu.csv" || true
done
[ -f "$tmp/gpu.csv" ] && gpu_rows=$(grep -c ',cuda,' "$tmp/gpu.csv" || true)
# One core's RTFx (CPU, 1 thread, 128 streams) is the speed-up's unit, as in 002 and 001.
base=$(awk -F, '$3 == "cpu" && $5 == 1 && $6 == 128 { print $9 }' "$tmp/points.csv")
{
    head -1 "$tmp/points.csv" | sed 's/$/,run/'
    tail -n +2 "$tmp/points.csv" | sed "s/\$/,$(date -u +%Y-%m-%d)-this-machine/"
    if [ -f "$tmp/gpu.csv" ]; then cat "$tmp/gpu.csv"; fi
} > "$out/points.csv.tmp"
mv "$out/points.csv.tmp" "$out/points.csv"
{
    echo "# 002 Table 2 — decoder speed against concurrent streams, CPU and GPU"
    echo
    echo "Decoder only (scores precomputed), lattices recorded, quick ATCO2-1h set cycled to N"
    echo "streams, each decoded offline as one segment. Speed-up: RTFx over one CPU core's at 128"
    echo "streams: $base here, each GPU run's own CPU row for its rows). 002 reports 9.7x (lattice decoder, one sequence) and 34x (8 sequences,"
    echo "MPS) over its CPU baseline; 001 47-67x per GPU over one core."
    echo
    echo "Command: \`scripts/chen18_table2.sh\` (CPU rows here; GPU rows from results/gpu/)."
    echo
    echo "| backend | device | threads | streams | RTFx | frames/s | speed-up | arcs/s | measured |"
    echo "|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$out/points.csv" | awk -F, '
        { row[NR] = $0; if ($3 == "cpu" && $5 == 1 && $6 == 128) base[$NF] = $9 }
        END { for (i = 1; i <= NR; i++) { $0 = row[i]; gsub(/"/, "", $4);
            b = base[$NF]; up = b > 0 ? sprintf("%.1fx", $9 / b) : "-";
            printf "| %s | %s | %s | %s | %.0f | %.0f | %s | %s | %s |\n", $3, $4, $5, $6, $9, $10, up, $11, $NF } }'
    if [ "$gpu_rows" -eq 0 ]; then
        echo "| cuda | - | - | 1, 16, 128, 512, 2048 | awaiting a GPU run | | | | see results/gpu/README.md |"
    fi
} > "$out/table.md.tmp"
mv "$out/table.md.tmp" "$out/table.md"
cat "$out/table.md"

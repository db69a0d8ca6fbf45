#!/usr/bin/env bash
# Runs on a GPU machine from the repository root (gpu-bundle/ made by scripts/gpu_bundle.sh):
# device facts, the parity tests on the GPU, quick-set decodes on cuda vs cpu (byte-identical
# hypotheses, twice for determinism), and the throughput table. Everything goes to $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
B=gpu-bundle/bin
# NVRTC from the machine's CUDA toolkit (the binaries load it by soname).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "code: $(cat gpu-bundle/code-version)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} > "$OUT/device.txt" 2>&1
# Parity and discovery tests (the GPU is used when one answers).
for t in "$B"/test-*; do
    echo "== $t" >> "$OUT/tests.log"
    "$t" --test-threads 1 >> "$OUT/tests.log" 2>&1; echo "exit $?" >> "$OUT/tests.log"
done
# Quick-set parity through the CLI: cpu, then cuda twice.
for ds in atco2-sim-1h atco2-sim-4h earnings21; do
    for b in cpu cuda cuda2; do
        be=${b%2}
        "$B/ctxbench" decode --dataset "$ds" --quick --backend "$be" --methods none,sequences \
            --hyp-dir "/tmp/hyp-$ds-$b" >> "$OUT/decode.log" 2>&1
    done
    for f in none sequences; do
        a="/tmp/hyp-$ds-cpu/$f.txt" b="/tmp/hyp-$ds-cuda/$f.txt" c="/tmp/hyp-$ds-cuda2/$f.txt"
        if [ ! -f "$a" ] || [ ! -f "$b" ] || [ ! -f "$c" ]; then
            echo "$ds $f: MISSING (a decode failed, see decode.log)"
            continue
        fi
        cmp -s "$a" "$b" && echo "$ds $f: cuda == cpu" || echo "$ds $f: DIFFER"
        cmp -s "$b" "$c" && echo "$ds $f: cuda run 1 == run 2" || echo "$ds $f: NOT DETERMINISTIC"
    done >> "$OUT/parity.txt"
done
# Throughput (002 Table 2): CPU 1 and 2 threads, GPU at growing batches.
"$B/ctxbench" throughput --backend cpu --threads 1 --streams 1,16,128 --csv "$OUT/throughput.csv" >> "$OUT/throughput.log" 2>&1
"$B/ctxbench" throughput --backend cpu --threads 2 --streams 128 --csv "$OUT/throughput.csv" >> "$OUT/throughput.log" 2>&1
"$B/ctxbench" throughput --backend cuda --streams 1,16,128,512,2048 --csv "$OUT/throughput.csv" >> "$OUT/throughput.log" 2>&1
# NGPU-LM batched full-vocabulary queries (004): the Earnings-22 trigram, CPU then GPU.
if [ -f gpu-bundle/lm.arpa.gz ]; then
    for bs in 32 256 2048; do
        "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cuda --batch "$bs" --steps 50 \
            --json "$OUT/ngpu-lm-cuda-b$bs.json" >> "$OUT/ngpu-lm.txt" 2>&1
    done
    "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cpu --threads 16 --batch 256 --steps 20 \
        >> "$OUT/ngpu-lm.txt" 2>&1
fi
# 000 on the device (hclg-boost): Table 1's GPU-method rows (quick sets), the speed ratio with
# 1,000 boosted phrases per stream, the load simulation (clients at real-time pace).
for e in nigmatulina23-table1 nigmatulina23-speed nigmatulina23-load; do
    q=""; [ "$e" = nigmatulina23-table1 ] && q="--quick"
    "$B/ctxbench" run "experiments/$e.toml" $q --set backend=cuda --set threads=16 \
        --out "$OUT/runs" --cache /tmp/ctx-cache >> "$OUT/hclg-boost.log" 2>&1
done
echo done >> "$OUT/device.txt"

#!/usr/bin/env bash
# Runs on a GPU machine from the repository root (gpu-bundle/ made by scripts/gpu_bundle.sh).
# Everything goes to $OUT. Usage: bash gpu-bundle/gpu_run.sh [PHASE ...] (default: all), with
# phases
#   tests       the parity and discovery test binaries on the GPU (tests.log)
#   parity      quick-set decodes, cpu vs cuda, cuda twice (parity.txt, decode.log)
#   throughput  002 Table 2 (HCLG) and 001 Tables 2-3 (compact TLG) decoder throughput
#   lm          NGPU-LM batched queries (when the bundle holds the Earnings-22 LM)
#   hclg        000 on the device: Table 1 (quick), speed ratio
#   chen18      002 Table 1 on the device: lattice density, WER, OWER, CPU row against CUDA row
#   load        000's load simulation on the device
#   fusion      004 greedy fusion with the LM's queries on the device (bataev-device)
#   ctc-stream  001 Table 4: the CTC decoder's streaming channels on the device
#   open-vocab  issue 42: open-vocabulary contexts, cuda vs cpu, and their speed rows
#   riva        issue 54: riva-asrlib-decoder (the bundle's wheel) against ctxbench on the same
#               exported TLG and log-probs: identical 1-best, RTFx with scores resident
#   profile     Nsight Compute on the frame step at 512 streams (ncu-decoder.csv)
#   sanitize    compute-sanitizer memcheck on a short cuda decode (sanitizer.log)
# The device tool stops a command after 10 minutes: run the phases over several calls (each
# phase's wall time goes to phases.txt, and every long command has its own time limit, so one
# slow phase cannot take the rest of a call with it). It brings back at most 8 files: the
# outputs end as $OUT/gpu-results-<phases>.tar.gz beside device.txt, phases.txt, parity.txt.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
# The binaries travel as gpu-bundle/bin.tar.xz (gpu_bundle.sh); unpacked once per machine.
B=/tmp/gpu-bundle-bin/bin
sum=$(cksum < gpu-bundle/bin.tar.xz)
if [ "$sum" != "$(cat /tmp/gpu-bundle-bin/archive.cksum 2>/dev/null)" ]; then
    rm -rf /tmp/gpu-bundle-bin && mkdir -p /tmp/gpu-bundle-bin
    if command -v xz > /dev/null; then
        xz -dc gpu-bundle/bin.tar.xz | tar -C /tmp/gpu-bundle-bin -xf -
    else
        python3 -c 'import tarfile; tarfile.open("gpu-bundle/bin.tar.xz").extractall("/tmp/gpu-bundle-bin")'
    fi
    echo "$sum" > /tmp/gpu-bundle-bin/archive.cksum
fi
CACHE=/tmp/ctx-cache
# NVRTC from the machine's CUDA toolkit (the binaries load it by soname).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "code: $(cat gpu-bundle/code-version)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} > "$OUT/device.txt" 2>&1

# The call's budget (the device tool stops a command at 600 s; the archive at the end must be
# written before that): no command starts, or runs, past BUDGET_S seconds of this script.
BUDGET_S=${BUDGET_S:-540}

# `lim SECONDS LOG cmd...`: runs cmd with a time limit (cut to what is left of the call's
# budget), output appended to LOG, a timeout or a skip noted.
lim() {
    local s=$1 log=$2
    shift 2
    local left=$((BUDGET_S - SECONDS))
    if [ "$left" -le 5 ]; then
        echo "SKIPPED (the call's ${BUDGET_S}s budget is spent): $*" >> "$log"
        return 0
    fi
    [ "$s" -gt "$left" ] && s=$left
    timeout "$s" "$@" >> "$log" 2>&1
    local rc=$?
    if [ $rc -eq 124 ]; then
        echo "TIMED OUT after ${s}s: $*" >> "$log"
    elif [ $rc -ne 0 ]; then
        echo "EXIT $rc: $*" >> "$log"
    fi
    return 0
}

phase_tests() {
    # The binaries run side by side (16 cores; each one's tests one at a time, as on CI), each
    # into its own log, then gathered into tests.log in a fixed order.
    local t
    for t in "$B"/test-*; do
        ( lim 300 "$OUT/tests-$(basename "$t").part" "$t" --test-threads 1 ) &
    done
    wait
    for t in "$B"/test-*; do
        echo "== $t" >> "$OUT/tests.log"
        cat "$OUT/tests-$(basename "$t").part" >> "$OUT/tests.log"
        rm -f "$OUT/tests-$(basename "$t").part"
    done
    # Each binary's verdict ("test result: ok/FAILED") is in tests.log.
}

# `same3 WHAT CPU CUDA CUDA2`: the cpu file against the first cuda run's, and the two cuda runs.
same3() {
    if [ ! -f "$2" ] || [ ! -f "$3" ] || [ ! -f "$4" ]; then
        echo "$1: MISSING (a decode failed, see decode.log)"
        return
    fi
    cmp -s "$2" "$3" && echo "$1: cuda == cpu" || echo "$1: DIFFER"
    cmp -s "$3" "$4" && echo "$1: cuda run 1 == run 2" || echo "$1: NOT DETERMINISTIC"
}

parity_one() {
    local ds=$1 b be f
    for b in cpu cuda cuda2; do
        be=${b%2}
        lim 240 "$OUT/decode-$ds.part" "$B/ctxbench" decode --dataset "$ds" --quick --backend "$be" \
            --methods none,sequences --cache "$CACHE" --hyp-dir "/tmp/hyp-$ds-$b" \
            --lattice-out "/tmp/lat-$ds-$b.txt"
    done
    # The baseline decode's lattices (Kaldi text) and each method's hypotheses, byte for byte.
    {
        same3 "$ds lattices" "/tmp/lat-$ds-cpu.txt" "/tmp/lat-$ds-cuda.txt" "/tmp/lat-$ds-cuda2.txt"
        for f in none sequences; do
            same3 "$ds $f" "/tmp/hyp-$ds-cpu/$f.txt" "/tmp/hyp-$ds-cuda/$f.txt" "/tmp/hyp-$ds-cuda2/$f.txt"
        done
    } > "$OUT/parity-$ds.part"
}

phase_parity() {
    # The three sets side by side (each builds its own graph on first use: Earnings-21's HCLG
    # takes ~90 s on one core), then gathered in a fixed order.
    local ds
    for ds in atco2-sim-1h atco2-sim-4h earnings21; do
        parity_one "$ds" &
    done
    wait
    for ds in atco2-sim-1h atco2-sim-4h earnings21; do
        cat "$OUT/decode-$ds.part" >> "$OUT/decode.log"
        cat "$OUT/parity-$ds.part" >> "$OUT/parity.txt"
        rm -f "$OUT/decode-$ds.part" "$OUT/parity-$ds.part"
    done
}

phase_throughput() {
    local T="$OUT/throughput.log"
    # 002 Table 2 (HCLG): CPU 1 and 2 threads, GPU at growing batches.
    lim 120 "$T" "$B/ctxbench" throughput --cache "$CACHE" --backend cpu --threads 1 --streams 1,16,128 --csv "$OUT/throughput.csv"
    lim 60 "$T" "$B/ctxbench" throughput --cache "$CACHE" --backend cpu --threads 2 --streams 128 --csv "$OUT/throughput.csv"
    # The device's host share (each stream's frame committed: lattice, traces, endpoints) on
    # one host thread, then on the machine's 16 (step ms and host ms columns: where a step goes).
    lim 60 "$T" "$B/ctxbench" throughput --cache "$CACHE" --backend cuda --threads 1 --streams 512 --csv "$OUT/throughput.csv"
    lim 180 "$T" "$B/ctxbench" throughput --cache "$CACHE" --backend cuda --threads 16 --streams 1,16,128,512,2048 --csv "$OUT/throughput.csv"
    # 001 Tables 2-3 (CTC WFST, compact TLG): one CPU thread, then the GPU at growing batches.
    lim 60 "$T" "$B/ctxbench" throughput --cache "$CACHE" --kind tlg-compact --backend cpu --threads 1 --streams 128 --csv "$OUT/throughput-ctc.csv"
    lim 120 "$T" "$B/ctxbench" throughput --cache "$CACHE" --kind tlg-compact --backend cuda --threads 16 --streams 64,256,1024,2048 --csv "$OUT/throughput-ctc.csv"
}

phase_lm() {
    # NGPU-LM batched full-vocabulary queries (004): the Earnings-22 trigram, GPU then CPU.
    [ -f gpu-bundle/lm.arpa.gz ] || { echo "no gpu-bundle/lm.arpa.gz (run make lm-earnings22 before make gpu-bundle)" >> "$OUT/ngpu-lm.txt"; return; }
    for bs in 32 256 2048; do
        lim 120 "$OUT/ngpu-lm.txt" "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cuda \
            --batch "$bs" --steps 50 --json "$OUT/ngpu-lm-cuda-b$bs.json"
    done
    lim 120 "$OUT/ngpu-lm.txt" "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cpu \
        --threads 16 --batch 256 --steps 20
    # Issue 54: the same walk with nothing copied between steps (the device's own rate, GB/s
    # written against the card's), and the CPU's 16 threads at the same batch.
    for bs in 256 2048; do
        lim 120 "$OUT/ngpu-lm.txt" "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cuda \
            --batch "$bs" --steps 50 --resident --json "$OUT/ngpu-lm-cuda-resident-b$bs.json"
    done
    lim 120 "$OUT/ngpu-lm.txt" "$B/ctxbench" lm arrays --lm gpu-bundle/lm.arpa.gz --backend cpu \
        --threads 16 --batch 2048 --steps 5
}

# `run_exp SECONDS LOG EXPERIMENT [ARGS...]`: one experiment into $OUT/runs.
run_exp() {
    local s=$1 log=$2 e=$3
    shift 3
    lim "$s" "$log" "$B/ctxbench" run "experiments/$e.toml" "$@" --out "$OUT/runs" --cache "$CACHE"
}

phase_hclg() {
    # 000 on the device (hclg-boost): Table 1's rows (quick sets), the speed ratio with 1,000
    # boosted phrases per stream, the load simulation (clients at real-time pace).
    run_exp 200 "$OUT/hclg-boost.log" nigmatulina23-table1 --quick --set backend=cuda --set threads=16
    run_exp 150 "$OUT/hclg-boost.log" nigmatulina23-speed --set backend=cuda --set threads=16
}

phase_chen18() {
    # 002 Table 1 with the CUDA backend beside the CPU backend (quick sets, every utterance).
    run_exp 200 "$OUT/chen18.log" chen18-table1-gpu
}

phase_load() {
    # 000's load simulation on the device (9 client counts, every utterance decoded once per
    # count; its own call: ~8 min).
    run_exp 500 "$OUT/hclg-boost.log" nigmatulina23-load --set backend=cuda --set threads=16
}

phase_fusion() {
    # 004 greedy fusion with the LM's queries on the device (CPU-query rows beside).
    run_exp 400 "$OUT/ngpu-fusion.log" bataev-device --set threads=16
}

phase_ctc_stream() {
    # 001 Table 4 on the device: the CTC WFST decoder's streaming channels, load simulation.
    run_exp 400 "$OUT/ctc-streaming.log" galvez-table4 --set backend=cuda
}

phase_open_vocab() {
    # Issue 42 on the device: open-vocabulary contexts (each utterance's list, compiled at run
    # time, in the device's pool of context graphs) decoded with the CUDA backend against the
    # CPU backend — a CTC TLG on Earnings-21, the hybrid HCLG on ATCO2-1h and Earnings-21 (quick
    # sets; text and CTM byte for byte, cuda twice) — then the speed rows with and without a
    # 1,013-phrase context on the device and on one host core.
    local spec ds kind method b
    for spec in earnings21:tlg-normal:ctc-wfst atco2-sim-1h:hclg:baseline earnings21:hclg:baseline; do
        IFS=: read -r ds kind method <<< "$spec"
        for b in cpu cuda cuda2; do
            lim 200 "$OUT/open-vocab.log" "$B/ctxbench" decode --dataset "$ds" --quick --kind "$kind" \
                --method "$method" --open-vocab sequences --methods none --backend "${b%2}" \
                --threads 16 --cache "$CACHE" --hyp-dir "/tmp/ov-$ds-$kind-$b"
        done
        for f in txt ctm; do
            same3 "$ds $kind open-vocab none.$f" "/tmp/ov-$ds-$kind-cpu/none.$f" \
                "/tmp/ov-$ds-$kind-cuda/none.$f" "/tmp/ov-$ds-$kind-cuda2/none.$f" >> "$OUT/parity.txt"
        done
    done
    # memcheck over the context kernels' paths (two Earnings-21 segments, graph cached above).
    if command -v compute-sanitizer > /dev/null; then
        lim 90 "$OUT/sanitizer.log" compute-sanitizer --tool memcheck --error-exitcode 3 \
            "$B/ctxbench" decode --dataset earnings21 --quick --limit 2 --kind tlg-normal \
            --method ctc-wfst --open-vocab sequences --methods none --backend cuda --cache "$CACHE"
        echo "open-vocab memcheck done (EXIT 3 above: errors found)" >> "$OUT/sanitizer.log"
    fi
    run_exp 200 "$OUT/open-vocab.log" open-vocab-speed --set backend=cuda --set threads=16
    lim 120 "$OUT/open-vocab.log" "$B/ctxbench" run experiments/open-vocab-speed.toml \
        --out "$OUT/runs-cpu" --cache "$CACHE"
}

phase_riva() {
    # Issue 54: NVIDIA's riva-asrlib-decoder 0.4.4 (its cp312 wheel, fetched by gpu_bundle.sh;
    # the machine's Python brings torch and numpy) and ctxbench on the same exports — the
    # normal TLG and the log-probs as .npy — of ATCO2-1h (the full set) and Earnings-21 (20
    # three-minute segments), beam 15, lattice beam 8, max-active 10,000: the 1-best of every
    # utterance compared (riva-same.txt), RTFx with the scores already on the device for both
    # (riva's condition), ctxbench also with them uploaded (throughput-riva.csv).
    local R="$OUT/riva.log" spec ds sel E n
    if ! ls gpu-bundle/wheels/riva_asrlib_decoder-*.whl > /dev/null 2>&1; then
        echo "no riva wheel in the bundle (gpu_bundle.sh could not fetch it)" >> "$R"; return
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/riva-site \
        gpu-bundle/wheels/riva_asrlib_decoder-*.whl >> "$R" 2>&1
    for spec in atco2-sim-1h: earnings21:--limit=20; do
        IFS=: read -r ds sel <<< "$spec"
        E=/tmp/riva-export-$ds
        [ -f "$E/datasets.toml" ] || lim 240 "$R" "$B/ctxbench" export --dataset "$ds" \
            ${sel/=/ } --kind tlg-normal --format npy --out "$E" --cache "$CACHE"
        n=$(ls "$E/scores" | wc -l)
        PYTHONPATH=/tmp/riva-site lim 240 "$R" python3 scripts/peer_riva.py "$E" \
            --hyp "$OUT/riva-$ds.txt" --timing "$OUT/riva-$ds-timing.txt" \
            --beam 15 --lattice-beam 8 --max-active 10000 --batch 512
        lim 240 "$R" "$B/ctxbench" decode --registry "$E/datasets.toml" --dataset "$ds-files" \
            --backend cuda --threads 16 --gpu-batch 512 --beam 15 --lattice-beam 8 \
            --max-active 10000 --methods none --hyp-dir "/tmp/riva-ours-$ds"
        python3 scripts/peer_riva_compare.py "$OUT/riva-$ds.txt" "/tmp/riva-ours-$ds/none.txt" \
            "$ds" >> "$OUT/riva-same.txt" 2>&1
        local m
        for m in "" --resident; do
            lim 120 "$R" "$B/ctxbench" throughput --registry "$E/datasets.toml" \
                --dataset "$ds-files" --full --kind tlg-normal --backend cuda --threads 16 \
                --streams "$n,$((8 * n))" --beam 15 --lattice-beam 8 --max-active 10000 $m \
                --csv "$OUT/throughput-riva.csv"
        done
    done
}

phase_profile() {
    # Nsight Compute on the frame step at 512 streams (quick ATCO2-1h HCLG): per kernel its
    # speed of light (compute and memory throughput against the peaks), launch statistics and
    # occupancy, past the first frames' warm-up. Clocks left alone (the device tool's rule).
    if ! command -v ncu > /dev/null; then echo "no ncu on this machine" >> "$OUT/ncu.log"; return; fi
    lim 400 "$OUT/ncu.log" ncu --clock-control none --launch-skip 400 --launch-count 120 \
        --section SpeedOfLight --section LaunchStats --section Occupancy --csv --page details \
        --log-file "$OUT/ncu-decoder.csv" \
        "$B/ctxbench" throughput --cache "$CACHE" --backend cuda --threads 16 --streams 512
}

phase_sanitize() {
    # compute-sanitizer's memcheck on a short cuda decode (out-of-bounds and misaligned device
    # accesses; the kernels' logic is already checked on the shim).
    if ! command -v compute-sanitizer > /dev/null; then echo "no compute-sanitizer" >> "$OUT/sanitizer.log"; return; fi
    local left=$((BUDGET_S - SECONDS))
    [ "$left" -le 5 ] && { echo "SKIPPED (budget spent)" >> "$OUT/sanitizer.log"; return; }
    timeout "$((left < 400 ? left : 400))" compute-sanitizer --tool memcheck --error-exitcode 3 \
        "$B/ctxbench" decode --dataset atco2-sim-1h --quick --limit 4 --backend cuda \
        --methods none,sequences --cache "$CACHE" >> "$OUT/sanitizer.log" 2>&1
    echo "exit $? (0 clean, 3 errors found, 124 timed out)" >> "$OUT/sanitizer.log"
}

phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(tests parity throughput riva lm hclg chen18 load fusion ctc-stream open-vocab profile sanitize)
for p in "${phases[@]}"; do
    f="phase_${p//-/_}"
    if ! declare -F "$f" > /dev/null; then
        echo "unknown phase '$p' (tests parity throughput riva lm hclg chen18 load fusion ctc-stream open-vocab profile sanitize)" >&2
        exit 2
    fi
    t0=$(date +%s)
    "$f"
    echo "$p $(( $(date +%s) - t0 )) s" >> "$OUT/phases.txt"
done
echo "done: ${phases[*]}" >> "$OUT/device.txt"
# The device tool brings back at most 8 files a call: everything goes into one archive
# (unpack it under results/gpu/<date>-<device>/), the summaries stay beside it to read first.
tag=$(IFS=-; echo "${phases[*]}")
tar -C "$OUT" -czf "/tmp/gpu-results-$tag.tar.gz" .
keep=$(mktemp -d)
for f in device.txt phases.txt parity.txt; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$keep/"; done
find "$OUT" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
mv "$keep"/* "$OUT/" 2>/dev/null
mv "/tmp/gpu-results-$tag.tar.gz" "$OUT/"

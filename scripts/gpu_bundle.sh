#!/usr/bin/env bash
# Builds what a GPU run needs on this (build) machine and puts it in gpu-bundle/ (ignored):
# the release test binaries of ctx-cuda, wfst-search, ngpu-lm, hclg-boost and ctc-wfst (GPU parity against the CPU backend, the
# NVRTC compile check, backend discovery), the ctxbench binary, and scripts/gpu_run.sh.
# The GPU machines have the CUDA driver and NVRTC but no Rust toolchain (TOOLCHAIN.md).
# Then, on the device tool: run `bash gpu-bundle/gpu_run.sh` with carry ["gpu-bundle"]; it
# writes its results to $OUT (copy them under results/gpu/ with the device, driver, date and
# code version).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf gpu-bundle && mkdir -p gpu-bundle/bin
cargo build --release -p ctxbench
cp target/release/ctxbench gpu-bundle/bin/
cargo test --release -p ctx-cuda -p wfst-search -p ngpu-lm -p hclg-boost -p ctc-wfst --no-run --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"], m["target"]["name"])' \
    | while read -r exe name; do cp "$exe" "gpu-bundle/bin/test-$name"; done
strip gpu-bundle/bin/* 2>/dev/null || true
# The device tool carries at most 64 MiB with the working tree: the binaries travel as one
# xz archive (~50 MB -> ~9 MB), unpacked by gpu_run.sh on the GPU machine.
tar -C gpu-bundle -cf - bin | xz -6 -T0 > gpu-bundle/bin.tar.xz
rm -rf gpu-bundle/bin
cp scripts/gpu_run.sh gpu-bundle/
# The Earnings-22 LM of `make lm-earnings22` (NGPU-LM query speed on the device), when built.
if [ -f results/lm-earnings22/lm.arpa.gz ]; then cp results/lm-earnings22/lm.arpa.gz gpu-bundle/; fi
# riva-asrlib-decoder 0.4.4 for the `riva` phase (issue 54): its CPython 3.12 wheel (7 MB; the
# GPU machine has no network), installed there with --no-deps beside its torch and numpy.
mkdir -p gpu-bundle/wheels
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d gpu-bundle/wheels riva-asrlib-decoder==0.4.4 \
    || echo "gpu_bundle: could not fetch riva-asrlib-decoder; the riva phase will say so"
git rev-parse HEAD > gpu-bundle/code-version
du -sh gpu-bundle

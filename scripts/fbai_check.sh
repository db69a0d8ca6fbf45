#!/usr/bin/env bash
# Scores every hypothesis file of the LibriSpeech biasing benchmark (Le et al. 2021,
# facebookresearch/fbai-speech is21_deep_bias/, MIT) with `ctxbench score --format fbai` and
# compares the output, byte for byte, with the published results/<hyp>.result printed by its
# score.py. Usage: scripts/fbai_check.sh [BENCHMARK_DIR] (a checkout of is21_deep_bias/; the
# references of every N are the biasing_100 files: B-WER's word sets are their third column).
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-../shared/data/fbai-is21-deep-bias}
BIN=${BIN:-target/release/ctxbench}
[ -d "$D/hyp" ] || { echo "no $D/hyp: pass the benchmark's folder" >&2; exit 2; }
same=0 differ=0
for h in "$D"/hyp/*.tsv; do
    n=$(basename "$h")
    set_=${n%%.*}
    want="$D/results/$n.result"
    got=$("$BIN" score --format fbai --ref "$D/ref/$set_.biasing_100.tsv" --hyp "$h")
    if [ "$got" == "$(cat "$want")" ]; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "DIFFER: $n"
        diff <(echo "$got") "$want" || true
    fi
done
echo "$same of $((same + differ)) result files identical to score.py's"
[ "$differ" -eq 0 ]

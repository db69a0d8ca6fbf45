#!/usr/bin/env bash
# Time A/B of the biasing overhead between git revisions: the figures in the README's
# arc-booster bullet that compare two builds ("builds alternated") come from this script.
#
# usage: scripts/overhead_ab.sh CYCLES ROUNDS REV [REV...]
#   e.g. scripts/overhead_ab.sh 4 20 HEAD~1 HEAD
#
# Builds `benches/overhead.rs` at each revision (a git worktree per revision under
# $AB_DIR, default /tmp/ctxbench-ab; the checkout's own target dir, so only the crates that
# differ are rebuilt), then runs the builds in turn
# CYCLES times, the order reversed every other cycle so that drift of the machine's speed
# falls on every build alike. Each run is `ONLY=$ONLY ROUNDS=$ROUNDS` (ONLY defaults to
# "lookups": the arc booster with discount 0). Prints one line per run: cycle, revision,
# the unbiased decode's median seconds and the variant's median added time. Nothing else
# should run on the machine meanwhile.
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 CYCLES ROUNDS REV [REV...]" >&2
    exit 2
fi
cycles=$1
rounds=$2
shift 2
only=${ONLY:-lookups}
dir=${AB_DIR:-/tmp/ctxbench-ab}
root=$(git rev-parse --show-toplevel)
mkdir -p "$dir"

bins=()
worktrees=()
cleanup() {
    for wt in "${worktrees[@]}"; do
        git -C "$root" worktree remove --force "$wt" 2>/dev/null || true
    done
}
trap cleanup EXIT

for rev in "$@"; do
    sha=$(git -C "$root" rev-parse --short "$rev")
    wt="$dir/wt-$sha"
    git -C "$root" worktree remove --force "$wt" 2>/dev/null || true
    git -C "$root" worktree add --detach "$wt" "$sha" >/dev/null
    worktrees+=("$wt")
    # The bench finds the datasets through its crate's path at build time, so each binary
    # runs against its own worktree (kept until the runs end).
    exe=$(cd "$wt" && CARGO_TARGET_DIR="$root/target" cargo bench -p ctxbench --bench overhead \
        --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
    if [ -z "$exe" ]; then
        echo "error: could not build benches/overhead at $rev ($sha)" >&2
        exit 1
    fi
    cp "$exe" "$dir/overhead-$sha"
    bins+=("$sha")
    echo "built $rev ($sha)" >&2
done

echo "cycle revision unbiased_s added_median (ONLY=$only ROUNDS=$rounds)"
for i in $(seq 1 "$cycles"); do
    if [ $((i % 2)) = 0 ]; then
        order=$(printf '%s\n' "${bins[@]}" | tac)
    else
        order=$(printf '%s\n' "${bins[@]}")
    fi
    for sha in $order; do
        out=$(ONLY="$only" ROUNDS="$rounds" "$dir/overhead-$sha" --bench 2>&1)
        base=$(printf '%s\n' "$out" | grep -F '| unbiased (decode' | awk -F'|' '{print $3}' | xargs)
        added=$(printf '%s\n' "$out" | grep -F "$only" | grep -v '^overhead' | tail -n 1 |
            awk -F'|' '{print $3}' | xargs)
        echo "$i $sha $base $added"
    done
done

#!/usr/bin/env bash
# A private single-node Slurm cluster (munged, slurmctld, slurmd: their own conf and state in a
# temporary folder, the machine's CPUs, stopped by PID at the end) runs an experiment as a
# 3-shard job array through scripts/slurm-sweep.sh, one shard cancelled mid-run and
# resubmitted, then the merge job; the merged points must equal a single-process
# `ctxbench run` of the same experiment (WER and NE-WER per point). `make slurm-check`.
#
#   scripts/slurm-check.sh [EXPERIMENT.toml]   (default: ablation-beam on the quick sets)
set -euo pipefail
cd "$(dirname "$0")/.."
exp=${1:-experiments/ablation-beam.toml}
bin=${CTXBENCH_BIN:-$(pwd)/target/release/ctxbench}
[[ -x "$bin" ]] || { echo "slurm-check: no ctxbench binary at $bin (make build)" >&2; exit 2; }
for t in munged mungekey slurmctld slurmd sbatch squeue scancel sinfo hostname python3; do
    command -v "$t" >/dev/null || { echo "slurm-check: $t missing (make slurm-check installs slurm-wlm and munge)" >&2; exit 2; }
done
id=$(basename "$exp" .toml)
tmp=$(mktemp -d /tmp/ctxbench-slurm.XXXXXX)
pids=()
cleanup() {
    local rc=$?
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 1
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    if [[ $rc -ne 0 ]]; then
        echo "slurm-check failed (exit $rc); logs:" >&2
        tail -n 20 "$tmp"/*.log "$tmp"/out/*.log 2>/dev/null >&2 || true
    fi
    rm -rf "$tmp"
    exit $rc
}
trap cleanup EXIT
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/out"
chmod 700 "$tmp"
mungekey --create --keyfile="$tmp/munge.key" --force >/dev/null
chmod 600 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" \
    --pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed"
pids+=("$(cat "$tmp/munged.pid")")
conf=$tmp/slurm.conf
cat > "$conf" <<CONF
ClusterName=ctxbench-check
SlurmctldHost=$host
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
SlurmctldPort=26817
SlurmdPort=26818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf
slurmctld -f "$conf"
for _ in $(seq 50); do [[ -s "$tmp/slurmctld.pid" ]] && break; sleep 0.2; done
pids+=("$(cat "$tmp/slurmctld.pid")")
slurmd -f "$conf"
for _ in $(seq 50); do [[ -s "$tmp/slurmd.pid" ]] && break; sleep 0.2; done
pids+=("$(cat "$tmp/slurmd.pid")")
for _ in $(seq 100); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 0.3
done
sinfo -h -o "%P %D %t %c" | sed 's/^/slurm-check: node /'

# The sweep: 3 shards into one results root, the merge after them.
out=$tmp/out
SLURM_SWEEP_DIR=$out CTXBENCH_BIN=$bin scripts/slurm-sweep.sh "$exp" 3 --quick --out "$out/sharded" >/dev/null
array=$out/$id.array.sbatch
merge=$out/$id.merge.sbatch
wait_for() { # job id: until it leaves the queue
    for _ in $(seq 1200); do
        [[ -z "$(squeue -h -j "$1" 2>/dev/null)" ]] && return 0
        sleep 0.5
    done
    echo "slurm-check: job $1 still queued after 10 minutes" >&2
    return 1
}
jid=$(sbatch --parsable "$array")
# Shard 1 cancelled once it runs, then resubmitted alone: finished points are skipped.
for _ in $(seq 600); do
    [[ "$(squeue -h -j "${jid}_1" -o %t 2>/dev/null)" == R ]] && break
    sleep 0.2
done
sleep 2
scancel "${jid}_1"
echo "slurm-check: shard 1 of job $jid cancelled while running"
wait_for "$jid"
jid2=$(sbatch --parsable --array=1 "$array")
wait_for "$jid2"
jid3=$(sbatch --parsable "$merge")
wait_for "$jid3"
echo "slurm-check: shards $jid (1 resubmitted as $jid2) and merge $jid3 done"

# The same experiment in one process.
"$bin" run "$exp" --quick --out "$out/single" >/dev/null 2>&1
python3 - "$out/sharded" "$out/single" "$id" <<'PY'
import csv, sys, pathlib
sharded, single, ident = sys.argv[1:]
def points(root):
    f = next(pathlib.Path(root).rglob(f"{ident}/points.csv"), None)
    if f is None:
        sys.exit(f"slurm-check: no {ident}/points.csv under {root}")
    with open(f, newline="") as fh:
        rows = list(csv.DictReader(fh))
    key = "key" if "key" in rows[0] else next(k for k in rows[0] if "key" in k)
    return {r[key]: (r.get("wer"), r.get("ne_wer")) for r in rows}
a, b = points(sharded), points(single)
if a != b:
    sys.exit(f"slurm-check: merged points differ from the single run:\n{a}\n{b}")
print(f"slurm-check: {len(a)} merged points equal the single-process run (WER, NE-WER)")
PY

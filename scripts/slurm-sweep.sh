#!/usr/bin/env bash
# Writes (and, with SUBMIT=1, submits) a Slurm job array that runs one experiment as N shards
# (`ctxbench run --shard K/N`, each a deterministic slice of the grid) and a dependent job that
# joins them (`ctxbench merge`). CTXBENCH_BIN names the binary (default target/release),
# SLURM_SWEEP_DIR where the job files and logs go (default slurm/). Shards write into one results root on a shared filesystem;
# finished points are skipped, so a failed array task can simply be resubmitted.
#
#   scripts/slurm-sweep.sh EXPERIMENT.toml N [extra ctxbench run args, e.g. --set beam=13]
set -euo pipefail
cd "$(dirname "$0")/.."
exp=${1:?usage: scripts/slurm-sweep.sh EXPERIMENT.toml N [ARGS...]}
n=${2:?usage: scripts/slurm-sweep.sh EXPERIMENT.toml N [ARGS...]}
shift 2
[[ -f "$exp" ]] || { echo "no experiment file $exp" >&2; exit 2; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "N must be a positive integer (got $n)" >&2; exit 2; }
id=$(basename "$exp" .toml)
bin=${CTXBENCH_BIN:-$(pwd)/target/release/ctxbench}
dir=${SLURM_SWEEP_DIR:-slurm}
mkdir -p "$dir"
array=$dir/$id.array.sbatch
merge=$dir/$id.merge.sbatch
cat > "$array" <<SB
#!/usr/bin/env bash
#SBATCH --job-name=ctxbench-$id
#SBATCH --array=1-$n
#SBATCH --cpus-per-task=2
#SBATCH --mem=16G
#SBATCH --output=$dir/$id-%a.log
cd $(pwd)
$bin run $exp --shard \${SLURM_ARRAY_TASK_ID}/$n $*
SB
cat > "$merge" <<SB
#!/usr/bin/env bash
#SBATCH --job-name=ctxbench-$id-merge
#SBATCH --output=$dir/$id-merge.log
cd $(pwd)
$bin merge $exp $*
SB
echo "wrote $array and $merge"
if [[ "${SUBMIT:-0}" == 1 ]]; then
    jid=$(sbatch --parsable "$array")
    sbatch --dependency=afterok:"$jid" "$merge"
else
    echo "submit: jid=\$(sbatch --parsable $array) && sbatch --dependency=afterok:\$jid $merge"
fi

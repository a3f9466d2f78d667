#!/usr/bin/env bash
# Sharded mining on a Slurm cluster: the steps of `lase shard` as job arrays chained by
# dependencies, as stopes runs LASER's mining.
#
#   init (here, on the submitting host: it counts lines to size the arrays)
#   embed  array over the source shards  \
#   embed  array over the target shards  /  -> knn fwd array (source shards)  \
#                                            -> knn bwd array (target shards)  /  -> mine
#
# Every step skips shards that are already complete, so after a failure the same command
# resubmits only what is missing. Jobs' logs go to WORK/logs/. Resources: sbatch reads
# SBATCH_* variables (SBATCH_PARTITION, SBATCH_TIMELIMIT, SBATCH_ACCOUNT, ...) for every
# job; LASE_SBATCH_EMBED, LASE_SBATCH_KNN and LASE_SBATCH_MINE add options to one step
# (e.g. LASE_SBATCH_EMBED="--gres=gpu:1 --cpus-per-task=8").
#
# Usage: scripts/slurm_mine.sh --src FILE --tgt FILE --model DIR --work DIR --output FILE
#          [--shards N] [--k 4] [--align 8192] [--wait] [-- lase shard mine options...]
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-$PWD/target/release/lase}
shards=8 k=4 align=8192 wait=0
mine_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --src) src=$2; shift 2 ;;
    --tgt) tgt=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --k) k=$2; shift 2 ;;
    --align) align=$2; shift 2 ;;
    --wait) wait=1; shift ;;
    --) shift; mine_args=("$@"); break ;;
    *) echo "slurm_mine.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for v in src tgt model work output; do
  [ -n "${!v:-}" ] || { echo "slurm_mine.sh: --$v is required" >&2; exit 2; }
done
abs() { realpath -m "$1"; }
src=$(abs "$src") tgt=$(abs "$tgt") model=$(abs "$model") work=$(abs "$work") output=$(abs "$output")
mkdir -p "$work/logs"

"$LASE" shard init --input "$src" --store "$work/src" --shards "$shards" --align "$align"
"$LASE" shard init --input "$tgt" --store "$work/tgt" --shards "$shards" --align "$align"
count() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["shards"]))' "$1/manifest.json"; }
ns=$(count "$work/src") nt=$(count "$work/tgt")

submit() { # NAME ARRAY DEPENDENCY EXTRA COMMAND -> job id
  local name=$1 array=$2 dependency=$3 extra=$4 command=$5 args=() log="$work/logs/%x.out"
  [ -n "$array" ] && args+=(--array="$array") && log="$work/logs/%x-%a.out"
  [ -n "$dependency" ] && args+=(--dependency="afterok:$dependency")
  # shellcheck disable=SC2086 # $extra is a list of sbatch options
  sbatch --parsable --job-name="$name" --output="$log" "${args[@]}" $extra --wrap="$command"
}

extra_embed=${LASE_SBATCH_EMBED:-} extra_knn=${LASE_SBATCH_KNN:-} extra_mine=${LASE_SBATCH_MINE:-}
embed_src=$(submit lase-embed-src "0-$((ns - 1))" "" "$extra_embed" \
  "$LASE shard embed --quiet --store $work/src --model $model --shard \$SLURM_ARRAY_TASK_ID")
embed_tgt=$(submit lase-embed-tgt "0-$((nt - 1))" "" "$extra_embed" \
  "$LASE shard embed --quiet --store $work/tgt --model $model --shard \$SLURM_ARRAY_TASK_ID")
knn_fwd=$(submit lase-knn-fwd "0-$((ns - 1))" "$embed_src:$embed_tgt" "$extra_knn" \
  "$LASE shard knn --src $work/src --tgt $work/tgt --out $work/knn -k $k --direction fwd --shard \$SLURM_ARRAY_TASK_ID")
knn_bwd=$(submit lase-knn-bwd "0-$((nt - 1))" "$embed_src:$embed_tgt" "$extra_knn" \
  "$LASE shard knn --src $work/src --tgt $work/tgt --out $work/knn -k $k --direction bwd --shard \$SLURM_ARRAY_TASK_ID")
mine_cmd="$LASE shard mine --src $work/src --tgt $work/tgt --knn $work/knn -k $k --output $output ${mine_args[*]:-}"
if [ "$wait" = 1 ]; then
  echo "submitted: embed $embed_src ($ns shards) and $embed_tgt ($nt), knn $knn_fwd and $knn_bwd; mine waits for them"
  # shellcheck disable=SC2086
  sbatch --wait --parsable --job-name=lase-mine --output="$work/logs/%x.out" \
    --dependency="afterok:$knn_fwd:$knn_bwd" $extra_mine --wrap="$mine_cmd"
  cat "$work/logs/lase-mine.out"
else
  mine=$(submit lase-mine "" "$knn_fwd:$knn_bwd" "$extra_mine" "$mine_cmd")
  echo "submitted: embed $embed_src ($ns shards) and $embed_tgt ($nt), knn $knn_fwd and $knn_bwd, mine $mine"
fi

#!/usr/bin/env bash
# Issue 14 section 3 at CPU scale: three recipes for the default model, run side by side on
# one thread each and compared on the dev split at equal CPU seconds (docs/results.md, "EMS
# from scratch at equal compute"):
#   teacher-mse     configs/lase-base.toml as its CPU run ran (150,000-pair sample, dev every 100)
#   ems-scratch     configs/ablation/lase-base/ems-scratch.toml (XTR + EMS contrastive from scratch)
#   ems-scratch-mse configs/ablation/lase-base/ems-scratch-mse.toml (the same + MSE onto the teacher)
#   mse-info-nce    configs/ablation/lase-base/mse-info-nce.toml (lase-base's recipe + InfoNCE;
#                   started later, it reuses teacher-mse's teacher cache: same sample and teacher)
# Each run resumes from its checkpoint when started again; scripts/cpu_seconds.py logs each
# process's CPU seconds against its step into runs/recipe-comparison/<arm>.cpu.tsv.
# Usage: scripts/recipe_comparison.sh            (starts the arms not running; returns at once)
#        scripts/recipe_comparison.sh --table    (dev P@1 of each arm at equal CPU seconds)
#        scripts/recipe_comparison.sh --eval ARM (after the dev split has chosen: ARM's best-dev
#                                                 checkpoint on FLORES-6 and STS; TATOEBA=1 adds Tatoeba-112)
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
dir=runs/recipe-comparison
mkdir -p "$dir"
if [ "${1:-}" = --table ]; then
  exec python3 scripts/recipe_comparison_table.py "$dir" teacher-mse ems-scratch ems-scratch-mse mse-info-nce
fi
if [ "${1:-}" = --eval ]; then
  arm=$2
  LASE=$LASE TATOEBA=${TATOEBA:-0} exec scripts/default_model_eval.sh "$dir/$arm/best-model" "$dir/$arm/eval"
fi
LASE=$LASE scripts/minilm_pca256.sh
start() {
  local arm=$1 command=$2 config=$3; shift 3
  if [ -f "$dir/$arm.pid" ] && kill -0 "$(cat "$dir/$arm.pid")" 2>/dev/null; then
    echo "$arm: running (pid $(cat "$dir/$arm.pid"))"; return
  fi
  $LASE $command --config "$config" --out "$dir/$arm" --threads 1 --quiet "$@" >>"$dir/$arm.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/$arm.pid"
  nohup python3 scripts/cpu_seconds.py "$pid" "$dir/$arm" "$dir/$arm.cpu.tsv" >/dev/null 2>&1 &
  echo "$arm: started (pid $pid, log $dir/$arm.log)"
}
start teacher-mse distill configs/lase-base.toml --set data.max_train_pairs=150000 --set run.eval_every=100
start ems-scratch train configs/ablation/lase-base/ems-scratch.toml
start ems-scratch-mse distill configs/ablation/lase-base/ems-scratch-mse.toml
if [ -f "$dir/teacher-mse/teacher-target.npy" ] && [ ! -e "$dir/mse-info-nce/teacher-target.npy" ]; then
  mkdir -p "$dir/mse-info-nce"
  ln "$dir/teacher-mse/teacher-target.npy" "$dir/mse-info-nce/teacher-target.npy"
fi
start mse-info-nce distill configs/ablation/lase-base/mse-info-nce.toml

#!/usr/bin/env bash
# multistage-distillation.txt Tables 7-8 at a small budget: the embedding bottleneck size
# (bs) and the recurring unit's depth (|RU|) of the student, everything else as
# configs/multistage/small.toml (bs 64, |RU| 2 of 4 layers). Every variant reuses that
# run's stage 1 (the assistant does not depend on the student's shape) and its stage-3
# teacher cache (the assistant's embeddings of the same pairs), then runs stages 2-4 with
# `--set` changes and evaluates the final student with scripts/ablation_eval.sh.
# Run scripts/multistage_experiment.sh first. Resumes if killed.
# Usage: scripts/multistage_sweep.sh [VARIANT...] (default: all below)
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
BASE=${BASE:-runs/multistage-small}
declare -A VARIANTS=(
  [bs32]="student.embedding_size=32"
  [bs128]="student.embedding_size=128"
  [no-bottleneck]="student.embedding_size="
  [ru1]="student.recurrent_unit_layers=1"
  [ru4]="student.recurrent_unit_layers=4"
)
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(bs32 bs128 no-bottleneck ru1 ru4)
[ -f "$BASE/1-assistant/model/config.json" ] || { echo "run scripts/multistage_experiment.sh first ($BASE)" >&2; exit 1; }
for v in "${variants[@]}"; do
  [ -n "${VARIANTS[$v]+set}" ] || { echo "unknown variant $v (${!VARIANTS[*]})" >&2; exit 2; }
  out=runs/multistage-sweep/$v
  mkdir -p "$out/3-student"
  [ -e "$out/1-assistant" ] || ln -s "$(realpath "$BASE/1-assistant")" "$out/1-assistant"
  for side in source target; do
    cache=$BASE/3-student/teacher-$side.npy
    dst=$out/3-student/teacher-$side.npy
    [ -e "$dst" ] || ln "$cache" "$dst" 2>/dev/null || cp "$cache" "$dst"
  done
  if [ ! -f "$out/4-contrastive/model/config.json" ]; then
    $LASE distill multistage --config configs/multistage/small.toml --set "${VARIANTS[$v]}" \
      --out "$out" --stage 2 --stage 3 --stage 4 --quiet
  fi
  LASE=$LASE scripts/ablation_eval.sh "$out/4-contrastive/model" "$out/4-contrastive"
done

#!/usr/bin/env bash
# Trains lase-mini (configs/lase-mini.toml): lase-base cut to a thin student by `lase shrink`
# and distilled back onto lase-base's vectors reduced to 256-d by PCA. Every step resumes or
# is skipped when its output is there: run the same command again after a kill. Extra
# arguments go to `lase distill` (--threads 1, --stop-after N, --set ...).
# Usage: scripts/train_mini.sh [lase distill options...]
# LASE_MINI_PREPARE_ONLY=1 stops before training (for scripts/gpu_train.sh pack).
# Shape of the cut: LASE_MINI_LAYERS (0,1,3,5) and LASE_MINI_FFN (512) (docs/results.md, "lase-mini, first distillation").
# LASE_MINI_BASE: the model cut and distilled from (default models/lase-base, the default model).
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
layers=${LASE_MINI_LAYERS:-0,1,3,5}
ffn=${LASE_MINI_FFN:-512}
base=${LASE_MINI_BASE:-models/lase-base}
dir=runs/mini
mkdir -p "$dir"
[ -f "$dir/pca-sample.txt" ] || python3 scripts/sample_training_sentences.py "$dir/pca-sample.txt" --count 20000
[ -f "$dir/vocab-sample.txt" ] ||
  python3 scripts/sample_training_sentences.py "$dir/vocab-sample.txt" --count 300000 --per-file 1000 --seed 2
if [ ! -f "$dir/teacher-pca256/modules.json" ]; then
  rm -rf "$dir/teacher-pca256.partial"
  $LASE reduce-dim --model "$base" --to 256 --sample "$dir/pca-sample.txt" \
    --output "$dir/teacher-pca256.partial"
  mv "$dir/teacher-pca256.partial" "$dir/teacher-pca256"
fi
# lase shrink writes its folder atomically.
[ -f "$dir/init/modules.json" ] ||
  $LASE shrink --model "$dir/teacher-pca256" --output "$dir/init" --layers "$layers" \
    --intermediate-size "$ffn" --vocab-size 16000 --vocab-sample "$dir/vocab-sample.txt"
# LASE_MINI_PREPARE_ONLY=1: stop here (the inputs scripts/gpu_train.sh pack needs).
[ "${LASE_MINI_PREPARE_ONLY:-0}" = 1 ] && exit 0
exec $LASE distill --config configs/lase-mini.toml --out "$dir/distill" "$@"

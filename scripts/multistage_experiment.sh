#!/usr/bin/env bash
# Multi-stage distillation at a small budget (configs/multistage/small.toml) and the
# stage ablation of multistage-distillation.txt Table 6: every stage's model evaluated by
# scripts/ablation_eval.sh. Resumes if killed.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
OUT=${OUT:-runs/multistage-small}
$LASE distill multistage --config configs/multistage/small.toml --out "$OUT" --quiet
for stage in 1-assistant 2-bottleneck 3-student 4-contrastive; do
  LASE=$LASE scripts/ablation_eval.sh "$OUT/$stage/model" "$OUT/$stage"
done

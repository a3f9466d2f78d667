#!/usr/bin/env bash
# Twenty-second session: lase-mini continued against run 16 in two arms side by side (one
# thread each, bf16), then the rule (mini-rule-s22.md beside this file) by scripts/score_mini.sh,
# which reads the test sets after the choice and, with a chosen candidate, installs it and
# runs the demo. Run again after a kill: every step resumes or is skipped.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s22
lase=target/release/lase
echo "training starts $(date -u +%H:%M:%S)"
for arm in mse nce; do
  mkdir -p runs/mini-s22-$arm
  LASE_MINI_CONFIG=configs/lase-mini-continue-s22-$arm.toml LASE_MINI_DIR=runs/mini-s22-$arm \
    scripts/continue_mini.sh --threads 1 --precision bf16 --quiet >> runs/mini-s22-$arm/train.log 2>&1 &
done
wait
echo "training ended $(date -u +%H:%M:%S)"
for arm in mse nce; do
  run=runs/mini-s22-$arm
  step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
  echo "arm $arm at step $step"
  [ "$step" -ge 750 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
  cp $run/distill/metrics.jsonl $R/mini-s22-$arm-metrics.jsonl
  cp $run/train.log $R/mini-s22-$arm-train.log
  if ! [ -f $run/export/checksums.sha256 ]; then
    rm -rf $run/export.tmp
    $lase export --model $run/distill/best-model --output $run/export.tmp --dtype f16 2>&1 | tee $R/export-mini-s22-$arm.txt
    rm -rf $run/export && mv $run/export.tmp $run/export
  fi
  if ! [ -f runs/soup-s22/soup-$arm/modules.json ]; then
    mkdir -p runs/soup-s22
    $lase --threads 2 interpolate --model models/lase-mini --to $run/export --alpha 0.5 --dtype f16 \
      --output runs/soup-s22/soup-$arm 2>&1 | tee $R/interpolate-soup-$arm.txt
  fi
done
echo "scoring starts $(date -u +%H:%M:%S)"
LASE_RULE_ARGS="--min-gain 0.3 --bootstrap 2000" \
SHIPPED_EVAL=bench/results/epyc-zen3-2026-11-28-s16/mini-soup/eval-soup2 \
  scripts/score_mini.sh --install $R/mini-s22 s22 runs/mini-s22-mse runs/mini-s22-nce \
  runs/soup-s22/soup-mse runs/soup-s22/soup-nce
echo "all done $(date -u +%H:%M:%S)"

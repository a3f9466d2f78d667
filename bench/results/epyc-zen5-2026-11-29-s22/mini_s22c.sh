#!/usr/bin/env bash
# Twenty-second session: the new lase-mini continued once more (configs/lase-mini-continue-s22c.toml,
# rule mini-rule-s22c.md beside this file), then scripts/score_mini.sh. Run again after a kill.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s22
lase=target/release/lase
run=runs/mini-s22c
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini-continue-s22c.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 --quiet >> $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "training ended $(date -u +%H:%M:%S) at step $step"
[ "$step" -ge 750 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini-s22c-metrics.jsonl
cp $run/train.log $R/mini-s22c-train.log
if ! [ -f $run/export/checksums.sha256 ]; then
  rm -rf $run/export.tmp
  $lase export --model $run/distill/best-model --output $run/export.tmp --dtype f16 2>&1 | tee $R/export-mini-s22c.txt
  rm -rf $run/export && mv $run/export.tmp $run/export
fi
[ -f runs/soup-s22c/soup-s22c/modules.json ] ||
  $lase --threads 2 interpolate --model models/lase-mini --to $run/export --alpha 0.5 --dtype f16 \
    --output runs/soup-s22c/soup-s22c 2>&1 | tee $R/interpolate-soup-s22c.txt
echo "scoring starts $(date -u +%H:%M:%S)"
LASE_RULE_ARGS="--min-gain 0.3 --bootstrap 2000" \
SHIPPED_EVAL=$R/mini-s22b/eval-mini-s22b \
  scripts/score_mini.sh --install $R/mini-s22c s22c $run runs/soup-s22c/soup-s22c
echo "all done $(date -u +%H:%M:%S)"

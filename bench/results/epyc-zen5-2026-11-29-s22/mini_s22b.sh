#!/usr/bin/env bash
# Twenty-second session: the new lase-mini continued once more (configs/lase-mini-continue-TAG.toml,
# rule mini-rule-TAG.md beside this file), then scripts/score_mini.sh. Run again after a kill.
# Usage: mini_s22b.sh [TAG [SHIPPED_EVAL]]: TAG s22b (default) or s22c (mini_s22c.sh), and
# the shipped student's default_model_eval.sh folder for score_mini.sh's Tatoeba comparison.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s22
lase=target/release/lase
tag=${1:-s22b}
shipped_eval=${2:-$R/mini-s22/eval-mini-s22-nce}
run=runs/mini-$tag
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini-continue-$tag.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 --quiet >> $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "training ended $(date -u +%H:%M:%S) at step $step"
[ "$step" -ge 750 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini-$tag-metrics.jsonl
cp $run/train.log $R/mini-$tag-train.log
if ! [ -f $run/export/checksums.sha256 ]; then
  rm -rf $run/export.tmp
  $lase export --model $run/distill/best-model --output $run/export.tmp --dtype f16 2>&1 | tee $R/export-mini-$tag.txt
  rm -rf $run/export && mv $run/export.tmp $run/export
fi
[ -f runs/soup-$tag/soup-$tag/modules.json ] ||
  $lase --threads 2 interpolate --model models/lase-mini --to $run/export --alpha 0.5 --dtype f16 \
    --output runs/soup-$tag/soup-$tag 2>&1 | tee $R/interpolate-soup-$tag.txt
echo "scoring starts $(date -u +%H:%M:%S)"
LASE_RULE_ARGS="--min-gain 0.3 --bootstrap 2000" \
SHIPPED_EVAL=$shipped_eval \
  scripts/score_mini.sh --install $R/mini-$tag $tag $run runs/soup-$tag/soup-$tag
echo "all done $(date -u +%H:%M:%S)"

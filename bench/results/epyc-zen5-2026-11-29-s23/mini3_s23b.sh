#!/usr/bin/env bash
# Twenty-third session: the three-layer lase-mini continued once more (configs/lase-mini3-TAG.toml,
# rule mini3-rule-TAG.md beside this file), then scripts/score_mini.sh. Run again after a kill.
# Usage: mini3_s23b.sh [TAG [SHIPPED_EVAL]]: TAG s23b (default) or s23c (mini3_s23c.sh), and
# the shipped student's default_model_eval.sh folder for score_mini.sh's Tatoeba comparison.
set -uo pipefail
cd /work/main
. scripts/lib/run_progress.sh
R=bench/results/epyc-zen5-2026-11-29-s23
lase=target/release/lase
tag=${1:-s23b}
shipped_eval=${2:-$R/mini3/eval}
run=runs/mini3-$tag
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini3-$tag.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 --quiet >> $run/train.log 2>&1
steps=$(recipe_steps $run/distill/config.toml)
step=$(checkpoint_step $run/distill)
echo "training ended $(date -u +%H:%M:%S) at step $step"
[ -n "$steps" ] && [ "$step" -ge "$steps" ] && [ -f $run/distill/best-model/model.safetensors ] ||
  { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini3-$tag-metrics.jsonl
cp $run/train.log $R/mini3-$tag-train.log
if ! [ -f $run/export/checksums.sha256 ]; then
  rm -rf $run/export.tmp
  $lase export --model $run/distill/best-model --output $run/export.tmp --dtype f16 2>&1 | tee $R/export-mini3-$tag.txt
  rm -rf $run/export && mv $run/export.tmp $run/export
fi
[ -f runs/soup-$tag/soup-$tag/modules.json ] ||
  $lase --threads 2 interpolate --model models/lase-mini --to $run/export --alpha 0.5 --dtype f16 \
    --output runs/soup-$tag/soup-$tag 2>&1 | tee $R/interpolate-soup-$tag.txt
du -b $run/export runs/soup-$tag/soup-$tag > $R/mini3-$tag-sizes.txt
echo "scoring starts $(date -u +%H:%M:%S)"
LASE_RULE_ARGS="--min-gain 0.3 --bootstrap 2000" \
SHIPPED_EVAL=$shipped_eval \
  scripts/score_mini.sh --install $R/mini3-$tag $tag $run runs/soup-$tag/soup-$tag
echo "all done $(date -u +%H:%M:%S)"

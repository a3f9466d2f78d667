#!/usr/bin/env bash
# Twenty-third session: the three-layer lase-mini continued a third time (configs/lase-mini3-s23c.toml,
# rule mini3-rule-s23c.md beside this file), then scripts/score_mini.sh. Run again after a kill.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s23
lase=target/release/lase
tag=s23c
run=runs/mini3-$tag
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini3-$tag.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 --quiet >> $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "training ended $(date -u +%H:%M:%S) at step $step"
[ "$step" -ge 1000 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
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
SHIPPED_EVAL=$R/mini3-s23b/eval-mini3-s23b \
  scripts/score_mini.sh --install $R/mini3-$tag $tag $run runs/soup-$tag/soup-$tag
echo "all done $(date -u +%H:%M:%S)"

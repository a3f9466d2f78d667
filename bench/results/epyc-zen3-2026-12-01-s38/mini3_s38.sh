#!/usr/bin/env bash
# Thirty-eighth session: the three-layer lase-mini continued a fifth time, against run 20
# (configs/lase-mini3-s38.toml, rule mini3-rule-s38.md beside this file), then
# scripts/score_mini.sh --install. The steps of bench/results/xeon-amx-2026-11-30-s33/mini3_s33.sh,
# in f32 (this CPU has no AVX512-BF16/AMX). Starts only once models/lase-base is run 20 (its
# weights hash like round run19tcm1k's chosen ones). Run again after a kill (each step resumes
# or skips).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. scripts/lib/run_progress.sh
R=bench/results/epyc-zen3-2026-12-01-s38
lase=target/release/lase
tag=s38
precision=${LASE_TRAIN_PRECISION:-f32}
shipped_eval=bench/results/xeon-amx-2026-11-30-s33/mini3-s33/eval-soup-s33
run=runs/mini3-$tag
want=$(cut -d' ' -f1 bench/results/epyc-zen3-2026-11-30-s34/run19tcm1k-arms/chosen/model.safetensors.sha256)
have=$(sha256sum < models/lase-base/model.safetensors | cut -d' ' -f1)
[ "$have" = "$want" ] || { echo "mini3_s38.sh: models/lase-base is not run 20 (sha256 $have): adopt it first" >&2; exit 2; }
grep -m1 'model name' /proc/cpuinfo; grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini3-$tag.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision "$precision" --quiet >> $run/train.log 2>&1
steps=$(recipe_steps configs/lase-mini3-$tag.toml)
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

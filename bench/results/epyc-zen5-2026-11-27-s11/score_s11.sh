#!/usr/bin/env bash
# Session 11: the candidates of bench/results/epyc-zen5-2026-11-27-s11/rule.md (run 13
# continued at MSE 2x), each exported to f16 as shipped, then scored on the dev split beside
# run 13 itself (scored again by this binary on this machine).
set -euo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s11
lase=target/release/lase
RUN=runs/lase-base-run13-mse2-cpu
$lase export --model $RUN/model --output runs/r13mse2-model-f16 --dtype f16 2>&1 | tee $R/export-r13mse2-model.txt
cands="models/lase-base runs/r13mse2-model-f16"
if [ -d $RUN/best-model ] && ! cmp -s $RUN/best-model/model.safetensors $RUN/model/model.safetensors; then
  $lase export --model $RUN/best-model --output runs/r13mse2-best-f16 --dtype f16 2>&1 | tee $R/export-r13mse2-best.txt
  cands="$cands runs/r13mse2-best-f16"
fi
for a in 0.3 0.5; do
  $lase interpolate --model models/lase-base --to runs/r13mse2-model-f16 --alpha $a --output runs/interp-r13-r13mse2-$a 2>&1 | tee $R/interpolate-r13-r13mse2-$a.txt
  cands="$cands runs/interp-r13-r13mse2-$a"
done
for m in $cands; do
  tag=$(basename $m)
  $lase --threads 2 dev-score --model $m --config configs/lase-base-non-pivot-cpu-anneal.toml --set run.dev_max_pairs=0 \
    --teacher models/all-MiniLM-L6-v2 --json $R/devscore-$tag.json 2>&1 | grep -v "^\s*$" | tail -3 | tee $R/devscore-$tag.txt
done

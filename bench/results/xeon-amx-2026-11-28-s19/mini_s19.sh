#!/usr/bin/env bash
# Session 19: the shipped lase-mini continued against run 16 (configs/lase-mini-continue-s19.toml,
# rule mini-rule-s19.md beside this file), in bf16 on the AMX Xeon; at
# step 1,000 its best-dev model is exported to f16, scored with the shipped student on all dev
# pairs, the rule applied, then the test sets read (after the choice) and, if it replaced the
# shipped student, copied and the demo run.
set -uo pipefail
cd /work/main
R=bench/results/xeon-amx-2026-11-28-s19
lase=target/release/lase
run=runs/mini-continue-s19

echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini-continue-s19.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 > $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "mini ended at step $step $(date -u +%H:%M:%S)"
[ "$step" -ge 1000 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini-continue-s19-metrics.jsonl
cp $run/train.log $R/mini-continue-s19.log
rm -rf $run/export
$lase export --model $run/distill/best-model --output $run/export --dtype f16 2>&1 | tee $R/export-mini-continue-s19.txt
for m in models/lase-mini $run/export; do
  tag=$( [ $m = models/lase-mini ] && echo shipped || echo candidate )
  { echo "\$ lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json devscore-mini-s19-$tag.json"
    $lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json $R/devscore-mini-s19-$tag.json 2>&1 | grep -v '^\s*$' | tail -2; } > $R/devscore-mini-s19-$tag.txt
done
python3 scripts/dev_rule.py --base $R/devscore-mini-s19-shipped.json $R/devscore-mini-s19-candidate.json --min-gain 0.3 | tee $R/mini-rule-s19-outcome.txt
echo "rule applied $(date -u +%H:%M:%S)"
scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s19 > $R/eval-mini-s19-f32.txt 2>&1
rm -rf $R/eval-lase-mini-s19 && cp -r runs/eval/lase-mini-s19 $R/eval-lase-mini-s19
python3 scripts/tatoeba_compare.py bench/results/epyc-zen3-2026-11-28-s16/mini-soup/eval-soup2/eval-tatoeba112.json \
  runs/eval/lase-mini-s19/eval-tatoeba112.json > $R/tatoeba_mini_shipped_to_s19.txt
echo "f32 eval done $(date -u +%H:%M:%S)"
if grep -q '^chosen: mini-s19-candidate$' $R/mini-rule-s19-outcome.txt; then
  cp -r $run/export/. models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > $R/mini-s19-copied-checksums.txt 2>&1
  scripts/run.sh > $R/run_f32_mini_s19.txt 2>&1
  LASE_PRECISION=auto scripts/run.sh > $R/run_auto_mini_s19.txt 2>&1
  echo "demo done $(date -u +%H:%M:%S)"
  PRECISION=int8 scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s19-int8 > $R/eval-mini-s19-int8.txt 2>&1
  rm -rf $R/eval-lase-mini-s19-int8 && cp -r runs/eval/lase-mini-s19-int8 $R/eval-lase-mini-s19-int8
  echo "int8 eval done $(date -u +%H:%M:%S)"
fi
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Session 15: the shipped lase-mini continued a third time (configs/lase-mini-continue-s15.toml,
# rule mini-rule-s15.md beside this file), after this session's test run frees the cores; at
# step 1,000 its best-dev model is exported to f16, scored with the shipped student on all dev
# pairs, the rule applied, then the test sets read (after the choice) and, if it replaced the
# shipped student, copied and the demo run.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen3-2026-11-27-s15
lase=target/release/lase
run=runs/mini-continue-s15
while pgrep -f "[c]argo test --release" >/dev/null; do sleep 10; done
echo "training starts $(date -u +%H:%M:%S)"
mkdir -p $run
LASE_MINI_CONFIG=configs/lase-mini-continue-s15.toml LASE_MINI_DIR=$run \
  LASE_MINI_HEAD=runs/mini/teacher-pca256/2_Dense scripts/continue_mini.sh --threads 2 > $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "mini ended at step $step $(date -u +%H:%M:%S)"
[ "$step" -ge 1000 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini-continue-s15-metrics.jsonl
cp $run/train.log $R/mini-continue-s15.log
rm -rf $run/export
$lase export --model $run/distill/best-model --output $run/export --dtype f16 2>&1 | tee $R/export-mini-continue-s15.txt
for m in models/lase-mini $run/export; do
  tag=$( [ $m = models/lase-mini ] && echo shipped || echo candidate )
  { echo "\$ lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json devscore-mini-s15-$tag.json"
    $lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json $R/devscore-mini-s15-$tag.json 2>&1 | grep -v '^\s*$' | tail -2; } > $R/devscore-mini-s15-$tag.txt
done
python3 scripts/dev_rule.py --base $R/devscore-mini-s15-shipped.json $R/devscore-mini-s15-candidate.json --min-gain 0.3 | tee $R/mini-rule-s15-outcome.txt
echo "rule applied $(date -u +%H:%M:%S)"
scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s15b > $R/eval-mini-s15b-f32.txt 2>&1
rm -rf $R/eval-lase-mini-s15b && cp -r runs/eval/lase-mini-s15b $R/eval-lase-mini-s15b
python3 scripts/tatoeba_compare.py $R/eval-lase-mini-candidate/eval-tatoeba112.json \
  runs/eval/lase-mini-s15b/eval-tatoeba112.json > $R/tatoeba_mini_s15_to_s15b.txt
echo "f32 eval done $(date -u +%H:%M:%S)"
if grep -q '^chosen: mini-s15-candidate$' $R/mini-rule-s15-outcome.txt; then
  cp -r $run/export/. models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > $R/mini-s15b-copied-checksums.txt 2>&1
  scripts/run.sh > $R/run_f32_mini_s15b.txt 2>&1
  LASE_PRECISION=auto scripts/run.sh > $R/run_auto_mini_s15b.txt 2>&1
  echo "demo done $(date -u +%H:%M:%S)"
  PRECISION=int8 scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s15b-int8 > $R/eval-mini-s15b-int8.txt 2>&1
  rm -rf $R/eval-lase-mini-s15b-int8 && cp -r runs/eval/lase-mini-s15b-int8 $R/eval-lase-mini-s15b-int8
  echo "int8 eval done $(date -u +%H:%M:%S)"
fi
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Session 15 (the fourteenth session's machine, its runs/ kept): the lase-mini continuation
# (configs/lase-mini-continue-s14.toml) resumed from its step-100 checkpoint. When it reaches
# step 2,000: export its best-model to f16, score it and the shipped student on all dev
# pairs, apply bench/results/epyc-zen3-2026-11-27-s14/mini-rule.md with scripts/dev_rule.py,
# then read the test sets (after the choice) and, if it replaced the shipped student, copy it
# and run the demo.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen3-2026-11-27-s15
lase=target/release/lase
run=runs/mini-continue-s14
while pgrep -f "[l]ase distill --config configs/lase-mini-continue-s14.toml" >/dev/null; do sleep 15; done
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "mini ended at step $step $(date -u +%H:%M:%S)"
[ "$step" -ge 2000 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini-continue-s14-metrics.jsonl
cp $run/resume-s15.log $R/mini-continue-s14-resume.log
rm -rf $run/export
$lase export --model $run/distill/best-model --output $run/export --dtype f16 2>&1 | tee $R/export-mini-continue-s14.txt
for m in models/lase-mini $run/export; do
  tag=$( [ $m = models/lase-mini ] && echo shipped || echo candidate )
  { echo "\$ lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json devscore-mini-$tag.json"
    $lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json $R/devscore-mini-$tag.json 2>&1 | grep -v '^\s*$' | tail -2; } > $R/devscore-mini-$tag.txt
done
python3 scripts/dev_rule.py --base $R/devscore-mini-shipped.json $R/devscore-mini-candidate.json --min-gain 0.3 | tee $R/mini-rule-outcome.txt
echo "rule applied $(date -u +%H:%M:%S)"
scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s15 > $R/eval-mini-candidate-f32.txt 2>&1
rm -rf $R/eval-lase-mini-candidate && cp -r runs/eval/lase-mini-s15 $R/eval-lase-mini-candidate
python3 scripts/tatoeba_compare.py bench/results/epyc-zen5-2026-11-27-s13/eval-lase-mini-candidate/eval-tatoeba112.json \
  runs/eval/lase-mini-s15/eval-tatoeba112.json > $R/tatoeba_mini_shipped_to_candidate.txt
echo "f32 eval done $(date -u +%H:%M:%S)"
if grep -q '^chosen: mini-candidate$' $R/mini-rule-outcome.txt; then
  cp -r $run/export/. models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > $R/mini-copied-checksums.txt 2>&1
  scripts/run.sh > $R/run_f32_mini.txt 2>&1
  LASE_PRECISION=auto scripts/run.sh > $R/run_auto_mini.txt 2>&1
  echo "demo done $(date -u +%H:%M:%S)"
  PRECISION=int8 scripts/default_model_eval.sh $run/export runs/eval/lase-mini-s15-int8 > $R/eval-mini-candidate-int8.txt 2>&1
  rm -rf $R/eval-lase-mini-candidate-int8 && cp -r runs/eval/lase-mini-s15-int8 $R/eval-lase-mini-candidate-int8
  echo "int8 eval done $(date -u +%H:%M:%S)"
fi
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Twenty-fourth session: waits for the two one-source arms (trained side by side, one
# thread each, logs runs/train-os{2,4}.log), then scores them by rule-run16os.md
# (scripts/score_arms.sh run16os), puts each arm beside the mixed-batch arm of the same seed
# and sample (the twenty-first session's; paired bootstrap, decides nothing), and adopts the
# rule's choice (scripts/adopt_default.sh; it reads the test sets only after the choice).
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/epyc-zen5-2026-11-29-s24
S21=bench/results/epyc-zen5-2026-11-28-s21/run16-arms
for a in 2 4; do
  until grep -q '^rc=' runs/train-os$a.log; do sleep 30; done
  grep -q '^rc=0' runs/train-os$a.log || { echo "arm $a failed: runs/train-os$a.log"; exit 1; }
  cp runs/train-os$a.log $O/run16os-arms/train-os$a.log
done
echo "arms trained $(date -u +%H:%M:%S)"
scripts/score_arms.sh run16os $O/run16os-arms > $O/run16os-arms/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
# One-source against mixed batches, same recipe, seed and sample (decides nothing).
for a in 2 4; do
  python3 scripts/dev_rule.py --base $S21/devscore-r16a$a-model-f16.json \
    $O/run16os-arms/devscore-r16osa$a-model-f16.json --min-gain 0 --bootstrap 2000
done > $O/run16os-arms/one_source_vs_mixed.txt
python3 scripts/dev_rule.py --base $S21/devscore-m-r16.json $O/run16os-arms/devscore-m-r16os.json \
  --min-gain 0 --bootstrap 2000 >> $O/run16os-arms/one_source_vs_mixed.txt
scripts/adopt_default.sh $O/run16os-arms/rule_outcome.txt run17 $O \
  bench/results/xeon-amx-2026-11-28-s19/eval-lase-base-run16/eval-tatoeba112.json
echo "adopted $(date -u +%H:%M:%S)"

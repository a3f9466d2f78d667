#!/usr/bin/env bash
# Twenty-seventh session: run 18's two further one-source arms (configs/lase-base-run18osb-mse{2,4}-cpu.toml)
# scored by rule-run18osb.md: scripts/score_arms.sh's own candidates, then, where runs/m-r18os
# exists, the pooled ones the rule adds (M4 = 0.5 m-r18os + 0.5 m-r18osb, run 18 + 0.3 / 0.5
# M4), then dev_rule.py over all of them at once (rule_outcome_pooled.txt: the rule's choice),
# and the choice adopted (scripts/adopt_default.sh; it reads the test sets only after it).
# The arms may be training in the background, side by side with one thread each:
#   lase --threads 1 train --config configs/lase-base-run18osb-mseA-cpu.toml --out runs/lase-base-run18osb-mseA-cpu --precision bf16 --quiet
# so it first waits until no `lase train` into either arm's folder runs; score_arms.sh then
# finishes any arm short of its last step itself. Rerunnable after a kill.
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/xeon-amx-2026-11-29-s27
A=$O/run18osb-arms
LASE=${LASE:-./target/release/lase}
. scripts/lib/base_dev_score.sh
mkdir -p $A
for a in 2 4; do
  while pgrep -f -- "--out runs/lase-base-run18osb-mse$a-cpu( |\$)" >/dev/null; do sleep 30; done
done
echo "no arm training $(date -u +%H:%M:%S)"
for a in 2 4; do [ ! -f runs/run18osb-mse$a.log ] || cp runs/run18osb-mse$a.log $A/train-r18osb$a.log; done
scripts/score_arms.sh run18osb $A > $A/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
outcome=$A/rule_outcome.txt
if [ -f runs/m-r18os/model.safetensors ]; then
  pool_arms runs/m-r18os runs/m-r18osb r18 $A
  # shellcheck disable=SC2046
  base_dev_rule $A $A/rule_outcome_pooled.txt $(ls $A/devscore-*.json | grep -v '/devscore-lase-base.json$')
  outcome=$A/rule_outcome_pooled.txt
  echo "pooled candidates scored $(date -u +%H:%M:%S)"
else
  echo "no runs/m-r18os on this machine: the pooled candidates are left out (rule-run18osb.md)"
fi
scripts/adopt_default.sh $outcome run19 $O \
  bench/results/epyc-zen5-2026-11-29-s25/eval-lase-base-run18/eval-tatoeba112.json
echo "adoption step done $(date -u +%H:%M:%S)"

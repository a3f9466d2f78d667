#!/usr/bin/env bash
# Twenty-fifth session, second round: waits for run 17's two further one-source arms
# (configs/lase-base-run17osb-mse{2,4}-cpu.toml, side by side with one thread each; logs
# runs/train-r17osb{2,4}.log), scores them by rule-run17osb.md: scripts/score_arms.sh's own
# candidates (its rule_outcome.txt covers only those), then the pooled ones the rule adds
# (M4 = 0.5 m-r17os + 0.5 m-r17osb, run 17 + 0.3 / 0.5 M4), then dev_rule.py over all of
# them at once (rule_outcome_pooled.txt: the rule's choice), and adopts that choice
# (scripts/adopt_default.sh; it reads the test sets only after it). Rerunnable after a kill.
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/epyc-zen5-2026-11-29-s25
A=$O/run17osb-arms
LASE=${LASE:-./target/release/lase}
. scripts/lib/base_dev_score.sh
mkdir -p $A
finished() { awk '/^start=/{s=NR} /^rc=/{r=NR} END{exit !(r>s)}' "$1"; }
for a in 2 4; do
  until [ -f runs/train-r17osb$a.log ] && finished runs/train-r17osb$a.log; do sleep 30; done
  [ "$(grep '^rc=' runs/train-r17osb$a.log | tail -n1)" = rc=0 ] \
    || { echo "arm $a failed: runs/train-r17osb$a.log"; exit 1; }
  cp runs/train-r17osb$a.log $A/train-r17osb$a.log
done
echo "arms trained $(date -u +%H:%M:%S)"
scripts/score_arms.sh run17osb $A > $A/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
[ -f runs/m-r17os/model.safetensors ] || { echo "no runs/m-r17os (scripts/score_arms.sh run17os builds it)"; exit 1; }
pool_arms runs/m-r17os runs/m-r17osb r17 $A
# shellcheck disable=SC2046
base_dev_rule $A $A/rule_outcome_pooled.txt $(ls $A/devscore-*.json | grep -v '/devscore-lase-base.json$')
echo "pooled candidates scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh $A/rule_outcome_pooled.txt run18 $O \
  bench/results/epyc-zen5-2026-11-29-s24/eval-lase-base-run17/eval-tatoeba112.json
echo "adopted $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Twenty-sixth session: waits for run 18's two one-source arms (configs/lase-base-run18os-mse{2,4}-cpu.toml,
# started side by side with one thread each:
#   lase --threads 1 train --config configs/lase-base-run18os-mseA-cpu.toml --out runs/lase-base-run18os-mseA-cpu --precision bf16 --quiet
# each writing runs/run18os-mseA.log and an "rc=N" line when it exits), then scores them by
# rule-run18os.md (scripts/score_arms.sh run18os) and adopts the rule's choice, if any
# (scripts/adopt_default.sh; it reads the test sets only after the choice).
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/xeon-amx-2026-11-29-s26
mkdir -p $O/run18os-arms
for a in 2 4; do
  until grep -q '^rc=' runs/run18os-mse$a.log 2>/dev/null; do sleep 30; done
  [ "$(grep '^rc=' runs/run18os-mse$a.log | tail -n1)" = rc=0 ] \
    || { echo "arm $a failed: runs/run18os-mse$a.log"; exit 1; }
done
echo "arms trained $(date -u +%H:%M:%S)"
scripts/score_arms.sh run18os $O/run18os-arms > $O/run18os-arms/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh $O/run18os-arms/rule_outcome.txt run19 $O \
  bench/results/epyc-zen5-2026-11-29-s25/eval-lase-base-run18/eval-tatoeba112.json
echo "adoption step done $(date -u +%H:%M:%S)"

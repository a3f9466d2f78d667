#!/usr/bin/env bash
# Twenty-fifth session: waits for run 17's two one-source arms (started in the twenty-fourth
# session, killed at step 150 when it ended, resumed here side by side with one thread each;
# logs runs/train-r17os{2,4}.log hold every start and each exit the shell lived to record),
# then scores them by
# bench/results/epyc-zen5-2026-11-29-s24/rule-run17os.md (scripts/score_arms.sh run17os) and
# adopts the rule's choice (scripts/adopt_default.sh; it reads the test sets only after it).
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/epyc-zen5-2026-11-29-s25
# The last exit line must follow the last start line (an earlier start was killed: rc=137).
finished() { awk '/^start=/{s=NR} /^rc=/{r=NR; v=$0} END{exit !(r>s)}' "$1"; }
for a in 2 4; do
  until finished runs/train-r17os$a.log; do sleep 30; done
  [ "$(grep '^rc=' runs/train-r17os$a.log | tail -n1)" = rc=0 ] \
    || { echo "arm $a failed: runs/train-r17os$a.log"; exit 1; }
  cp runs/train-r17os$a.log $O/run17os-arms/train-r17os$a.log
done
echo "arms trained $(date -u +%H:%M:%S)"
scripts/score_arms.sh run17os $O/run17os-arms > $O/run17os-arms/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh $O/run17os-arms/rule_outcome.txt run18 $O \
  bench/results/epyc-zen5-2026-11-29-s24/eval-lase-base-run17/eval-tatoeba112.json
echo "adopted $(date -u +%H:%M:%S)"

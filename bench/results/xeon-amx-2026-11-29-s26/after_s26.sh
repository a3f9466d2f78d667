#!/usr/bin/env bash
# Twenty-sixth session: scores run 18's two one-source arms (configs/lase-base-run18os-mse{2,4}-cpu.toml)
# by rule-run18os.md (scripts/score_arms.sh run18os) and adopts the rule's choice, if any
# (scripts/adopt_default.sh; it reads the test sets only after the choice).
# The arms may be training in the background, side by side with one thread each:
#   lase --threads 1 train --config configs/lase-base-run18os-mseA-cpu.toml --out runs/lase-base-run18os-mseA-cpu --precision bf16 --quiet
# so it first waits until no `lase train` into either arm's folder runs; score_arms.sh then
# finishes any arm short of its last step itself (it resumes from the checkpoint) and stops
# with the trainer's error if one fails.
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/xeon-amx-2026-11-29-s26
mkdir -p $O/run18os-arms
for a in 2 4; do
  while pgrep -f -- "--out runs/lase-base-run18os-mse$a-cpu( |\$)" >/dev/null; do sleep 30; done
done
echo "no arm training $(date -u +%H:%M:%S)"
scripts/score_arms.sh run18os $O/run18os-arms > $O/run18os-arms/score_arms.log 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh $O/run18os-arms/rule_outcome.txt run19 $O \
  bench/results/epyc-zen5-2026-11-29-s25/eval-lase-base-run18/eval-tatoeba112.json
echo "adoption step done $(date -u +%H:%M:%S)"

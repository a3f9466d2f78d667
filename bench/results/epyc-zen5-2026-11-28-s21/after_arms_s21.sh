#!/usr/bin/env bash
# Twenty-first session: waits for scripts/score_arms.sh run16 (started 22:56 UTC into
# run16-arms/score_arms.log) to print its rc line, then adopts the rule's choice.
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/epyc-zen5-2026-11-28-s21
until grep -q '^rc=' $O/run16-arms/score_arms.log; do sleep 20; done
grep -q '^rc=0' $O/run16-arms/score_arms.log || { echo "score_arms.sh failed"; exit 1; }
echo "arms scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh $O/run16-arms/rule_outcome.txt run17 $O \
  bench/results/xeon-amx-2026-11-28-s19/eval-lase-base-run16/eval-tatoeba112.json
echo "adopted $(date -u +%H:%M:%S)"

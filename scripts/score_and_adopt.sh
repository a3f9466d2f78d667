#!/usr/bin/env bash
# A round of two CPU arms after (or while) they train: scripts/score_arms.sh's candidates and
# rule, then scripts/adopt_default.sh of its choice (which reads the test sets only after it).
#   scripts/score_and_adopt.sh NAME OUT_DIR NEW_NAME PREVIOUS_TATOEBA_JSON
#     e.g. scripts/score_and_adopt.sh run18tcm bench/results/X run19 bench/results/Y/eval-tatoeba112.json
# Writes OUT_DIR/NAME-arms/ (score_arms.log, the dev scores, rule_outcome.txt) and
# adopt_default.sh's files in OUT_DIR. Rerunnable after a kill (both steps are).
set -euo pipefail
abs() { realpath -m -- "$1"; }
name=${1:?NAME, as in configs/lase-base-NAME-mse2-cpu.toml}
out=$(abs "${2:?OUT_DIR}")
new=${3:?NEW_NAME of the default if one is chosen, e.g. run19}
previous=$(abs "${4:?PREVIOUS_TATOEBA_JSON of the outgoing default}")
cd "$(dirname "$0")/.."
arms=$out/$name-arms
mkdir -p "$arms"
scripts/score_arms.sh "$name" "$arms" > "$arms/score_arms.log" 2>&1
echo "arms scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh "$arms/rule_outcome.txt" "$new" "$out" "$previous"
echo "adoption step done $(date -u +%H:%M:%S)"

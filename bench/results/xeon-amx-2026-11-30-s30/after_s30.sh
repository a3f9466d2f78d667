#!/usr/bin/env bash
# Thirtieth session: run 18's two arms of run18tcm's recipe at 1,000 steps
# (configs/lase-base-run18tcm1k-mse{2,4}-cpu.toml) scored by rule-run18tcm1k.md (scripts/score_arms.sh's
# candidates, no pooling) and the choice adopted (scripts/adopt_default.sh; it reads the test
# sets only after it), both through scripts/score_and_adopt.sh. The arms may be training in the
# background, side by side with one thread each:
#   lase --threads 1 train --config configs/lase-base-run18tcm1k-mseA-cpu.toml --out runs/lase-base-run18tcm1k-mseA-cpu --precision bf16 --quiet >> runs/run18tcm1k-mseA.log 2>&1
# score_arms.sh waits until no `lase train` into either arm's folder runs (and copies their
# logs), then finishes any arm short of its last step itself. Rerunnable after a kill.
set -euo pipefail
cd "$(dirname "$0")/../../.."
scripts/score_and_adopt.sh run18tcm1k bench/results/xeon-amx-2026-11-30-s30 run19 \
  bench/results/epyc-zen5-2026-11-29-s25/eval-lase-base-run18/eval-tatoeba112.json

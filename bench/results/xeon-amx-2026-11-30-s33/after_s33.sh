#!/usr/bin/env bash
# Thirty-third session: run 19's two arms of the recipe that made it
# (configs/lase-base-run19tcm1k-mse{2,4}-cpu.toml) scored by rule-run19tcm1k.md (scripts/score_arms.sh's
# candidates, no pooling) and the choice adopted as run 20 (scripts/adopt_default.sh; it reads
# the test sets only after it), both through scripts/score_and_adopt.sh. The arms may be
# training in the background, side by side with one thread each (each resumes from its
# checkpoint with the same command, in any session):
#   lase --threads 1 train --config configs/lase-base-run19tcm1k-mseA-cpu.toml --out runs/lase-base-run19tcm1k-mseA-cpu --precision bf16 --quiet >> runs/run19tcm1k-mseA.log 2>&1
# score_arms.sh waits until no `lase train` into either arm's folder runs (and copies their
# logs), then finishes any arm short of its last step itself. Rerunnable after a kill.
set -euo pipefail
cd "$(dirname "$0")/../../.."
scripts/score_and_adopt.sh run19tcm1k bench/results/xeon-amx-2026-11-30-s33 run20 \
  bench/results/xeon-amx-2026-11-30-s30/eval-lase-base-run19/eval-tatoeba112.json

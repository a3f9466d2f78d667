#!/usr/bin/env bash
# Sixteenth session, AVX2-only EPYC (Zen 3): `lase serve`'s forward-pass token budget at
# 64 clients under `auto` (= int8 on this CPU), interleaved: 256 (the CPU default), 512,
# 1024, twice, nothing else running (the lase-base arm's training stopped at a checkpoint).
# Each run prints its own in-process `lase embed` rate beside the served one.
# OUT (default: this folder) and BUDGETS (default "256 512 1024") let another session rerun it.
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=${OUT:-bench/results/epyc-zen3-2026-11-28-s16}
for round in 1 2; do
  for b in ${BUDGETS:-256 512 1024}; do
    echo "== round $round, --forward-batch-tokens $b, $(date -u +%H:%M:%S)"
    SERVE_ARGS="--forward-batch-tokens $b" LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 \
      > $R/serve_tokens_${b}_r$round.txt 2>&1
    grep -E '^offline|^\| 64 |64 clients:' $R/serve_tokens_${b}_r$round.txt
  done
done

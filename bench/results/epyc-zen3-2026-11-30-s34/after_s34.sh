#!/usr/bin/env bash
# Thirty-fourth session (AVX2-only Zen 3): round run19tcm1k restarted from step 0 here, since
# the thirty-third session's arms (AMX Xeon, bf16, steps 290/280) did not come to this
# machine. The same rule (bench/results/xeon-amx-2026-11-30-s33/rule-run19tcm1k.md) and the
# same scoring and adoption as bench/results/xeon-amx-2026-11-30-s33/after_s33.sh, with the
# raw outputs in this session's folder and the arms in f32 (the rule: f32 on a CPU without
# AVX512-BF16 or AMX; keep an arm's precision when it resumes). The arms, side by side:
#   lase --threads 1 train --config configs/lase-base-run19tcm1k-mseA-cpu.toml --out runs/lase-base-run19tcm1k-mseA-cpu --precision f32 --quiet >> runs/run19tcm1k-mseA.log 2>&1
# (A = 2, 4). score_arms.sh waits until no `lase train` into either arm's folder runs, then
# finishes any arm short of its last step itself. Rerunnable after a kill. On a CPU with
# AVX512-BF16 or AMX whose runs/ has no f32 arm, start the arms afresh in bf16 with after_s33.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LASE_TRAIN_PRECISION=${LASE_TRAIN_PRECISION:-f32} \
  scripts/score_and_adopt.sh run19tcm1k bench/results/epyc-zen3-2026-11-30-s34 run20 \
  bench/results/xeon-amx-2026-11-30-s30/eval-lase-base-run19/eval-tatoeba112.json

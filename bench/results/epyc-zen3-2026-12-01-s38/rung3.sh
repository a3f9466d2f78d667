#!/usr/bin/env bash
# Round run20tcm1k, the third rung (rule bench/results/epyc-zen3-2026-11-30-s34/rule-after-run19tcm1k.md,
# written before round run19tcm1k was scored): configs/lase-base-run20tcm1k-mse{2,4}-cpu.toml
# (seeds 62/63) from run 20, then its scoring and, if a candidate qualifies, its adoption as
# run 21 (scripts/score_and_adopt.sh). score_arms.sh trains the arms one after the other with
# two threads each, in f32 on a CPU without AVX512-BF16 or AMX and in bf16 on one with them
# (scripts/lib/cpu_bf16.sh; it prints which), each resuming from its checkpoint. It runs a copy
# of the release binary (runs/bin/lase-run20tcm1k), so that rebuilding the checkout does not
# change the binary a resumed arm runs. Run it again in every session until it prints
# "adoption step done" (after a kill, too). It first waits for this session's lase-mini round
# (mini3_s38.sh), which shares the two cores.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=bench/results/epyc-zen3-2026-12-01-s38
while pgrep -f 'mini3_s38\.sh' >/dev/null; do sleep 60; done
echo "rung3.sh: starting $(date -u +%H:%M:%S)"
# Each arm starts from models/lase-base: it must be run 20 until the second arm has begun.
if ! [ -f runs/lase-base-run20tcm1k-mse4-cpu/metrics.jsonl ]; then
  want=$(cut -d' ' -f1 bench/results/epyc-zen3-2026-11-30-s34/run19tcm1k-arms/chosen/model.safetensors.sha256)
  have=$(sha256sum < models/lase-base/model.safetensors | cut -d' ' -f1)
  [ "$have" = "$want" ] || { echo "rung3.sh: models/lase-base is not run 20 (sha256 $have)" >&2; exit 2; }
fi
mkdir -p runs/bin
[ -x runs/bin/lase-run20tcm1k ] || { cp target/release/lase runs/bin/lase-run20tcm1k.tmp && mv runs/bin/lase-run20tcm1k.tmp runs/bin/lase-run20tcm1k; }
LASE=runs/bin/lase-run20tcm1k scripts/score_and_adopt.sh run20tcm1k $here run21 \
  bench/results/epyc-zen3-2026-11-30-s34/eval-lase-base-run20/eval-tatoeba112.json

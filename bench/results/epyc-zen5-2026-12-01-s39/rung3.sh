#!/usr/bin/env bash
# Round run20tcm1k, the third rung (rule bench/results/epyc-zen3-2026-11-30-s34/rule-after-run19tcm1k.md,
# written before round run19tcm1k was scored), started afresh on this Zen 5 (thirty-ninth
# session): the Zen 3 of sessions 34-38, where bench/results/epyc-zen3-2026-12-01-s38/rung3.sh
# began it, is not this machine and its runs/ did not come with the checkout (the 2x arm had
# reached no checkpoint there). configs/lase-base-run20tcm1k-mse{2,4}-cpu.toml (seeds 62/63) from
# run 20, then scoring and, if a candidate qualifies, adoption as run 21
# (scripts/score_and_adopt.sh). score_arms.sh trains the arms one after the other with two
# threads each, in bf16 here (avx512_bf16; scripts/lib/cpu_bf16.sh decides and prints it),
# each resuming from its checkpoint. A copied binary (runs/bin/lase-run20tcm1k) runs them, so
# that rebuilding the checkout does not change what a resumed arm runs. Run it again in every
# session on this machine until it prints "adoption step done" (after a kill, too); pauses
# are recorded in arms_pauses.txt beside it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=bench/results/epyc-zen5-2026-12-01-s39
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

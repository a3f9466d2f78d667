#!/usr/bin/env bash
# Continues the shipped lase-mini on 2 CPU cores against the current default
# (configs/lase-mini-continue.toml; read its header). The teacher is models/lase-base
# followed by models/lase-mini's own 384 -> 256 output layer, so the student's 256-d space
# stays the one it was trained in (a PCA fitted anew on a new default gives another basis).
# Every step resumes or is skipped when its output is there: run the same command again
# after a kill. Extra arguments go to `lase distill` (--threads 2, --stop-after N, --set ...).
# Usage: scripts/continue_mini.sh [lase distill options...]
# It starts from models/lase-mini as it is in the checkout: the recorded run (docs/results.md,
# "lase-mini continued on 2 CPU cores") started from commit 6582833's models/lase-mini, which
# commit b7980d1 replaced by the run's result; to repeat it, check out 6582833 first.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
dir=runs/mini-continue
teacher=$dir/teacher
mkdir -p "$dir"
if [ ! -f "$teacher/modules.json" ]; then
  rm -rf "$teacher.partial"
  mkdir -p "$teacher.partial"
  cp -r models/lase-base/. "$teacher.partial/"
  rm -rf "$teacher.partial/2_Normalize" "$teacher.partial/checksums.sha256" "$teacher.partial/README.md"
  mkdir -p "$teacher.partial/2_Dense" "$teacher.partial/3_Normalize"
  cp models/lase-mini/2_Dense/config.json models/lase-mini/2_Dense/model.safetensors "$teacher.partial/2_Dense/"
  cp models/lase-mini/modules.json "$teacher.partial/modules.json"
  rm -rf "$teacher"
  mv -T "$teacher.partial" "$teacher"
fi
exec $LASE distill --config configs/lase-mini-continue.toml --out "$dir/distill" "$@"

#!/usr/bin/env bash
# Continues the shipped lase-mini on 2 CPU cores against the current default
# (configs/lase-mini-continue.toml; read its header). The teacher is models/lase-base
# followed by models/lase-mini's own 384 -> 256 output layer, so the student's 256-d space
# stays the one it was trained in (a PCA fitted anew on a new default gives another basis).
# Every step resumes or is skipped when its output is there: run the same command again
# after a kill. Extra arguments go to `lase distill` (--threads 2, --stop-after N, --set ...).
# Usage: scripts/continue_mini.sh [lase distill options...]
# LASE_MINI_PREPARE_ONLY=1 stops once the teacher folder is built (for scripts/gpu_train.sh pack).
# Another continuation (another student, head or recipe): LASE_MINI_CONFIG (the recipe; its
# init_from names the student and its teacher must be LASE_MINI_DIR/teacher), LASE_MINI_DIR
# (runs/mini-continue) and LASE_MINI_HEAD (the 384 -> 256 layer the teacher ends with;
# default models/lase-mini/2_Dense). The fresh cut from run 13 continued:
#   LASE_MINI_CONFIG=configs/lase-mini-fresh-continue.toml LASE_MINI_DIR=runs/mini-fresh-continue \
#   LASE_MINI_HEAD=runs/mini/teacher-pca256/2_Dense scripts/continue_mini.sh --threads 2
# It starts from models/lase-mini as it is in the checkout: the recorded run (docs/results.md,
# "lase-mini continued on 2 CPU cores") started from commit 6582833's models/lase-mini, which
# commit b7980d1 replaced by the run's result; to repeat it, check out 6582833 first.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
config=${LASE_MINI_CONFIG:-configs/lase-mini-continue.toml}
dir=${LASE_MINI_DIR:-runs/mini-continue}
head=${LASE_MINI_HEAD:-models/lase-mini/2_Dense}
teacher=$dir/teacher
# The teacher as the recipe trains it (through `lase recipe` when it extends a base).
. scripts/lib/recipe.sh
resolved=$(recipe_text "$config") || exit 2
grep -q "^teacher = \"$teacher\"" <<<"$resolved" ||
  { echo "continue_mini.sh: $config: its teacher must be \"$teacher\" (LASE_MINI_DIR/teacher)" >&2; exit 2; }
mkdir -p "$dir"
if [ ! -f "$teacher/modules.json" ]; then
  rm -rf "$teacher.partial"
  mkdir -p "$teacher.partial"
  cp -r models/lase-base/. "$teacher.partial/"
  rm -rf "$teacher.partial/2_Normalize" "$teacher.partial/checksums.sha256" "$teacher.partial/README.md"
  mkdir -p "$teacher.partial/2_Dense" "$teacher.partial/3_Normalize"
  cp "$head/config.json" "$head/model.safetensors" "$teacher.partial/2_Dense/"
  cp "$(dirname "$head")/modules.json" "$teacher.partial/modules.json"
  rm -rf "$teacher"
  mv -T "$teacher.partial" "$teacher"
fi
[ "${LASE_MINI_PREPARE_ONLY:-0}" = 1 ] && exit 0
exec $LASE distill --config "$config" --out "$dir/distill" "$@"

#!/usr/bin/env bash
# Adopts the candidate a dev rule chose as the default model, then reads the test sets (only
# after the choice) the way sessions 13 and 19 did by hand (their after_arms_s13.sh and
# after_arms_s19.sh in bench/results, which this replaces):
#   scripts/adopt_default.sh OUTCOME NAME OUT_DIR PREVIOUS_TATOEBA_JSON
#     OUTCOME    the rule's outcome file (scripts/score_arms.sh's rule_outcome.txt): its last
#                "chosen: TAG" line names runs/TAG; "chosen: none (...)" adopts nothing
#     NAME       the new default's name in the files written, e.g. run17
#     OUT_DIR    where the logs and evaluation folders go (bench/results/...)
#     PREVIOUS_TATOEBA_JSON  the outgoing default's eval-tatoeba112.json, for the per-language
#                comparison (scripts/tatoeba_compare.py)
# Steps, in order (a later step may be cut off by a session's end; rerunning repeats them):
#  1. runs/TAG/model.safetensors copied into models/lase-base (the copy's hash checked before
#     it replaces anything; then the weights and the folder's checksums.sha256 are renamed
#     into place back to back, the outgoing weights kept as model.safetensors.prev until the
#     folder verifies, and put back if it does not; copied-checksums-NAME.txt);
#  2. scripts/default_model_eval.sh of the adopted folder in f32 (the published numbers;
#     eval-NAME-summary.txt and the eval-lase-base-NAME folder) and Tatoeba per language
#     against the previous default;
#  3. the demo's calibration mine and its mine without a threshold, f32;
#  4. the README's main job (scripts/run.sh, LASE_MODEL = the adopted folder; it runs
#     target/release/lase) in f32 and under LASE_PRECISION=auto;
#  5. the test sets again in each of PRECISIONS (default "bf16 int8" on a CPU with
#     AVX512-BF16 or AMX, "int8" on one without, where bf16 is emulated slowly).
# The first step that fails stops the script with its status. LASE names the binary,
# LASE_DEFAULT_DIR the default's folder (models/lase-base) and LASE_RUNS_DIR the folder of
# runs and evaluations (runs), for the script's own tests.
set -euo pipefail
trap 'echo "adopt_default.sh: failed at line $LINENO (its log is in the file that step writes)" >&2' ERR
# Paths as the caller gave them, before the script moves to the repository root.
abs() { realpath -m -- "$1"; }
outcome=$(abs "${1:?OUTCOME file with a chosen line}")
name=${2:?NAME, e.g. run17}
out=$(abs "${3:?OUT_DIR}")
previous=$(abs "${4:?PREVIOUS_TATOEBA_JSON}")
[ -z "${LASE_DEFAULT_DIR:-}" ] || LASE_DEFAULT_DIR=$(abs "$LASE_DEFAULT_DIR")
[ -z "${LASE_RUNS_DIR:-}" ] || LASE_RUNS_DIR=$(abs "$LASE_RUNS_DIR")
cd "$(dirname "$0")/.."

. scripts/lib/cpu_bf16.sh
LASE=${LASE:-./target/release/lase}
if cpu_has_bf16; then
  precisions=${PRECISIONS:-bf16 int8}
else
  precisions=${PRECISIONS:-int8}
fi
default=${LASE_DEFAULT_DIR:-models/lase-base}
runs=${LASE_RUNS_DIR:-runs}
stamp() { echo "$1 $(date -u +%H:%M:%S)"; }

[ -f "$outcome" ] || { echo "adopt_default.sh: no outcome file $outcome" >&2; exit 2; }
[ -f "$previous" ] || { echo "adopt_default.sh: no previous Tatoeba JSON $previous" >&2; exit 2; }
chosen=$(tr -d '\r' < "$outcome" | sed -n 's/^chosen: //p' | tail -1)
case "$chosen" in
  "") echo "adopt_default.sh: $outcome has no 'chosen:' line" >&2; exit 2 ;;
  none|"none "*) echo "chosen: $chosen; $default stays"; exit 0 ;;
esac
m=$runs/$chosen
[ -f "$m/model.safetensors" ] || { echo "adopt_default.sh: no $m/model.safetensors" >&2; exit 2; }
mkdir -p "$out"
echo "chosen: $chosen -> $default ($name)"
echo "test sets after f32 also in: $precisions (PRECISIONS; bf16 only where the CPU has AVX512-BF16 or AMX)"

# 1. The weights and the checksum file that names them: everything written beside the
# folder's files first, then renamed into place back to back.
sums=$default/checksums.sha256
grep -q ' model\.safetensors$' "$sums" || { echo "adopt_default.sh: $sums names no model.safetensors" >&2; exit 2; }
trap 'rm -f "$default/model.safetensors.tmp" "$sums.tmp"' EXIT
new=$(sha256sum < "$m/model.safetensors" | cut -d' ' -f1)
cp "$m/model.safetensors" "$default/model.safetensors.tmp"
copied=$(sha256sum < "$default/model.safetensors.tmp" | cut -d' ' -f1)
[ "$copied" = "$new" ] || { echo "adopt_default.sh: the copy of $m/model.safetensors does not hash like it" >&2; exit 1; }
awk -v new="$new" '/ model\.safetensors$/ { print new "  model.safetensors"; next } { print }' "$sums" > "$sums.tmp"
cp "$sums" "$default/checksums.sha256.prev"
ln -f "$default/model.safetensors" "$default/model.safetensors.prev" 2>/dev/null \
  || cp "$default/model.safetensors" "$default/model.safetensors.prev"
mv "$default/model.safetensors.tmp" "$default/model.safetensors"
mv "$sums.tmp" "$sums"
if ! (cd "$default" && sha256sum -c checksums.sha256) > "$out/copied-checksums-$name.txt" 2>&1; then
  cat "$out/copied-checksums-$name.txt"
  mv "$default/model.safetensors.prev" "$default/model.safetensors"
  mv "$default/checksums.sha256.prev" "$sums"
  echo "adopt_default.sh: $default does not verify with the new weights: the outgoing ones are back" >&2
  exit 1
fi
rm -f "$default/model.safetensors.prev" "$default/checksums.sha256.prev"
cat "$out/copied-checksums-$name.txt"

# 2. The test sets in f32, and Tatoeba per language against the outgoing default.
eval_into() { # precision folder-suffix
  local dir=$runs/eval/lase-base-$name$2
  PRECISION=$1 scripts/default_model_eval.sh "$default" "$dir" > "$out/eval-$name$2-summary.txt" 2>&1
  rm -rf "$out/eval-lase-base-$name$2" && cp -r "$dir" "$out/eval-lase-base-$name$2"
}
eval_into f32 ""
python3 scripts/tatoeba_compare.py "$previous" "$runs/eval/lase-base-$name/eval-tatoeba112.json" \
  > "$out/tatoeba_previous_to_$name.txt"
stamp "f32 eval done"

# 3. The demo: calibration, and mining with no threshold.
D=data/demo/tico19-en-fr
logged() { # file command...
  local file=$1; shift
  { echo "# $*"; "$@"; } > "$file" 2>&1
}
logged "$out/calibration-lase-base-f32-$name.txt" "$LASE" mine --quiet --precision f32 --model "$default" \
  --src $D.calibration.en --tgt $D.calibration.fr --output "/tmp/cal-$name.tsv" --gold $D.calibration.gold.tsv
logged "$out/demo_no_threshold_f32_$name.txt" "$LASE" mine --quiet --precision f32 --model "$default" \
  --src $D.en --tgt $D.fr --output "/tmp/demo-$name.tsv" --gold $D.gold.tsv

# 4. The README's main job, as shipped and under auto.
LASE_MODEL="$default" scripts/run.sh > "$out/run_f32.txt" 2>&1
LASE_MODEL="$default" LASE_PRECISION=auto scripts/run.sh > "$out/run_auto.txt" 2>&1
stamp "run.sh done"

# 5. The other precisions.
for p in $precisions; do eval_into "$p" "-$p"; done
stamp "evals in $precisions done"

#!/usr/bin/env bash
# One round of continuing the shipped lase-mini against the default, as the lase-mini rules
# since 2026-11-29 describe it (bench/results/*/mini3-rule-*.md): the recipe trained to its last
# step by scripts/continue_mini.sh, then its best-dev model (exported to f16, as shipped) and
# the half-way soup of it with the shipped student judged by scripts/score_mini.sh --install,
# which reads the test sets only after the choice. The sessions' own drivers did these steps
# by hand (bench/results/epyc-zen5-2026-11-29-s23/mini3_s23b.sh, xeon-amx-2026-11-30-s33/mini3_s33.sh,
# epyc-zen3-2026-12-01-s38/mini3_s38.sh); this is their one copy.
#   scripts/mini_round.sh CONFIG TAG OUT_DIR [SHIPPED_EVAL]
#     CONFIG        the recipe (e.g. configs/lase-mini3-s38.toml); its `teacher = "RUN/teacher"`
#                   names the run's folder RUN (scripts/continue_mini.sh builds that teacher)
#     TAG           names the soup (runs/soup-TAG/soup-TAG) and the scores (score_mini.sh's TAG)
#     OUT_DIR       the logs, metrics and sizes; score_mini.sh's files in OUT_DIR/$(basename RUN)
#     SHIPPED_EVAL  the shipped student's scripts/default_model_eval.sh folder, for the
#                   per-language Tatoeba comparison (score_mini.sh's SHIPPED_EVAL)
# Steps, each resumed or skipped after a kill (run the same command again):
#  1. training (RUN/train.log), in LASE_TRAIN_PRECISION, else bf16 on a CPU with AVX512-BF16
#     or AMX and f32 on one without (scripts/lib/cpu_bf16.sh), printed with the reason; a
#     failed training stops the script (status 1, naming the log);
#     a run short of its recipe's last step stops here ("the rule waits", status 0);
#  2. RUN/best-model exported to RUN/export in f16, the soup made with `lase interpolate
#     --alpha 0.5 --dtype f16`, both folders' sizes (OUT_DIR/NAME-sizes.txt,
#     NAME = $(basename RUN));
#  3. scripts/score_mini.sh --install with LASE_RULE_ARGS (default "--min-gain 0.3 --bootstrap 2000").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run_progress.sh
. scripts/lib/cpu_bf16.sh
config=${1:?CONFIG, the recipe}
tag=${2:?TAG, e.g. s38}
out=${3:?OUT_DIR}
shipped_eval=${4:-}
[[ $tag =~ ^[A-Za-z0-9_-]+$ ]] || { echo "mini_round.sh: TAG '$tag': letters, digits, _ and - only" >&2; exit 2; }
[ -f "$config" ] || { echo "mini_round.sh: no recipe $config" >&2; exit 2; }
[ -z "$shipped_eval" ] || [ -d "$shipped_eval" ] ||
  { echo "mini_round.sh: no SHIPPED_EVAL folder $shipped_eval" >&2; exit 2; }
LASE=${LASE:-./target/release/lase}
export LASE
resolved=$(recipe_text "$config") || exit 2
run=$(sed -n 's/^teacher = "\(.*\)\/teacher"$/\1/p' <<<"$resolved" | head -1)
[ -n "$run" ] || { echo "mini_round.sh: $config: its teacher must be \"RUN/teacher\" (the folder continue_mini.sh builds)" >&2; exit 2; }
pick_training_precision
echo "training precision: $precision ($why)"
mkdir -p "$run" "$out"
echo "training starts $(date -u +%H:%M:%S) (log: $run/train.log)"
if ! LASE_MINI_CONFIG=$config LASE_MINI_DIR=$run \
    scripts/continue_mini.sh --threads 2 --precision "$precision" --quiet >> "$run/train.log" 2>&1; then
  echo "mini_round.sh: training failed: $run/train.log" >&2
  tail -5 "$run/train.log" >&2
  exit 1
fi
steps=$(recipe_steps "$config")
step=$(checkpoint_step "$run/distill")
echo "training ended $(date -u +%H:%M:%S) at step $step of ${steps:-?}"
if [ -z "$steps" ] || [ "$step" -lt "$steps" ] || ! [ -f "$run/distill/best-model/model.safetensors" ]; then
  echo "not finished: the rule waits"
  exit 0
fi
name=$(basename "$run")
cp "$run/distill/metrics.jsonl" "$out/$name-metrics.jsonl"
cp "$run/train.log" "$out/$name-train.log"
if ! [ -f "$run/export/checksums.sha256" ]; then
  rm -rf "$run/export.tmp"
  "$LASE" export --model "$run/distill/best-model" --output "$run/export.tmp" --dtype f16 2>&1 | tee "$out/export-$name.txt"
  rm -rf "$run/export" && mv "$run/export.tmp" "$run/export"
fi
soup=runs/soup-$tag/soup-$tag
if ! [ -f "$soup/modules.json" ]; then
  "$LASE" --threads 2 interpolate --model models/lase-mini --to "$run/export" --alpha 0.5 --dtype f16 \
    --output "$soup" 2>&1 | tee "$out/interpolate-soup-$tag.txt"
fi
du -b "$run/export" "$soup" > "$out/$name-sizes.txt"
echo "scoring starts $(date -u +%H:%M:%S)"
LASE_RULE_ARGS=${LASE_RULE_ARGS:---min-gain 0.3 --bootstrap 2000} SHIPPED_EVAL=$shipped_eval \
  scripts/score_mini.sh --install "$out/$name" "$tag" "$run" "$soup"
echo "all done $(date -u +%H:%M:%S)"

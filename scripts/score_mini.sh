#!/usr/bin/env bash
# Judges candidates for models/lase-mini by the rule the lase-mini rules have used since
# 2026-11-24 (bench/results/*/mini-rule*.md), then reads the test sets after the choice.
#   scripts/score_mini.sh [--install] OUT_DIR TAG CANDIDATE...
# A CANDIDATE is a model folder (sentence-transformers layout, as shipped) or a distillation
# run's folder (RUN/distill/ from scripts/continue_mini.sh or train_mini.sh), whose best-dev
# model is exported to RUN/export in f16 first, as shipped; a run that has not reached its
# recipe's last step is refused (its rule waits).
# Steps, each repeated or skipped safely after a kill:
#  1. `lase dev-score` of the shipped student and every candidate on all dev pairs of
#     configs/lase-mini.toml's split, into OUT_DIR/devscore-mini-TAG-NAME.json (NAME: the
#     candidate folder's name, or the run's; "shipped" for models/lase-mini);
#  2. scripts/dev_rule.py --min-gain 0.3 (LASE_RULE_ARGS replaces it): the candidate with the
#     highest mean of the four retrieval columns, if at least the shipped student's + 0.3,
#     is chosen (OUT_DIR/rule_outcome.txt);
#  3. after the choice, scripts/default_model_eval.sh (FLORES-6, STS, Tatoeba-112) of the
#     chosen candidate, or with none chosen of the best-scoring one, into OUT_DIR/eval-NAME/;
#     with SHIPPED_EVAL=DIR (the shipped student's default_model_eval.sh folder) the
#     per-language Tatoeba comparison, OUT_DIR/tatoeba_shipped_to_NAME.txt;
#  4. with --install and a chosen candidate: copied into models/lase-mini (sha256sum -c of its
#     checksums), the README's main job run in f32 and under LASE_PRECISION=auto
#     (OUT_DIR/run_f32.txt, run_auto.txt), and its test sets in int8 (OUT_DIR/eval-NAME-int8/,
#     per-language Tatoeba against f32: OUT_DIR/tatoeba_NAME_f32_to_int8.txt).
# Prints the rule's lines and, last, "chosen: NAME" or "chosen: none".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run_progress.sh
. scripts/lib/mini_dev_score.sh
trap 'echo "score_mini.sh: failed at line $LINENO (its outputs: ${out:-OUT_DIR})" >&2' ERR
install=0
if [ "${1:-}" = --install ]; then install=1; shift; fi
out=${1:?OUT_DIR}
tag=${2:?TAG, a name for this comparison}
shift 2
[ $# -ge 1 ] || { echo "score_mini.sh: no CANDIDATE" >&2; exit 2; }
[[ $tag =~ ^[A-Za-z0-9_-]+$ ]] || { echo "score_mini.sh: TAG '$tag': letters, digits, _ and - only" >&2; exit 2; }
LASE=${LASE:-./target/release/lase}
rule_args=${LASE_RULE_ARGS:---min-gain 0.3}
mkdir -p "$out"

# 0. Candidates as model folders: a run's best-dev model exported to f16 first.
names=() models=()
for c in "$@"; do
  c=${c%/}
  if [ -d "$c/distill" ]; then
    steps=$(recipe_steps "$c/distill/config.toml")
    step=$(checkpoint_step "$c/distill")
    if [ -z "$steps" ] || [ "$step" -lt "$steps" ] || ! [ -f "$c/distill/best-model/model.safetensors" ]; then
      echo "score_mini.sh: $c is at step $step of ${steps:-?}: not finished, the rule waits" >&2
      exit 3
    fi
    if ! [ -f "$c/export/checksums.sha256" ]; then
      rm -rf "$c/export.tmp"
      $LASE export --model "$c/distill/best-model" --output "$c/export.tmp" --dtype f16 2>&1 \
        | tee "$out/export-$(basename "$c").txt"
      rm -rf "$c/export" && mv "$c/export.tmp" "$c/export"
    fi
    models+=("$c/export")
  elif [ -f "$c/modules.json" ]; then
    models+=("$c")
  else
    echo "score_mini.sh: $c is neither a model folder (no modules.json) nor a run (no distill/)" >&2
    exit 2
  fi
  names+=("$(basename "$c")")
done
# Each candidate's dev scores are kept under its folder's name: two alike would share them.
dup=$(printf '%s\n' "${names[@]}" shipped | sort | uniq -d)
[ -z "$dup" ] || { echo "score_mini.sh: candidates named alike (or 'shipped'): $dup" >&2; exit 2; }

# 1. Dev scores, the shipped student scored again by the same binary.
mini_dev_score models/lase-mini "$out/devscore-mini-$tag-shipped.json"
jsons=()
for i in "${!models[@]}"; do
  mini_dev_score "${models[$i]}" "$out/devscore-mini-$tag-${names[$i]}.json"
  jsons+=("$out/devscore-mini-$tag-${names[$i]}.json")
done

# 2. The rule.
# shellcheck disable=SC2086
python3 scripts/dev_rule.py --base "$out/devscore-mini-$tag-shipped.json" "${jsons[@]}" $rule_args \
  | tee "$out/rule_outcome.txt"
chosen=$(sed -n "s/^chosen: mini-$tag-\(.*\)$/\1/p" "$out/rule_outcome.txt")

# 3. Test sets, after the choice: the chosen candidate, or the best-scoring one.
read_name=$chosen
if [ -z "$read_name" ]; then
  # The retrieval mean as the rule computes it (scripts/dev_rule.py's measure).
  read_name=$(python3 - "$tag" "${jsons[@]}" <<'PY'
import sys
sys.path.insert(0, "scripts")
from dev_rule import measure
tag, files = sys.argv[1], sys.argv[2:]
best = max((measure(f, None) for f in files), key=lambda row: row["mean"])
print(best["tag"][len(f"mini-{tag}-"):])
PY
)
fi
read_model=
for i in "${!names[@]}"; do [ "${names[$i]}" = "$read_name" ] && read_model=${models[$i]}; done
echo "test sets read after the choice for $read_name ($read_model)"
scripts/default_model_eval.sh "$read_model" "runs/eval/lase-mini-$tag-$read_name" > "$out/eval-$read_name-f32.txt" 2>&1
rm -rf "$out/eval-$read_name" && cp -r "runs/eval/lase-mini-$tag-$read_name" "$out/eval-$read_name"
if [ -n "${SHIPPED_EVAL:-}" ]; then
  python3 scripts/tatoeba_compare.py "$SHIPPED_EVAL/eval-tatoeba112.json" \
    "$out/eval-$read_name/eval-tatoeba112.json" > "$out/tatoeba_shipped_to_$read_name.txt"
fi

# 4. Install a chosen candidate.
if [ "$install" = 1 ] && [ -n "$chosen" ]; then
  cp -r "$read_model/." models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > "$out/copied-checksums.txt" 2>&1
  scripts/run.sh > "$out/run_f32.txt" 2>&1
  LASE_PRECISION=auto scripts/run.sh > "$out/run_auto.txt" 2>&1
  PRECISION=int8 scripts/default_model_eval.sh "$read_model" "runs/eval/lase-mini-$tag-$read_name-int8" \
    > "$out/eval-$read_name-int8.txt" 2>&1
  rm -rf "$out/eval-$read_name-int8" && cp -r "runs/eval/lase-mini-$tag-$read_name-int8" "$out/eval-$read_name-int8"
  python3 scripts/tatoeba_compare.py "$out/eval-$read_name/eval-tatoeba112.json" \
    "$out/eval-$read_name-int8/eval-tatoeba112.json" > "$out/tatoeba_${read_name}_f32_to_int8.txt"
fi
echo "chosen: ${chosen:-none}"

#!/usr/bin/env bash
# Finishes and scores a pair of CPU continuations of the default (the MSE-2x and MSE-4x arms
# of configs/lase-base-NAME-mse{2,4}-cpu.toml), the way the rules for runs 14 and 15 judged
# them, and prints the rule's choice. It does not copy anything into models/:
# scripts/adopt_default.sh OUT_DIR/rule_outcome.txt does that, then reads the test sets (after
# the choice).
#   scripts/score_arms.sh NAME OUT_DIR     e.g. scripts/score_arms.sh run15 bench/results/X/run15-arms
# Steps, each resumed or repeated safely after a kill:
#  0. waits while a `lase train` writes into either arm's folder (arms trained in the background);
#  1. each arm trained to its last step (`lase train` resumes from its checkpoint), in
#     LASE_TRAIN_PRECISION (default: bf16 on a CPU with AVX512-BF16 or AMX, f32 on one
#     without, where bf16 is emulated and slower; scripts/lib/cpu_bf16.sh decides and the
#     script prints which);
#  2. each arm's last model (and its best-dev model where that differs) exported to f16, as
#     shipped; M = 0.5 A2 + 0.5 A4; the default + 0.3 / 0.5 of the way to M;
#  3. `lase dev-score` of the default and every candidate (configs/lase-base-non-pivot-cpu-anneal.toml's
#     dev split, all pairs, agreement with the teacher, JSON);
#  4. scripts/dev_rule.py: retrieval mean >= the default's + 0.3, agreement >= the default's - 0.5,
#     and the WMT-news languages' dev group >= the default's (LASE_RULE_ARGS replaces these);
#     after its choice it prints each difference's paired bootstrap over the dev labels
#     (--bootstrap 2000: the spread the dev split's languages alone give; the choice is unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run_progress.sh
. scripts/lib/base_dev_score.sh
. scripts/lib/cpu_bf16.sh
name=${1:?NAME, as in configs/lase-base-NAME-mse2-cpu.toml}
out=${2:?OUT_DIR for the dev scores and the outcome}
LASE=${LASE:-./target/release/lase}
pick_training_precision
echo "training precision: $precision ($why)"
mkdir -p "$out"
tag=${name/run/r}
# An arm may be training in the background (side by side, one thread each: `lase --threads 1
# train ... --out runs/lase-base-NAME-mseA-cpu --quiet >> runs/NAME-mseA.log`): wait until no
# trainer writes into either arm's folder, rather than start a second one there, then keep
# each such log beside the scores (OUT_DIR/train-TAGA.log).
for a in 2 4; do
  while pgrep -f -- "--out runs/lase-base-$name-mse$a-cpu( |\$)" >/dev/null; do sleep 30; done
done
echo "no arm training $(date -u +%H:%M:%S)"
for a in 2 4; do [ ! -f "runs/$name-mse$a.log" ] || cp "runs/$name-mse$a.log" "$out/train-$tag$a.log"; done
cands=()
for a in 2 4; do
  config=configs/lase-base-$name-mse$a-cpu.toml
  run=runs/lase-base-$name-mse$a-cpu
  [ -f "$config" ] || { echo "score_arms.sh: no $config" >&2; exit 2; }
  steps=$(recipe_steps "$config")
  step=$(checkpoint_step "$run")
  [ -n "$steps" ] || { echo "score_arms.sh: $config has no 'steps = N' line" >&2; exit 2; }
  if [ "$step" -lt "$steps" ] || ! [ -f "$run/model/model.safetensors" ]; then
    $LASE --threads 2 train --config "$config" --out "$run" --precision "$precision"
  fi
  cp "$run/metrics.jsonl" "$out/metrics-$name-mse$a-cpu.jsonl"
  $LASE export --model "$run/model" --output "runs/${tag}a$a-model-f16" --dtype f16 2>&1 | tee "$out/export-${tag}a$a-model.txt"
  cands+=("runs/${tag}a$a-model-f16")
  if ! cmp -s "$run/best-model/model.safetensors" "$run/model/model.safetensors"; then
    $LASE export --model "$run/best-model" --output "runs/${tag}a$a-best-f16" --dtype f16 2>&1 | tee "$out/export-${tag}a$a-best.txt"
    cands+=("runs/${tag}a$a-best-f16")
  fi
done
$LASE interpolate --model "runs/${tag}a2-model-f16" --to "runs/${tag}a4-model-f16" --alpha 0.5 \
  --output "runs/m-$tag" 2>&1 | tee "$out/interpolate-m-$tag.txt"
cands+=("runs/m-$tag")
for x in 0.3 0.5; do
  $LASE interpolate --model models/lase-base --to "runs/m-$tag" --alpha $x \
    --output "runs/interp-$tag-m-$x" 2>&1 | tee "$out/interpolate-$tag-m-$x.txt"
  cands+=("runs/interp-$tag-m-$x")
done
for m in models/lase-base "${cands[@]}"; do base_dev_score "$m" "$out"; done
# shellcheck disable=SC2046
base_dev_rule "$out" "$out/rule_outcome.txt" \
  $(for m in "${cands[@]}"; do echo "$out/devscore-$(basename "$m").json"; done)

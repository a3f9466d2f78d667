#!/usr/bin/env bash
# Run 20 continued with word pieces for the scripts its vocabulary reads letter by letter
# (configs/lase-base-run20nonlatin-mse2-cpu.toml, whose header holds the rule, written before it
# trained), then scored on the dev split the way the rounds are (scripts/lib/base_dev_score.sh,
# base run 20) and, if a candidate qualifies, adopted as run 21 (scripts/adopt_default.sh, which
# reads the test sets only after the choice). Resumable: run it again after a kill.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=bench/results/epyc-zen5-2026-12-01-s39
out=$here/run20nonlatin-arm
mkdir -p "$out" runs/bin
. scripts/lib/run_progress.sh
. scripts/lib/base_dev_score.sh
. scripts/lib/cpu_bf16.sh
[ -x runs/bin/lase-run20nonlatin ] || { cp target/release/lase runs/bin/lase-run20nonlatin.tmp && mv runs/bin/lase-run20nonlatin.tmp runs/bin/lase-run20nonlatin; }
export LASE=runs/bin/lase-run20nonlatin
config=configs/lase-base-run20nonlatin-mse2-cpu.toml
run=runs/lase-base-run20nonlatin-mse2-cpu
pick_training_precision
echo "training precision: $precision ($why) $(date -u +%H:%M:%S)"
if [ "$(checkpoint_step "$run")" -lt "$(recipe_steps "$config")" ] || ! [ -f "$run/model/model.safetensors" ]; then
  # Models are run 20 until the arm has built its starting model.
  if ! [ -f "$run/init/EXTENDED" ]; then
    want=$(cut -d' ' -f1 bench/results/epyc-zen3-2026-11-30-s34/run19tcm1k-arms/chosen/model.safetensors.sha256)
    have=$(sha256sum < models/lase-base/model.safetensors | cut -d' ' -f1)
    [ "$have" = "$want" ] || { echo "nonlatin_s39.sh: models/lase-base is not run 20 (sha256 $have)" >&2; exit 2; }
  fi
  $LASE --threads 2 train --config "$config" --out "$run" --precision "$precision" > "$out/train.log" 2>&1
fi
echo "trained $(date -u +%H:%M:%S)"
cp "$run/metrics.jsonl" "$out/metrics-run20nonlatin-mse2-cpu.jsonl"
cp "$run/init/EXTENDED" "$out/EXTENDED.json"
cands=()
$LASE export --model "$run/model" --output runs/r20nla2-model-f16 --dtype f16 2>&1 | tee "$out/export-r20nla2-model.txt"
cands+=(runs/r20nla2-model-f16)
if ! cmp -s "$run/best-model/model.safetensors" "$run/model/model.safetensors"; then
  $LASE export --model "$run/best-model" --output runs/r20nla2-best-f16 --dtype f16 2>&1 | tee "$out/export-r20nla2-best.txt"
  cands+=(runs/r20nla2-best-f16)
fi
for m in models/lase-base "${cands[@]}"; do base_dev_score "$m" "$out"; echo "scored $m $(date -u +%H:%M:%S)"; done
# shellcheck disable=SC2046
base_dev_rule "$out" "$out/rule_outcome.txt" $(for m in "${cands[@]}"; do echo "$out/devscore-$(basename "$m").json"; done)
echo "arm scored $(date -u +%H:%M:%S)"
scripts/adopt_default.sh "$out/rule_outcome.txt" run21 "$here" \
  bench/results/epyc-zen3-2026-11-30-s34/eval-lase-base-run20/eval-tatoeba112.json
echo "adoption step done $(date -u +%H:%M:%S)"

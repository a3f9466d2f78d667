#!/usr/bin/env bash
# Thirty-seventh session: round run19tcm1k's arms finished and were scored here (score_arms.sh,
# run19tcm1k-arms/rule_outcome.txt) too late in the session for adopt_default.sh's evaluations
# and the documents. This script is the adoption step, for whichever session runs it, on any
# machine: the chosen candidate's weights are in runs/TAG when this Zen 3's runs/ is there, and
# otherwise in run19tcm1k-arms/chosen/ (committed, with its sha256), copied into runs/TAG after
# the hash is checked. Then scripts/adopt_default.sh as after_s34.sh would have run it (the test
# sets only after the choice; bf16 only on a CPU with AVX512-BF16 or AMX). Rerunnable.
set -euo pipefail
here=bench/results/epyc-zen3-2026-11-30-s34
cd "$(dirname "$0")/../../.."
outcome=$here/run19tcm1k-arms/rule_outcome.txt
chosen=$(tr -d '\r' < "$outcome" | sed -n 's/^chosen: //p' | tail -1)
case "$chosen" in
  "") echo "after_s37.sh: $outcome has no 'chosen:' line" >&2; exit 2 ;;
  none|"none "*) echo "chosen: $chosen; models/lase-base (run 19) stays"; exit 0 ;;
esac
if ! [ -f "runs/$chosen/model.safetensors" ]; then
  staged=$here/run19tcm1k-arms/chosen
  (cd "$staged" && sha256sum -c model.safetensors.sha256)
  mkdir -p "runs/$chosen"
  cp "$staged/model.safetensors" "runs/$chosen/model.safetensors.tmp"
  mv "runs/$chosen/model.safetensors.tmp" "runs/$chosen/model.safetensors"
fi
scripts/adopt_default.sh "$outcome" run20 "$here" \
  bench/results/xeon-amx-2026-11-30-s30/eval-lase-base-run19/eval-tatoeba112.json

#!/usr/bin/env bash
# Sixteenth session: builds the averaged lase-mini candidates of mini-soup-rule.md (beside
# this file) and judges them with scripts/score_mini.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=bench/results/epyc-zen3-2026-11-28-s16
lase=./target/release/lase
s14last=runs/mini-continue-s14/distill/model
s15best=runs/mini-continue-s15/export
s15last=runs/mini-continue-s15/distill/model
mk() { # output model to alpha dtype
  [ -f "$1/modules.json" ] && return 0
  $lase --threads 2 interpolate --model "$2" --to "$3" --alpha "$4" --dtype "$5" --output "$1.tmp" 2>&1 | tee -a $R/soup_interpolate.txt
  rm -rf "$1" && mv "$1.tmp" "$1"
}
mkdir -p runs/soup
mk runs/soup/soup2 models/lase-mini $s15best 0.5 f16
mk runs/soup/pair-shipped-s14last models/lase-mini $s14last 0.5 f32
mk runs/soup/soup3 runs/soup/pair-shipped-s14last $s15best 0.3333333333333333 f16
mk runs/soup/pair-s15 $s15best $s15last 0.5 f32
mk runs/soup/soup4 runs/soup/pair-shipped-s14last runs/soup/pair-s15 0.5 f16
SHIPPED_EVAL=bench/results/epyc-zen3-2026-11-27-s15/eval-lase-mini-candidate \
  scripts/score_mini.sh --install $R/mini-soup soup runs/soup/soup2 runs/soup/soup3 runs/soup/soup4

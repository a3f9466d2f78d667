#!/usr/bin/env bash
# Reproduces the distillation ablation tables of docs/results.md (issue 6) on a 2-core CPU.
# Every row trains 300 steps x 128 pairs and is evaluated on Tatoeba's XTREME-36
# languages (eval-tatoeba.json) and STS mono/cross-lingual (eval.json, written last); rows that distill reuse runs/lase-small's cached teacher embeddings
# (hard-linked), so run scripts/ems_experiments.sh and the lase-small recipe first.
# Runs resume if killed (run the script again). Usage: scripts/distill_ablations.sh [TABLE...]
# with TABLE among lealla, shape, soft (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
XTREME36=afr,ara,bul,ben,deu,ell,spa,est,eus,pes,fin,fra,heb,hin,hun,ind,ita,jpn,jav,kat,kaz,kor,mal,mar,nld,por,rus,swh,tam,tel,tha,tgl,tur,urd,vie,cmn
TEACHER_CACHE=runs/lase-small/teacher-target.npy

row() { # table variant
  local config="configs/ablation/$1/$2.toml" out="runs/$1-$2"
  mkdir -p "$out"
  if grep -q '^\[objective.distillation\]' "$config" && [ ! -e "$out/teacher-target.npy" ]; then
    ln "$TEACHER_CACHE" "$out/teacher-target.npy" 2>/dev/null || cp "$TEACHER_CACHE" "$out/teacher-target.npy"
  fi
  if [ ! -f "$out/eval.json" ]; then
    $LASE train --config "$config" --out "$out" --quiet
    $LASE eval --model "$out/model" --suite tatoeba --langs "$XTREME36" --quiet \
      --json "$out/eval-tatoeba.json" --report "$out/eval-tatoeba.md"
    $LASE eval --model "$out/model" --suite sts --quiet --json "$out/eval.tmp.json" --report "$out/eval-sts.md"
    mv "$out/eval.tmp.json" "$out/eval.json"
  fi
}

tables=("$@")
[ ${#tables[@]} -gt 0 ] || tables=(lealla shape soft)
for table in "${tables[@]}"; do
  case $table in
    lealla) for v in ams fd ld ams-fd ams-ld ams-fd-ld; do row lealla "$v"; done ;;
    shape) for v in wide-shallow thin-shallow; do row shape "$v"; done ;;  # thin-deep = lealla/ams
    soft) for v in hard-contrastive mse priority priority-tcm; do row soft "$v"; done ;;
    *) echo "unknown table $table (lealla, shape, soft)" >&2; exit 2 ;;
  esac
done

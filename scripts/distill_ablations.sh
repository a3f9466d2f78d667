#!/usr/bin/env bash
# Reproduces the distillation ablation tables of docs/results.md (issue 6) on a 2-core CPU.
# Every row trains 300 steps x 128 pairs and is evaluated by scripts/ablation_eval.sh
# (Tatoeba XTREME-36, STS mono/cross-lingual, FLORES xx-eng + non-English, SIB zero-shot);
# rows that distill reuse runs/lase-small's cached teacher embeddings
# (hard-linked), so run scripts/ems_experiments.sh and the lase-small recipe first.
# Runs resume if killed (run the script again). Usage: scripts/distill_ablations.sh [TABLE...]
# with TABLE among lealla, lealla-readings, shape, soft, soft-teacher-width, soft-multilingual
# (default: all).
# lealla-readings (issue 15 items 7-8): FD at beta = 1e3, AMS + FD at 1.3 and 1e3, AMS + LD at T = 10 and T = 1.
# The soft-contrastive tables (soft, soft-teacher-width, soft-multilingual) evaluate each
# row's best-dev checkpoint (best-model/: early stopping on the dev split, as
# soft-contrastive.txt selects its checkpoints; issue 15 item 15); the others the last one.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
. scripts/lib/recipe.sh
TEACHER_CACHE=runs/lase-small/teacher-target.npy

link() { ln "$1" "$2" 2>/dev/null || cp "$1" "$2"; }

row() { # table variant [run whose teacher caches this row shares]
  local config="configs/ablation/$1/$2.toml" out="runs/$1-$2" donor=${3:-}
  mkdir -p "$out"
  local minilm=0
  local resolved # the recipe as it trains (scripts/lib/recipe.sh)
  resolved=$(recipe_text "$config")
  grep -q '^teacher = "models/all-MiniLM-L6-v2"' <<<"$resolved" && minilm=1
  if [ $minilm = 1 ] && [ -e "$TEACHER_CACHE" ] && [ ! -e "$out/teacher-target.npy" ]; then
    link "$TEACHER_CACHE" "$out/teacher-target.npy"
  fi
  for side in source target; do
    if [ -n "$donor" ] && [ -e "runs/$donor/teacher-$side.npy" ] && [ ! -e "$out/teacher-$side.npy" ]; then
      link "runs/$donor/teacher-$side.npy" "$out/teacher-$side.npy"
    fi
  done
  # A finished run resumes as a no-op (it exports its model again), so skip it outright.
  [ -f "$out/model/config.json" ] && [ -f "$out/eval.json" ] || $LASE train --config "$config" --out "$out" --quiet
  # Without runs/lase-small, the first distilling row's cache becomes the shared one.
  if [ $minilm = 1 ] && [ ! -e "$TEACHER_CACHE" ] && [ -e "$out/teacher-target.npy" ]; then
    mkdir -p "$(dirname "$TEACHER_CACHE")"
    link "$out/teacher-target.npy" "$TEACHER_CACHE"
  fi
  LASE=$LASE scripts/ablation_eval.sh "$out/$checkpoint" "$out"
}
checkpoint=model

tables=("$@")
[ ${#tables[@]} -gt 0 ] || tables=(lealla lealla-readings shape soft soft-teacher-width soft-multilingual)
for table in "${tables[@]}"; do
  case $table in soft*) checkpoint=best-model ;; *) checkpoint=model ;; esac
  case $table in
    lealla) for v in ams fd ld ams-fd ams-ld ams-fd-ld; do row lealla "$v"; done ;;
    lealla-readings) for v in fd-beta-1e3 ams-fd-beta-1.3 ams-ld-t10 ams-fd-beta-1e3 ams-ld-t1; do row lealla "$v"; done ;;
    shape) for v in wide-shallow thin-shallow; do row shape "$v"; done ;;  # thin-deep = lealla/ams
    soft) for v in hard-contrastive mse priority priority-tcm; do row soft "$v"; done ;;
    soft-teacher-width) # issue 15 item 9: MSE with the teacher brought to the student's 256-d by PCA
      LASE=$LASE scripts/minilm_pca256.sh
      row soft mse-teacher-width ;;
    soft-multilingual)
      row soft-multilingual priority
      for v in average priority-centred average-centred; do row soft-multilingual "$v" soft-multilingual-priority; done ;;
    *) echo "unknown table $table (lealla, lealla-readings, shape, soft, soft-teacher-width, soft-multilingual)" >&2; exit 2 ;;
  esac
done

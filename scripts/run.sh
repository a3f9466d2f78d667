#!/usr/bin/env bash
# The main job on a fresh machine: set up (libtorch, the English teacher), build lase, then
# mine parallel sentences from the bundled demo (data/demo: 400 English-French TICO-19
# pairs hidden among 400 + 400 sentences without a translation) with lase's default model,
# its small student lase-mini, and the English teacher lase-base was distilled from, and
# print the three models' precision and recall against the known pairs side by side.
#
# The margin threshold is model-specific (LASER's 1.06 fits LASER's score scale), so it
# is chosen first for each model on the demo's disjoint calibration split, then applied.
#
# The demo runs in f32 (LASE_PRECISION, default f32), so that it prints the same numbers
# on every CPU: lase's own default, --precision auto, computes in bf16 or int8 where the CPU
# runs them fast, and the calibrated threshold moves with the last digits of the scores
# (LASE_PRECISION=auto scripts/run.sh: README.md shows what it printed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
MODEL=${LASE_MODEL:-models/lase-base}
SMALL=${LASE_SMALL_MODEL:-models/lase-mini}
TEACHER=models/all-MiniLM-L6-v2
DEMO=data/demo/tico19-en-fr
PRECISION=${LASE_PRECISION:-f32}
mkdir -p out
lase=target/release/lase

mine_demo() { # MODEL TAG -> prints "precision recall F1 threshold" of the demo
  local model=$1 tag=$2 calibration threshold result
  calibration=$($lase mine --quiet --precision "$PRECISION" --model "$model" --src "$DEMO.calibration.en" --tgt "$DEMO.calibration.fr" \
    --output "out/demo-calibration-$tag.tsv" --gold "$DEMO.calibration.gold.tsv")
  threshold=$(echo "$calibration" | sed -n 's/.*--threshold \([0-9.]*\).*/\1/p')
  result=$($lase mine --quiet --precision "$PRECISION" --model "$model" --src "$DEMO.en" --tgt "$DEMO.fr" --output "out/demo-pairs-$tag.tsv" \
    --threshold "$threshold" --gold "$DEMO.gold.tsv" | grep "against")
  echo "$result" | sed -n "s/.*precision \([0-9.]*%\).*recall \([0-9.]*%\), F1 \([0-9.]*%\).*/\1 \2 \3 $threshold/p"
}

echo "== mining $DEMO.en x $DEMO.fr (ratio margin; each model's threshold calibrated on $DEMO.calibration.*; --precision $PRECISION)"
printf '%-28s %10s %8s %8s %10s\n' model precision recall F1 threshold
for m in "$MODEL" "$SMALL" "$TEACHER"; do
  tag=$(basename "$m")
  read -r p r f t < <(mine_demo "$m" "$tag")
  printf '%-28s %10s %8s %8s %10s\n' "$m" "$p" "$r" "$f" "$t"
done
echo "== the three best-scored pairs of $MODEL (score, English, French) in out/demo-pairs-$(basename "$MODEL").tsv"
head -3 "out/demo-pairs-$(basename "$MODEL").tsv" | cut -c1-200

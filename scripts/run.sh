#!/usr/bin/env bash
# The main job on a fresh machine: set up (libtorch, the English teacher), build lase, then
# mine parallel sentences from the bundled demo (data/demo: 400 English-French TICO-19
# pairs hidden among 400 + 400 sentences without a translation) with lase's default model
# models/lase-small, and print precision and recall against the known pairs.
#
# The margin threshold is model-specific (LASER's 1.06 fits LASER's score scale), so it
# is chosen first on the demo's disjoint calibration split, then applied to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
MODEL=${LASE_MODEL:-models/lase-small}
DEMO=data/demo/tico19-en-fr
mkdir -p out
lase=target/release/lase

echo "== calibrating the ratio-margin threshold of $MODEL on $DEMO.calibration.*"
calibration=$($lase mine --quiet --model "$MODEL" --src "$DEMO.calibration.en" --tgt "$DEMO.calibration.fr" \
  --output out/demo-calibration.tsv --gold "$DEMO.calibration.gold.tsv")
echo "$calibration"
threshold=$(echo "$calibration" | sed -n 's/.*--threshold \([0-9.]*\).*/\1/p')

echo "== mining $DEMO.en x $DEMO.fr with threshold $threshold"
$lase mine --quiet --model "$MODEL" --src "$DEMO.en" --tgt "$DEMO.fr" --output out/demo-pairs.tsv \
  --threshold "$threshold" --gold "$DEMO.gold.tsv" | grep -v "best F1"
echo "== the three best-scored pairs (score, English, French) of out/demo-pairs.tsv"
head -3 out/demo-pairs.tsv | cut -c1-200

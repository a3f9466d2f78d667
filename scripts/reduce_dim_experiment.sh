#!/usr/bin/env bash
# Dimension reduction on a frozen encoder (lealla.txt Table 6's question, with PCA instead of
# a trained layer): models/lase-small 256-d reduced to 128, 64 and 32 dimensions by
# `lase reduce-dim`, fitted on 20,000 training sentences (never test sentences: a
# language-balanced sample of the Tatoeba-Challenge training folder, both sides), then
# Tatoeba (112 languages) for each. Writes runs/reduce-dim/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=runs/reduce-dim
mkdir -p "$out"
python3 - "$out/sample.txt" <<'PY'
import gzip, glob, sys
files = sorted(f for f in glob.glob("../shared/data/tatoeba-challenge-eng-train/*/*.gz") if not f.endswith(".labels.gz"))
per_file = 20000 // len(files) + 1
lines = []
for f in files:
    with gzip.open(f, "rt", encoding="utf-8") as h:
        lines += [l.strip() for _, l in zip(range(per_file * 7), h) if l.strip()][::7][:per_file]
open(sys.argv[1], "w", encoding="utf-8").write("\n".join(lines[:20000]) + "\n")
print(f"{min(len(lines), 20000)} sample sentences from {len(files)} files")
PY
lase=target/release/lase
$lase eval --quiet --model models/lase-small --suite tatoeba --json "$out/256.json" | head -3
for k in 128 64 32; do
  $lase reduce-dim --model models/lase-small --to "$k" --sample "$out/sample.txt" --output "$out/lase-small-$k"
  $lase eval --quiet --model "$out/lase-small-$k" --suite tatoeba --json "$out/$k.json" | head -3
done
# lealla.txt 3.2 itself: a trained 256 -> k dense head on the frozen encoder (the 128 recipe
# with its output width changed for 64 and 32).
for k in 128 64 32; do
  $lase train --quiet --config configs/ablation/lase-small-head128.toml --set "model.output_dim=$k" \
    --out "runs/lase-small-head$k"
  $lase eval --quiet --model "runs/lase-small-head$k/model" --suite tatoeba --json "$out/$k-trained.json" | head -3
done

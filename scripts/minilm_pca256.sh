#!/usr/bin/env bash
# Builds runs/minilm-pca256: the English teacher all-MiniLM-L6-v2 with a 256-d PCA head
# (`lase reduce-dim`, fitted on 20,000 English Tatoeba training sentences, 200 per file), a
# teacher at the 256-d width of the EMS-small students. Skipped when it is there.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
[ -f runs/minilm-pca256/modules.json ] && exit 0
mkdir -p runs
# awk reads all of its input (head would close the pipe: SIGPIPE under pipefail)
for f in ../shared/data/tatoeba-challenge-eng-train/*/*.eng.gz; do zcat "$f" | awk 'NR <= 200'; done |
  awk 'NR <= 20000' >runs/minilm-pca256-sample.txt
rm -rf runs/minilm-pca256.partial
$LASE reduce-dim --model models/all-MiniLM-L6-v2 --to 256 --sample runs/minilm-pca256-sample.txt \
  --output runs/minilm-pca256.partial
mv runs/minilm-pca256.partial runs/minilm-pca256

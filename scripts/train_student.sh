#!/usr/bin/env bash
# Trains lase-student (configs/lase-student.toml): lase-base's vectors reduced to 256-d by
# PCA, distilled into lase-small by MSE. Every step resumes: run the same command again
# after a kill. Extra arguments go to `lase distill` (--threads 1, --stop-after N, --set ...).
# Usage: scripts/train_student.sh [lase distill options...]
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
dir=runs/student
mkdir -p "$dir"
[ -f "$dir/pca-sample.txt" ] || python3 scripts/sample_training_sentences.py "$dir/pca-sample.txt" --count 20000
if [ ! -f "$dir/teacher-pca256/modules.json" ]; then
  rm -rf "$dir/teacher-pca256.partial"
  $LASE reduce-dim --model models/lase-base --to 256 --sample "$dir/pca-sample.txt" \
    --output "$dir/teacher-pca256.partial"
  mv "$dir/teacher-pca256.partial" "$dir/teacher-pca256"
fi
exec $LASE distill --config configs/lase-student.toml --out "$dir/distill" "$@"

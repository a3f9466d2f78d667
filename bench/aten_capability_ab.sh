#!/usr/bin/env bash
# lase embed's in-process rate with libtorch's default CPU kernel level against
# ATEN_CPU_CAPABILITY=avx512 (libtorch's own elementwise kernels; oneDNN and MKL choose
# theirs apart), in each of PRECISIONS (default "f32 int8"), on the FLORES-200 English devtest,
# interleaved rounds.
# Usage: [ROUNDS=3] [PRECISIONS="f32 int8"] bench/aten_capability_ab.sh [MODEL_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/all-MiniLM-L6-v2}
S=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
OUT=$(mktemp --suffix .npy)
trap 'rm -f "$OUT"' EXIT
for round in $(seq 1 "${ROUNDS:-3}"); do
  for precision in ${PRECISIONS:-f32 int8}; do
    for capability in default avx512; do
      if [[ $capability == default ]]; then env=(); else env=(ATEN_CPU_CAPABILITY=avx512); fi
      printed=$(env "${env[@]}" ./target/release/lase embed --precision "$precision" --model "$MODEL" \
        --input "$S" --output "$OUT" --quiet 2>&1)
      echo "round $round $precision $capability: $(grep -o -E '[0-9.]+ sentences/s' <<<"$printed" | head -n 1)"
    done
  done
done

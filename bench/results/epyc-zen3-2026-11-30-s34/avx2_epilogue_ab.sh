#!/usr/bin/env bash
# The fused int8 rescaling pass (GELU, ReLU and the residual in the pass that applies the
# scales) on AVX2 with FMA, tried on the AVX2-only Zen 3 where only AVX-512F CPUs have it
# (the change: avx2_epilogue_tried.patch beside this file, applied to 0265bcd; not kept, as
# it was slower here in both runs): bench/embed_speed.py's PyTorch-backend rows twice (--no-peers: sentence-
# transformers f32 and its dynamic int8, the fastest Python peer of zen3_bench.sh's full run
# on this CPU), where "lase int8" was the fused AVX2 pass and "lase, int8 epilogue
# separate" (LASE_INT8_EPILOGUE=separate) the code before it. Nothing else running.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=bench/results/epyc-zen3-2026-11-30-s34
for r in 1 2; do
  .venv/bin/python bench/embed_speed.py --no-peers 2>&1 | tee "$OUT/avx2_epilogue_ab_r$r.txt"
done

#!/usr/bin/env bash
# Which precision should `--precision auto` pick on an AMX Xeon today? bf16 (its pick since
# 2026-11-25, when AMX bf16 encoded faster than int8 with one scale per call and libtorch's
# _int_mm) against int8 (per-token scales, oneDNN's s8 x s8 GEMM, fused epilogue), interleaved,
# ROUNDS rounds, 2 threads, lase embed's own in-process rate, on the shipped default
# (models/lase-base), the student (models/lase-mini) and the teacher (all-MiniLM-L6-v2), each
# on the same 4,000 English sentences bench/embed_speed.py times (FLORES devtest, TICO-19,
# Tatoeba eng-deu test English side) and on the 1,012 FLORES-200 devtest English sentences.
# MODELS replaces the three models (e.g. MODELS="models/lase-mini models/lase-base").
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROUNDS=${ROUNDS:-5}
IN4K=/tmp/auto_ab_4000.txt
.venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); import embed_speed; open('$IN4K', 'w').write('\n'.join(embed_speed.sentences(4000)) + '\n')"
FLORES=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
lscpu | grep -E '^Model name|^CPU family|^Model:'
grep -o -w -E 'avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
for model in ${MODELS:-models/lase-base models/lase-mini models/all-MiniLM-L6-v2}; do
  for input in "$IN4K" "$FLORES"; do
    for round in $(seq "$ROUNDS"); do
      for p in int8 bf16; do
        rate=$(./target/release/lase --threads 2 embed --precision $p --model "$model" \
          --input "$input" --output "/tmp/auto_ab-$p.npy" 2>&1 | grep -o '[0-9.]* sentences/s')
        echo "$model $(basename "$input") round $round $p $rate"
      done
    done
  done
done

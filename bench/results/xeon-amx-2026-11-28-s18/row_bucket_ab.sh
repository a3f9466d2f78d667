#!/usr/bin/env bash
# bf16 products with their rows padded to a bucket (csrc/packed_linear.cpp; LASE_BF16_ROW_BUCKET,
# 1 = unpadded, as before 2026-11-28) so that oneDNN builds fewer primitives, interleaved,
# ROUNDS rounds, all-MiniLM-L6-v2 and models/lase-base in bf16, 2 threads, on bench/embed_speed.py's
# 4,000 sentences and the 1,012 FLORES-200 devtest English sentences: `lase embed`'s own
# in-process rate, the CPU time of the whole process (perf stat -e task-clock; this VM
# counts no cycles) and oneDNN's own count and time of
# primitive creations (ONEDNN_VERBOSE=profile_create, a separate run per bucket).
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROUNDS=${ROUNDS:-5}
BUCKETS=${BUCKETS:-1 16 32 64}
IN4K=/tmp/row_bucket_4000.txt
.venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); import embed_speed; open('$IN4K', 'w').write('\n'.join(embed_speed.sentences(4000)) + '\n')"
FLORES=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
lscpu | grep -E '^Model name|^CPU family|^Model:'
grep -o -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
for model in models/all-MiniLM-L6-v2 models/lase-base; do
  for input in "$IN4K" "$FLORES"; do
    for b in $BUCKETS; do
      created=$(LASE_BF16_ROW_BUCKET=$b ONEDNN_VERBOSE=profile_create ./target/release/lase --threads 2 embed \
        --precision bf16 --model "$model" --input "$input" --output /tmp/row_bucket.npy 2>&1 \
        | awk -F, '/create:cache_miss/ {t += $NF; n++} END {printf "%d primitives created, %.0f ms", n, t}')
      echo "$model $(basename "$input") bucket $b: $created"
    done
    for round in $(seq "$ROUNDS"); do
      for b in $BUCKETS; do
        out=$(LASE_BF16_ROW_BUCKET=$b perf stat -x, -e task-clock ./target/release/lase --threads 2 embed --precision bf16 \
          --model "$model" --input "$input" --output "/tmp/row_bucket-$b.npy" 2>&1)
        rate=$(grep -o '[0-9.]* sentences/s' <<< "$out")
        cycles=$(grep ",task-clock" <<< "$out" | cut -d, -f1)
        echo "$model $(basename "$input") round $round bucket $b $rate $cycles ms CPU"
      done
    done
  done
done
.venv/bin/python - $BUCKETS <<'PY'
import sys
import numpy as np
base = np.load("/tmp/row_bucket-1.npy")
for b in sys.argv[1:]:
    x = np.load(f"/tmp/row_bucket-{b}.npy")
    c = (x * base).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(base, axis=1)
    print(f"lase-base FLORES, bucket {b} vs unpadded: worst cosine {c.min():.6f}, mean {c.mean():.6f}")
PY

#!/usr/bin/env bash
# int8's rescaling pass with GELU and the residual sum fused (an AVX2 + FMA version tried in this
# session and not kept: it is in no commit) against separate libtorch operations (LASE_INT8_EPILOGUE=separate),
# interleaved, 5 rounds each, all-MiniLM-L6-v2 on the 1,012 FLORES-200 devtest English
# sentences, 2 threads; lase embed's own in-process rate. Then the two outputs' cosines.
set -euo pipefail
cd "$(dirname "$0")/../../.."
IN=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
lscpu | grep -E '^Model name|^CPU family|^Model:' 
for round in 1 2 3 4 5; do
  for e in fused separate; do
    rate=$(LASE_INT8_EPILOGUE=$e ./target/release/lase --threads 2 embed --precision int8 --model models/all-MiniLM-L6-v2 \
      --input "$IN" --output "/tmp/epilogue-$e.npy" 2>&1 | grep -o '[0-9.]* sentences/s')
    echo "round $round $e $rate"
  done
done
.venv/bin/python - <<'PY'
import numpy as np
a = np.load("/tmp/epilogue-fused.npy"); b = np.load("/tmp/epilogue-separate.npy")
c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
print(f"fused vs separate: worst cosine {c.min():.6f}, mean {c.mean():.6f}")
PY

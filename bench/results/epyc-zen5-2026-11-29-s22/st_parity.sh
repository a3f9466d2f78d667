#!/usr/bin/env bash
# The shipped lase-mini loaded by Python sentence-transformers against `lase embed` (f32) on
# the first 200 FLORES-200 devtest English and German sentences each (eng_Latn, deu_Latn).
set -euo pipefail
cd "$(dirname "$0")/../../.."
t=$(mktemp -d)
{ head -200 ../shared/data/flores200-devtest/devtest/eng_Latn.devtest; head -200 ../shared/data/flores200-devtest/devtest/deu_Latn.devtest; } > "$t/s.txt"
./target/release/lase --threads 2 embed --precision f32 --model models/lase-mini --input "$t/s.txt" --output "$t/lase.npy" 2>&1 | tail -1
.venv/bin/python - "$t" <<'PY' 2>/dev/null
import sys, numpy as np
from sentence_transformers import SentenceTransformer
t = sys.argv[1]
s = [l.rstrip("\n") for l in open(f"{t}/s.txt")]
st = SentenceTransformer("models/lase-mini", device="cpu").encode(s, batch_size=32)
la = np.load(f"{t}/lase.npy")
cos = (st * la).sum(1) / np.linalg.norm(st, axis=1) / np.linalg.norm(la, axis=1)
print(f"sentence-transformers vs lase embed, models/lase-mini, {len(s)} sentences, dim {st.shape[1]}: "
      f"worst cosine {cos.min():.6f}, mean {cos.mean():.6f}")
PY
rm -rf "$t"

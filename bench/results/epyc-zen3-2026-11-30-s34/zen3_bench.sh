#!/usr/bin/env bash
# Issue 19's AVX2-only column measured again with today's code (2026-11-30, thirty-fourth
# session; AMD EPYC family 25 model 1, Zen 3, 2 cores, avx2 fma f16c, no avx512*, no
# avx_vnni, no amx*), and issue 14's owed speed of the three-layer lase-mini on this kind.
# One machine, one go, nothing else running (the training arms start after it):
# 1. lase-mini against lase-base, f32 and auto (bench/student_speed.sh, 3 rounds each);
# 2. encode against sentence-transformers' PyTorch, ONNX Runtime and OpenVINO backends;
# 3. exact k-NN against faiss at every OpenBLAS core type this CPU runs;
# 4. `lase serve` at 1/8/64 clients against lase's in-process rate, `auto`, six runs.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=bench/results/epyc-zen3-2026-11-30-s34
lscpu > "$OUT/lscpu.txt"
git rev-parse HEAD > "$OUT/commit.txt"
cargo build --release --quiet --example knn_search
.venv/bin/pip list 2>/dev/null | grep -i -E '^(onnx|onnxruntime|optimum|optimum-onnx|torch|sentence-transformers|transformers|faiss-cpu) ' > "$OUT/pip_list.txt"
.venv-ov/bin/pip list 2>/dev/null | grep -i -E '^(openvino|optimum|optimum-intel|torch|sentence-transformers|transformers) ' > "$OUT/pip_list_ov.txt"
bench/student_speed.sh 2>&1 | tee "$OUT/student_speed_f32.txt"
LASE_PRECISION=auto bench/student_speed.sh 2>&1 | tee "$OUT/student_speed_auto.txt"
.venv/bin/python bench/embed_speed.py --openvino-python .venv-ov/bin/python 2>&1 | tee "$OUT/embed_speed.txt"
.venv/bin/python bench/knn_speed.py 2>&1 | tee "$OUT/knn_speed.txt"
for r in 1 2 3 4 5 6; do
  LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 2>&1 | tee "$OUT/serve_auto_r$r.txt"
done

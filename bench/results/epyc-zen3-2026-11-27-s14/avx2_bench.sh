#!/usr/bin/env bash
# Issue 19's AVX2-only column, measured on one machine in one go (2026-11-27, fourteenth
# session; AMD EPYC family 25 model 1, Zen 3, 2 cores, avx2 fma f16c, no avx512*, no
# avx_vnni, no amx*): encode against sentence-transformers' PyTorch, ONNX Runtime and
# OpenVINO backends (f32 and int8), exact k-NN against faiss at every OpenBLAS core type
# this CPU runs, and `lase serve` at 1/8/64 clients against lase's in-process rate, with
# `--precision auto`. Nothing else runs on the machine meanwhile.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=bench/results/epyc-zen3-2026-11-27-s14
lscpu > "$OUT/lscpu.txt"
cargo build --release --quiet --example knn_search
.venv/bin/pip list 2>/dev/null | grep -i -E '^(onnx|onnxruntime|optimum|optimum-onnx|torch|sentence-transformers|transformers|faiss-cpu) ' > "$OUT/pip_list.txt"
.venv-ov/bin/pip list 2>/dev/null | grep -i -E '^(openvino|optimum|optimum-intel|torch|sentence-transformers|transformers) ' > "$OUT/pip_list_ov.txt"
.venv/bin/python bench/embed_speed.py --openvino-python .venv-ov/bin/python 2>&1 | tee "$OUT/embed_speed.txt"
.venv/bin/python bench/knn_speed.py 2>&1 | tee "$OUT/knn_speed.txt"
LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 2>&1 | tee "$OUT/serve_auto.txt"

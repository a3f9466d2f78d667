#!/usr/bin/env bash
# Issue 19's AVX-512/AMX Xeon column measured again with today's code, on one machine in one
# go (2026-11-28, eighteenth session; Intel Xeon model 207, 2 cores, avx512f/bw/vl,
# avx512_vnni, avx512_bf16, avx512_fp16, amx_tile, amx_bf16, amx_int8): encode against
# sentence-transformers' PyTorch, ONNX Runtime and OpenVINO backends (f32, bf16, int8; lase's
# int8 now quantises per token and runs oneDNN's s8 x s8 GEMM), exact k-NN against faiss at
# every OpenBLAS core type this CPU runs, and `lase serve` at 1/8/64 clients against lase's
# in-process rate with `--precision auto`. The training run sharing the machine is stopped
# (SIGSTOP) by the caller meanwhile.
# Needs wrk (apt-get install wrk): its first run here stopped at the serve step with
# "wrk: command not found"; the serve line was then run on its own, twice (serve_auto.txt,
# serve_auto_2.txt).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=bench/results/xeon-amx-2026-11-28-s18
lscpu > "$OUT/lscpu.txt"
cargo build --release --quiet --example knn_search
.venv/bin/pip list 2>/dev/null | grep -i -E '^(onnx|onnxruntime|optimum|optimum-onnx|torch|sentence-transformers|transformers|faiss-cpu) ' > "$OUT/pip_list.txt"
.venv-ov/bin/pip list 2>/dev/null | grep -i -E '^(openvino|optimum|optimum-intel|torch|sentence-transformers|transformers) ' > "$OUT/pip_list_ov.txt"
.venv/bin/python bench/embed_speed.py --openvino-python .venv-ov/bin/python 2>&1 | tee "$OUT/embed_speed.txt"
.venv/bin/python bench/knn_speed.py 2>&1 | tee "$OUT/knn_speed.txt"
LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 2>&1 | tee "$OUT/serve_auto.txt"

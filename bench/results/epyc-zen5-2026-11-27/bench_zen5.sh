#!/usr/bin/env bash
# Issue 19 on this session's CPU (AMD EPYC family 26 model 2, Zen 5; cpu.txt): the encode
# comparison, exact k-NN against faiss, and the server under load, one after another with
# nothing else running (waits for the fresh-clone test to end first).
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27
while pgrep -f "fc16/main" >/dev/null; do sleep 20; done
echo "start $(date -u +%H:%M:%S)"
.venv/bin/python bench/embed_speed.py --openvino-python .venv-ov/bin/python > $R/embed_speed.txt 2>&1
echo "embed_speed rc $? $(date -u +%H:%M:%S)"
.venv/bin/python bench/knn_speed.py > $R/knn_speed.txt 2>&1
echo "knn_speed rc $? $(date -u +%H:%M:%S)"
for i in 1 2; do
  LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 > $R/serve_load_auto_$i.txt 2>&1
  echo "serve_load $i rc $? $(date -u +%H:%M:%S)"
done

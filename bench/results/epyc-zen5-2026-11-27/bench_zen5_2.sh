#!/usr/bin/env bash
# Issue 19 on this session's CPU, second part: exact k-NN against faiss (the first part's
# run lacked the knn_search example), then `lase serve` before and after tokenising moved
# to tokio's blocking threads, interleaved (binaries copied to /tmp/lase-before, /tmp/lase-after).
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27
echo "start $(date -u +%H:%M:%S)"
.venv/bin/python bench/knn_speed.py > $R/knn_speed.txt 2>&1
echo "knn_speed rc $? $(date -u +%H:%M:%S)"
for i in 1 2; do
  for b in before after; do
    LASE=/tmp/lase-$b LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 > $R/serve_load_auto_${b}_$i.txt 2>&1
    echo "serve_load $b $i rc $? $(date -u +%H:%M:%S)"
  done
done

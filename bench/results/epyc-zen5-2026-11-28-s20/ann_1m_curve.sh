#!/usr/bin/env bash
# Twentieth session, after ann_1m.sh: both searches already passed recall@4 0.95 at ef 64 on
# these vectors, so the curve goes down instead of up (ann_1m.sh's faiss ef 80/96 step was
# stopped as unneeded): faiss alone at ef 32 and 48, then lase alone at ef 32 and 48, on the
# same 1M x 1M vectors and graph parameters (M 16, ef_construction 128).
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-28-s20
while pgrep -f "[a]nn_1m.sh" >/dev/null; do sleep 10; done
date -u +"start %H:%M:%S"
.venv/bin/python bench/ann_scale_faiss_ef.py 32 48 > $R/ann_scale_1m_faiss_ef_32_48.txt 2>&1
date -u +"faiss done %H:%M:%S"
for ef in 32 48; do
  .venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --exact-max 250000 --storages bf16 --ef $ef --no-faiss --work runs/ann-scale-1m > $R/ann_scale_1m_lase_ef$ef.txt 2>&1
done
date -u +"lase done %H:%M:%S"

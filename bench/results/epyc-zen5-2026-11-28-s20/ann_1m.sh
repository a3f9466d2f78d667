#!/usr/bin/env bash
# Twentieth session, a Zen 5 EPYC (cpu.txt), nothing else running: issue 19's ANN goal at
# 1M x 1M, the command of docs/benchmarks.md's "1M x 1M, and the crossover, on an AMD EPYC
# Zen 4" section, then faiss alone at wider searches if its recall stays below 0.95, then
# lase alone with LASE_LOG=info so that graph building and searching are timed apart.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-28-s20
date -u +"start %H:%M:%S"
.venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --exact-max 250000 --storages bf16 --work runs/ann-scale-1m > $R/ann_scale_1m.txt 2>&1
cp runs/ann-scale-1m/results.json $R/ann_scale_1m.json
date -u +"ann_scale done %H:%M:%S"
.venv/bin/python bench/ann_scale_faiss_ef.py 80 96 > $R/ann_scale_1m_faiss_ef.txt 2>&1
date -u +"faiss ef done %H:%M:%S"
d=runs/ann-scale-1m/n1000000
{ echo "# LASE_LOG=info target/release/lase --device cpu --threads 2 mine --quiet --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 --output /tmp/pairs.tsv --ann --ann-connectivity 16 --ann-ef-construction 128 --ann-ef-search 64 --ann-storage bf16"
  /usr/bin/time -v env LASE_LOG=info target/release/lase --device cpu --threads 2 mine --quiet --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 --output /tmp/pairs.tsv --ann --ann-connectivity 16 --ann-ef-construction 128 --ann-ef-search 64 --ann-storage bf16; } > $R/lase_1m_build_search_split.txt 2>&1
date -u +"split done %H:%M:%S"

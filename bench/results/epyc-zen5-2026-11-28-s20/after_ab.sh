#!/usr/bin/env bash
# Twentieth session, after locality_ab.sh: faiss on rows grouped the same way (faiss_grouped.py,
# then faiss at ef 32, its fastest setting above 0.95 in ann_scale_1m_faiss_ef_32_48.txt), and
# lase grouped at ef 32 and 48 (the same search widths as faiss's rows).
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-28-s20
while pgrep -f "[l]ocality_ab.sh" >/dev/null; do sleep 5; done
.venv/bin/python $R/faiss_grouped.py > $R/faiss_grouped.txt 2>&1
.venv/bin/python bench/ann_scale_faiss_ef.py --dir runs/ann-scale-1m/n1000000-grouped 32 >> $R/faiss_grouped.txt 2>&1
d=runs/ann-scale-1m/n1000000
for ef in 32 48; do
  { echo "== n 1000000, grouped by region (default), ef $ef"
    /usr/bin/time -f "wall %e s, peak RSS %M KiB" env LASE_LOG=info target/release/lase --device cpu --threads 2 mine --quiet \
      --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 \
      --output /tmp/locality-ef.tsv --ann --ann-connectivity 16 --ann-ef-construction 128 --ann-ef-search $ef \
      --ann-storage bf16 2>&1 | grep -v '^\s*$'; } >> $R/lase_grouped_ef.txt
done
date -u +"after_ab done %H:%M:%S"

#!/usr/bin/env bash
# Twentieth session: lase's exact search (the default of `lase mine`) on the same vectors at
# 100k and 250k a side, for the crossover with HNSW grouped by region (locality_ab.sh).
set -uo pipefail
cd /work/main
while pgrep -f "[a]fter_ab.sh" >/dev/null; do sleep 5; done
for n in 100000 250000; do
  d=runs/ann-scale-1m/n$n
  echo "== n $n, exact"
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" target/release/lase --device cpu --threads 2 mine --quiet \
    --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 \
    --output /tmp/exact-$n.tsv 2>&1 | grep -v '^\s*$'
done

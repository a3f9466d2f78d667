#!/usr/bin/env bash
# Twentieth session: HNSW rows inserted and queries searched grouped by region (src/mine/locality.rs,
# the new default) against corpus order (--ann-row-order, as before), the same binary, the
# same vectors as ann_1m.sh (lase-mini, 256-d, real sentences), the same graph parameters
# (M 16, ef_construction 128, ef 64, bf16 graphs), 2 threads, nothing else running. Sizes
# SIZES (the first n rows of each side of the 1M files), each pair of runs back to back,
# alternating which goes first. LASE_LOG=info prints the grouping's and each direction's
# building and searching times.
set -uo pipefail
cd /work/main
SIZES=${SIZES:-100000 250000 1000000}
d1m=runs/ann-scale-1m/n1000000
run() { # n label extra-args...
  local n=$1 label=$2; shift 2
  local d=runs/ann-scale-1m/n$n
  echo "== n $n, $label"
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" env LASE_LOG=info target/release/lase --device cpu --threads 2 mine --quiet \
    --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 \
    --output /tmp/locality-$n.tsv --ann --ann-connectivity 16 --ann-ef-construction 128 --ann-ef-search 64 \
    --ann-storage bf16 "$@" 2>&1 | grep -v '^\s*$'
}
first=grouped
for n in $SIZES; do
  d=runs/ann-scale-1m/n$n
  if [ ! -f $d/tgt.npy ]; then
    mkdir -p $d
    .venv/bin/python - $n <<'PY'
import sys, numpy as np
n = int(sys.argv[1]); src, out = "runs/ann-scale-1m/n1000000", f"runs/ann-scale-1m/n{n}"
for side in ("src", "tgt"):
    np.save(f"{out}/{side}.npy", np.load(f"{src}/{side}.npy", mmap_mode="r")[:n].copy())
    lines = open(f"{src}/{side}.txt", encoding="utf-8").read().split("\n")[:n]
    open(f"{out}/{side}.txt", "w", encoding="utf-8").write("".join(l + "\n" for l in lines))
PY
  fi
  if [ $first = grouped ]; then
    run $n "grouped by region (default)"; run $n "corpus order" --ann-row-order; first=rows
  else
    run $n "corpus order" --ann-row-order; run $n "grouped by region (default)"; first=grouped
  fi
  date -u +"n $n done %H:%M:%S"
done

#!/usr/bin/env bash
# Twenty-seventh session (AMX Xeon, VM model 167): the crossover between lase's exact search
# (the default of `lase mine`) and its HNSW (`--ann`, rows grouped by region, M 16,
# ef_construction 128, ef 64, bf16 graph: the defaults, spelled out) on the same lase-mini
# vectors as the 1M x 1M run of the twenty-sixth session (runs/ann-scale-1m, the first n rows
# of each side), at SIZES sentences a side, 2 threads, nothing else running. Each size runs
# both searches back to back, alternating which goes first. Recall of the HNSW pairs against
# the exact ones: the share of exact mined pairs (margin >= 1.06) that HNSW mined too.
set -uo pipefail
cd "$(dirname "$0")/../../.."
SIZES=${SIZES:-50000 100000 250000}
exact() { # n
  local d=runs/ann-scale-1m/n$1
  echo "== n $1, exact (default)"
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" target/release/lase --device cpu --threads 2 mine --quiet \
    --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 \
    --output /tmp/crossover-exact-$1.tsv 2>&1 | grep -v '^\s*$'
}
hnsw() { # n
  local d=runs/ann-scale-1m/n$1
  echo "== n $1, --ann (grouped by region, ef 64, bf16 graph)"
  /usr/bin/time -f "wall %e s, peak RSS %M KiB" target/release/lase --device cpu --threads 2 mine --quiet \
    --src $d/src.txt --tgt $d/tgt.txt --src-embeddings $d/src.npy --tgt-embeddings $d/tgt.npy -k 4 --threshold 1.06 \
    --output /tmp/crossover-ann-$1.tsv --ann --ann-connectivity 16 --ann-ef-construction 128 --ann-ef-search 64 \
    --ann-storage bf16 2>&1 | grep -v '^\s*$'
}
first=exact
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
  if [ $first = exact ]; then exact $n; hnsw $n; first=hnsw; else hnsw $n; exact $n; first=exact; fi
  python3 - /tmp/crossover-exact-$n.tsv /tmp/crossover-ann-$n.tsv <<'PY'
import sys
def pairs(p):
    return {tuple(l.rstrip("\n").split("\t")[-2:]) for l in open(p, encoding="utf-8") if l.strip()}
e, a = pairs(sys.argv[1]), pairs(sys.argv[2])
print(f"mined pairs: exact {len(e)}, --ann {len(a)}, exact pairs --ann also mined {len(e & a) / max(len(e), 1):.4f}")
PY
done

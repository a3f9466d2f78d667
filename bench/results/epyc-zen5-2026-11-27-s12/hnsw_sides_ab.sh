#!/usr/bin/env bash
# HNSW mining with the two sides built one after the other on both threads (BEFORE) or at
# once, one thread each (AFTER), interleaved ROUNDS times: `lase mine --ann` at the
# defaults (bf16 graphs, M 16, ef_construction 128, ef 64), k 4, 2 threads, on 160,000 x
# 160,000 real 256-d vectors: run 13's vectors through lase-mini's 384 -> 256 layer, the
# distillation targets of two lase-mini runs (runs/mini and runs/mini-continue; training
# sentences, never a test set), unit-normalised here.
#   hnsw_sides_ab.sh BEFORE AFTER [ROUNDS]
set -euo pipefail
cd /work/main
before=$1 after=$2 rounds=${3:-3}
W=runs/hnsw-ab
mkdir -p $W
if [ ! -f $W/tgt.npy ]; then
  .venv/bin/python - <<'PY'
import numpy as np
n = 160_000
for name, path in (("src", "runs/mini/distill/teacher-target.npy"), ("tgt", "runs/mini-continue/distill/teacher-target.npy")):
    v = np.load(path, mmap_mode="r")[:n].astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    np.save(f"runs/hnsw-ab/{name}.npy", v)
    open(f"runs/hnsw-ab/{name}.txt", "w").write("".join(f"{name} {i}\n" for i in range(n)))
PY
fi
grep -m1 'model name' /proc/cpuinfo; nproc
for r in $(seq 1 "$rounds"); do
  for tag in before after; do
    bin=$before; [ $tag = after ] && bin=$after
    /usr/bin/time -f "$tag round $r: wall %e s, peak RSS %M KiB" $bin --device cpu --threads 2 mine --quiet \
      --src $W/src.txt --tgt $W/tgt.txt --src-embeddings $W/src.npy --tgt-embeddings $W/tgt.npy \
      -k 4 --threshold 1.06 --output $W/pairs-$tag.tsv --ann 2>&1 | grep -E 'k-NN search|recall|round' | sed "s/^/$tag $r: /"
  done
done

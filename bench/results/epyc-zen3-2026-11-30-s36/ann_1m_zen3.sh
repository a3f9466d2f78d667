#!/usr/bin/env bash
# Issue 19's ANN goal at 1M x 1M on the AVX2-only Zen 3 ("not measured on this kind" in
# docs/benchmarks.md's table), written in the thirty-sixth session for a later session on
# this kind, run with NOTHING else on the machine (arms stopped or finished): the command of
# the table's "Commands" list, as the Zen 5 (twentieth session) and the AMX Xeon (twenty-sixth)
# ran it, then faiss alone at narrower searches (its fastest setting above recall 0.95 is the
# peer at its best). Expect ~45 min to embed the 2M sentences with lase-mini (int8 on this
# CPU), then the lase and faiss runs (faiss peak RSS ~10 GB: no arm may be resident).
# The embedding is not timed and may be made beforehand beside other work (thirty-eighth
# session): .venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --work runs/ann-scale-1m --prepare-only
# (the vectors name the weights that made them in runs/ann-scale-1m/vectors.model; another
# lase-mini there is refused). ANN_MODEL names another model folder than models/lase-mini
# (the thirty-eighth session embedded with runs/ann-mini-s33, a copy of the lase-mini shipped
# then, so that a new lase-mini in models/ leaves the cached vectors valid).
# Raw outputs beside this script (or in $OUT): lscpu_ann.txt, ann_scale_1m.txt/.json,
# ann_scale_1m_faiss_ef_32_48.txt.
set -uo pipefail
R=$(mkdir -p "${OUT:-$(dirname "$0")}" && cd "${OUT:-$(dirname "$0")}" && pwd) || exit 1
cd "$(dirname "$0")/../../.."
# Any lase training or distillation, whichever binary copy runs it (runs/bin/lase-NAME too).
if pgrep -f "lase[^ /]* .*(train|distill) --config" >/dev/null; then
  echo "a lase train or distill is running: stop it first (the timings need the whole machine)" >&2
  exit 1
fi
lscpu > "$R/lscpu_ann.txt"
date -u +"start %H:%M:%S"
.venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --exact-max 250000 --storages bf16 --work runs/ann-scale-1m --model "${ANN_MODEL:-models/lase-mini}" > "$R/ann_scale_1m.txt" 2>&1 ||
  { echo "ann_scale.py failed: $R/ann_scale_1m.txt" >&2; exit 1; }
cp runs/ann-scale-1m/results.json "$R/ann_scale_1m.json"
date -u +"ann_scale done %H:%M:%S"
.venv/bin/python bench/ann_scale_faiss_ef.py 32 48 > "$R/ann_scale_1m_faiss_ef_32_48.txt" 2>&1
date -u +"faiss ef done %H:%M:%S"

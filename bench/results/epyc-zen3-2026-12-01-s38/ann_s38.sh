#!/usr/bin/env bash
# Thirty-eighth session: issue 19's 1M x 1M ANN measurement on the AVX2-only Zen 3, the steps of
# bench/results/epyc-zen3-2026-11-30-s36/ann_1m_zen3.sh with its outputs here, the vectors
# embedded beforehand (untimed) by `bench/ann_scale.py ... --prepare-only` with runs/ann-mini-s33
# (a copy of the lase-mini shipped from the thirty-third session until this one's step 14:
# ann_prepare_1m.txt), and faiss's narrower searches one width a file (ef 32 first: on the AMX
# Xeon faiss's time hardly moved with ef, its graph building dominating), so that what the
# session's end cuts off is only the later widths. Nothing else may run (round run20tcm1k's arm
# is killed first; rung3.sh resumes it from its checkpoint).
set -uo pipefail
R=bench/results/epyc-zen3-2026-12-01-s38
cd "$(dirname "$0")/../../.."
if pgrep -f "lase[^ /]* .*(train|distill) --config" >/dev/null; then
  echo "a lase train or distill is running: stop it first" >&2; exit 1
fi
lscpu > $R/lscpu_ann.txt
date -u +"start %H:%M:%S"
.venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --exact-max 250000 --storages bf16 \
  --work runs/ann-scale-1m --model runs/ann-mini-s33 > $R/ann_scale_1m.txt 2>&1 ||
  { echo "ann_scale.py failed: $R/ann_scale_1m.txt" >&2; exit 1; }
cp runs/ann-scale-1m/results.json $R/ann_scale_1m.json
date -u +"ann_scale done %H:%M:%S"
for ef in 32 48 24 16; do
  .venv/bin/python bench/ann_scale_faiss_ef.py $ef > $R/ann_scale_1m_faiss_ef_$ef.txt 2>&1
  date -u +"faiss ef $ef done %H:%M:%S"
done

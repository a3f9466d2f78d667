#!/usr/bin/env bash
# Twenty-sixth session (2026-11-29), an AVX-512/AMX Xeon (lscpu.txt), nothing else running:
# the AMX Xeon cells issues 14 and 19 still owe, from a fresh clone of the committed tree
# (scripts/run.sh had set it up and built it):
# 1. issue 14: the shipped three-layer lase-mini against the default (run 18), encode speed
#    under `auto` (5 rounds) and f32 (3 rounds), bench/student_speed.sh;
# 2. issue 19: `lase serve` at 1/8/64 clients against lase's in-process rate under `auto`,
#    twice, since small requests are tokenised on the HTTP thread (bench/serve_load.sh);
# 3. issue 19: ANN at 1M x 1M on real-model vectors: lase's default HNSW (rows grouped by
#    region, ef 64) against faiss HNSWSQ bf16 at ef 64 (bench/ann_scale.py), then faiss alone
#    at ef 32 and 48 so that faiss's fastest setting above recall@4 0.95 is known.
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=bench/results/xeon-amx-2026-11-29-s26
lscpu > $R/lscpu.txt
date -u +"start %H:%M:%S"
ROUNDS=5 LASE_PRECISION=auto bench/student_speed.sh models/lase-mini models/lase-base 2 > $R/student_speed_auto.txt 2>&1
ROUNDS=3 bench/student_speed.sh models/lase-mini models/lase-base 2 > $R/student_speed_f32.txt 2>&1
date -u +"student_speed done %H:%M:%S"
for i in 1 2; do
  LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 > $R/serve_auto_$i.txt 2>&1
done
date -u +"serve done %H:%M:%S"
.venv/bin/python bench/ann_scale.py --threads 2 --sizes 1000000 --exact-max 250000 --storages bf16 --work runs/ann-scale-1m > $R/ann_scale_1m.txt 2>&1
cp runs/ann-scale-1m/results.json $R/ann_scale_1m.json
date -u +"ann_scale done %H:%M:%S"
.venv/bin/python bench/ann_scale_faiss_ef.py 32 48 > $R/ann_scale_1m_faiss_ef_32_48.txt 2>&1
date -u +"faiss ef done %H:%M:%S"

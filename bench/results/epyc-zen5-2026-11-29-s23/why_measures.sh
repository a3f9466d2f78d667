#!/usr/bin/env bash
# What mini3-rule-s23.md's "why" names, measured again with nothing else running (twenty-third
# session, after the three-layer runs): the perf profile of both models in int8, libtorch's
# attention in f32 and bf16, and the untrained three-layer cut's speed under auto.
set -euo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s23
t=$(mktemp -d)
cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest ../shared/data/flores200-devtest/devtest/deu_Latn.devtest > "$t/s.txt"
for m in lase-base lase-mini-four-layers; do
  model=models/$m
  # The four-layer student as committed before the three-layer one replaced it (20bc117).
  if [ $m = lase-mini-four-layers ]; then git archive 20bc117 models/lase-mini | tar -x -C "$t"; model=$t/models/lase-mini; fi
  perf record -q -F 2000 -g -o "$t/perf-$m.data" target/release/lase --threads 2 embed --precision int8 \
    --model "$model" --input "$t/s.txt" --output "$t/x.npy" 2>&1 | tail -1
  perf report -i "$t/perf-$m.data" --no-children -g none --sort dso,sym --stdio 2>/dev/null \
    | grep '%' | grep -v '^#' | awk '{p=$1; $1=""; print p, substr($0,1,110)}' > "$t/rep-$m.txt"
  echo "== $m, lase embed --precision int8, 2 threads, 2,024 FLORES sentences (perf record -F 2000 -g; samples by symbol, grouped)"
  python3 $R/perf_groups.py "$t/rep-$m.txt"
done > $R/perf_groups.txt 2>&1
.venv/bin/python $R/sdpa_bf16.py > $R/sdpa_bf16.txt 2>&1
ROUNDS=3 LASE_PRECISION=auto bench/student_speed.sh runs/mini3-s23/cut-012 models/lase-base 2 > $R/cut012_speed_auto.txt 2>&1
rm -rf "$t"
# Run right after this script, in the same nohup, once the continued student (step 11) was installed:
#   ROUNDS=5 LASE_PRECISION=auto bench/student_speed.sh models/lase-mini models/lase-base 2 > mini3-s23b/student_speed_auto.txt

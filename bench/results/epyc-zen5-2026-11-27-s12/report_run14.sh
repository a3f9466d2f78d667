#!/usr/bin/env bash
# Session 12: the reports on run 14 (runs/m-n2-n4, copied to models/lase-base) after its
# choice by rule-mse4.md: the demo's calibration and mines (f32, int8), the int8 test sets,
# Tatoeba per language against run 13 and against f32, then the README's main job in f32
# and under auto.
set -euo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s12
S9=bench/results/h100-2026-11-27
lase=target/release/lase
m=runs/m-n2-n4
D=data/demo/tico19-en-fr
python3 scripts/tatoeba_compare.py $S9/eval-lase-base-run13/eval-tatoeba112.json runs/eval/lase-base-run14/eval-tatoeba112.json > $R/tatoeba_run13_to_run14.txt
rm -rf $R/eval-lase-base-run14 && cp -r runs/eval/lase-base-run14 $R/eval-lase-base-run14
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv; } > $R/calibration-lase-base-f32-run14.txt 2>&1
t=$(sed -n 's/.*--threshold \([0-9.]*\).*/\1/p' $R/calibration-lase-base-f32-run14.txt | tail -1)
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14n.tsv --gold $D.gold.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14n.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_f32_run14.txt 2>&1
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14.tsv --threshold $t --gold $D.gold.tsv; wc -l < /tmp/demo14.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14.tsv --threshold $t --gold $D.gold.tsv; wc -l < /tmp/demo14.tsv; } > $R/demo_at_calibrated_threshold_run14.txt 2>&1
{ echo "# lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14i.tsv --gold $D.gold.tsv"
  $lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo14i.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_int8_run14.txt 2>&1
echo "demo mines done $(date -u +%H:%M:%S)"
PRECISION=int8 scripts/default_model_eval.sh $m runs/eval/lase-base-run14-int8 > $R/eval-run14-int8-summary.txt 2>&1
rm -rf $R/eval-lase-base-run14-int8 && cp -r runs/eval/lase-base-run14-int8 $R/eval-lase-base-run14-int8
python3 scripts/tatoeba_compare.py runs/eval/lase-base-run14/eval-tatoeba112.json runs/eval/lase-base-run14-int8/eval-tatoeba112.json > $R/tatoeba_run14_f32_to_int8.txt
echo "int8 eval done $(date -u +%H:%M:%S)"
scripts/run.sh > $R/run_f32.txt 2>&1
LASE_PRECISION=auto scripts/run.sh > $R/run_auto.txt 2>&1
echo "run.sh done $(date -u +%H:%M:%S)"

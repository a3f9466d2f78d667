#!/usr/bin/env bash
# Session 9: when score_s9.sh has applied the rule (rule_outcome.txt), read the chosen
# candidate's test sets (after the choice): f32 and int8 evals, the demo (scripts/run.sh, f32
# and auto), the demo without a threshold, Tatoeba per language against run 12.
set -uo pipefail
cd /work/main
R=bench/results/h100-2026-11-27
S8=bench/results/epyc-zen4-2026-11-26-s8
while pgrep -f score_s9.sh >/dev/null; do sleep 20; done
chosen=$(sed -n 's/^chosen: \(\S*\).*/\1/p' $R/rule_outcome.txt)
echo "chosen: $chosen $(date -u +%H:%M:%S)"
case $chosen in
  A2) m=runs/lase-base-run10-mse2-gpu/best-model ;;
  A4last) m=runs/lase-base-run10-mse4-gpu/checkpoint/encoder ;;
  A4best) m=runs/lase-base-run10-mse4-gpu/best-model ;;
  M) m=runs/s9-M ;;
  R12-M-0.5) m=runs/s9-R12-M-0.5 ;;
  R12-M-0.3) m=runs/s9-R12-M-0.3 ;;
  *) echo "none chosen: run 12 stays"; exit 0 ;;
esac
echo "$m" > runs/chosen_s9.txt
scripts/default_model_eval.sh $m runs/eval/lase-base-run13 > $R/eval-run13-summary.txt 2>&1
cp -r runs/eval/lase-base-run13 $R/eval-lase-base-run13
python3 scripts/tatoeba_compare.py $S8/eval-lase-base-run12/eval-tatoeba112.json runs/eval/lase-base-run13/eval-tatoeba112.json > $R/tatoeba_run12_to_run13.txt
echo "f32 eval done $(date -u +%H:%M:%S)"
lase=target/release/lase
D=data/demo/tico19-en-fr
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv; } > $R/calibration-lase-base-f32-run13.txt 2>&1
t=$(sed -n 's/.*--threshold \([0-9.]*\).*/\1/p' $R/calibration-lase-base-f32-run13.txt | tail -1)
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13n.tsv --gold $D.gold.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13n.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_f32_run13.txt 2>&1
{ echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13.tsv --threshold $t --gold $D.gold.tsv; wc -l < /tmp/demo13.tsv"
  $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13.tsv --threshold $t --gold $D.gold.tsv; wc -l < /tmp/demo13.tsv; } > $R/demo_at_calibrated_threshold_run13.txt 2>&1
{ echo "# lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13i.tsv --gold $D.gold.tsv"
  $lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo13i.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_int8_run13.txt 2>&1
echo "demo mines done $(date -u +%H:%M:%S)"
PRECISION=int8 scripts/default_model_eval.sh $m runs/eval/lase-base-run13-int8 > $R/eval-run13-int8-summary.txt 2>&1
cp -r runs/eval/lase-base-run13-int8 $R/eval-lase-base-run13-int8
python3 scripts/tatoeba_compare.py runs/eval/lase-base-run13/eval-tatoeba112.json runs/eval/lase-base-run13-int8/eval-tatoeba112.json > $R/tatoeba_run13_f32_to_int8.txt
echo "int8 eval done $(date -u +%H:%M:%S)"
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Session 13: waits for score_run14_arms.sh (rule-run14.md applied mechanically), then
#  - if a candidate was chosen: copies it into models/lase-base (run 15), reads the test sets
#    (after the choice) in f32 and int8, the demo's calibration and mines, Tatoeba per
#    language against run 14, and the README's main job in f32 and under auto;
#  - in either case, starts the fresh lase-mini continuation (configs/lase-mini-fresh-continue.toml,
#    its rule mini-rule.md here), whose teacher is models/lase-base as it then is.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s13
A=bench/results/epyc-zen5-2026-11-27-s12/run14-arms
lase=target/release/lase
while pgrep -f "[s]core_run14_arms.sh" >/dev/null; do sleep 20; done
echo "arms scored $(date -u +%H:%M:%S)"
chosen=$(sed -n 's/^chosen: //p' $A/rule_outcome.txt | tail -1)
echo "chosen: $chosen"
case "$chosen" in
  ""|none*) echo "run 14 stays" ;;
  *)
    m=runs/$chosen
    [ -f $m/model.safetensors ] || { echo "no $m/model.safetensors"; exit 1; }
    cp $m/model.safetensors models/lase-base/model.safetensors
    (cd $m && sha256sum model.safetensors) > /tmp/new.sha
    python3 - <<'PY'
import re
p = "models/lase-base/checksums.sha256"
new = open("/tmp/new.sha").read().split()[0]
lines = [f"{new}  model.safetensors" if l.endswith(" model.safetensors") else l for l in open(p).read().splitlines()]
open(p, "w").write("\n".join(lines) + "\n")
PY
    (cd models/lase-base && sha256sum -c checksums.sha256) > $R/copied-checksums-run15.txt 2>&1
    cat $R/copied-checksums-run15.txt
    scripts/default_model_eval.sh $m runs/eval/lase-base-run15 > $R/eval-run15-summary.txt 2>&1
    rm -rf $R/eval-lase-base-run15 && cp -r runs/eval/lase-base-run15 $R/eval-lase-base-run15
    python3 scripts/tatoeba_compare.py bench/results/epyc-zen5-2026-11-27-s12/eval-lase-base-run14/eval-tatoeba112.json \
      runs/eval/lase-base-run15/eval-tatoeba112.json > $R/tatoeba_run14_to_run15.txt
    echo "f32 eval done $(date -u +%H:%M:%S)"
    D=data/demo/tico19-en-fr
    { echo "# lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv"
      $lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv; } > $R/calibration-lase-base-f32-run15.txt 2>&1
    { echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo15n.tsv --gold $D.gold.tsv"
      $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo15n.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_f32_run15.txt 2>&1
    { echo "# lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo15i.tsv --gold $D.gold.tsv"
      $lase mine --quiet --precision int8 --model $m --src $D.en --tgt $D.fr --output /tmp/demo15i.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_int8_run15.txt 2>&1
    scripts/run.sh > $R/run_f32.txt 2>&1
    LASE_PRECISION=auto scripts/run.sh > $R/run_auto.txt 2>&1
    echo "run.sh done $(date -u +%H:%M:%S)"
    PRECISION=int8 scripts/default_model_eval.sh $m runs/eval/lase-base-run15-int8 > $R/eval-run15-int8-summary.txt 2>&1
    rm -rf $R/eval-lase-base-run15-int8 && cp -r runs/eval/lase-base-run15-int8 $R/eval-lase-base-run15-int8
    python3 scripts/tatoeba_compare.py runs/eval/lase-base-run15/eval-tatoeba112.json runs/eval/lase-base-run15-int8/eval-tatoeba112.json > $R/tatoeba_run15_f32_to_int8.txt
    echo "int8 eval done $(date -u +%H:%M:%S)"
    ;;
esac
echo "mini continuation starts $(date -u +%H:%M:%S)"
LASE_MINI_CONFIG=configs/lase-mini-fresh-continue.toml LASE_MINI_DIR=runs/mini-fresh-continue \
  LASE_MINI_HEAD=runs/mini/teacher-pca256/2_Dense scripts/continue_mini.sh --threads 2 > runs/mini-fresh-continue.log 2>&1
echo "mini continuation ended rc=$? $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Session 19 (the AMX Xeon of session 18, runs/ kept): waits for
# `scripts/score_arms.sh run15 bench/results/xeon-amx-2026-11-28-s19/run15-arms` (rule-run15.md
# of bench/results/epyc-zen5-2026-11-27-s13, applied mechanically), then, only if it chose a
# candidate: copies it into models/lase-base (run 16) and reads the test sets after the
# choice: f32 (the published numbers), Tatoeba per language against run 15, the demo's
# calibration and mining with no threshold, the README's main job in f32 and under auto
# (bf16 on this CPU), and the test sets again in bf16 and int8.
set -uo pipefail
cd /work/main
R=bench/results/xeon-amx-2026-11-28-s19
A=$R/run15-arms
lase=target/release/lase
while pgrep -f "[s]core_arms.sh run15" >/dev/null; do sleep 20; done
echo "arms scored $(date -u +%H:%M:%S)"
chosen=$(sed -n 's/^chosen: //p' $A/rule_outcome.txt | tail -1)
echo "chosen: $chosen"
case "$chosen" in
  ""|none*) echo "run 15 stays" ;;
  *)
    m=runs/$chosen
    [ -f $m/model.safetensors ] || { echo "no $m/model.safetensors"; exit 1; }
    cp $m/model.safetensors models/lase-base/model.safetensors.tmp
    mv models/lase-base/model.safetensors.tmp models/lase-base/model.safetensors
    (cd $m && sha256sum model.safetensors) > /tmp/new.sha
    python3 - <<'PY'
p = "models/lase-base/checksums.sha256"
new = open("/tmp/new.sha").read().split()[0]
lines = [f"{new}  model.safetensors" if l.endswith(" model.safetensors") else l for l in open(p).read().splitlines()]
open(p, "w").write("\n".join(lines) + "\n")
PY
    (cd models/lase-base && sha256sum -c checksums.sha256) > $R/copied-checksums-run16.txt 2>&1
    cat $R/copied-checksums-run16.txt
    scripts/default_model_eval.sh $m runs/eval/lase-base-run16 > $R/eval-run16-summary.txt 2>&1
    rm -rf $R/eval-lase-base-run16 && cp -r runs/eval/lase-base-run16 $R/eval-lase-base-run16
    python3 scripts/tatoeba_compare.py bench/results/epyc-zen5-2026-11-27-s13/eval-lase-base-run15/eval-tatoeba112.json \
      runs/eval/lase-base-run16/eval-tatoeba112.json > $R/tatoeba_run15_to_run16.txt
    echo "f32 eval done $(date -u +%H:%M:%S)"
    D=data/demo/tico19-en-fr
    { echo "# lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv"
      $lase mine --quiet --precision f32 --model $m --src $D.calibration.en --tgt $D.calibration.fr --output /tmp/cal.tsv --gold $D.calibration.gold.tsv; } > $R/calibration-lase-base-f32-run16.txt 2>&1
    { echo "# lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo16n.tsv --gold $D.gold.tsv"
      $lase mine --quiet --precision f32 --model $m --src $D.en --tgt $D.fr --output /tmp/demo16n.tsv --gold $D.gold.tsv; } > $R/demo_no_threshold_f32_run16.txt 2>&1
    scripts/run.sh > $R/run_f32.txt 2>&1
    LASE_PRECISION=auto scripts/run.sh > $R/run_auto.txt 2>&1
    echo "run.sh done $(date -u +%H:%M:%S)"
    for p in bf16 int8; do
      PRECISION=$p scripts/default_model_eval.sh $m runs/eval/lase-base-run16-$p > $R/eval-run16-$p-summary.txt 2>&1
      rm -rf $R/eval-lase-base-run16-$p && cp -r runs/eval/lase-base-run16-$p $R/eval-lase-base-run16-$p
    done
    echo "bf16 and int8 evals done $(date -u +%H:%M:%S)"
    ;;
esac

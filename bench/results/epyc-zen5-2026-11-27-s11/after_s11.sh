#!/usr/bin/env bash
# Session 11: when run 13's MSE-2x continuation ends, score its candidates (score_s11.sh),
# apply rule.md mechanically, read the chosen candidate's test sets (after the choice), then
# start the fresh lase-mini cut (mini-rule.md) from the default of that moment.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s11
S9=bench/results/h100-2026-11-27
while pgrep -f "lase --threads 2 train --config configs/lase-base-run13-mse2-cpu.toml" >/dev/null; do sleep 20; done
echo "training ended $(date -u +%H:%M:%S)"
cp runs/lase-base-run13-mse2-cpu/metrics.jsonl $R/metrics-run13-mse2-cpu.jsonl
tail -8 runs/run13-mse2-cpu.log > $R/run13-mse2-cpu-summary.txt
bash $R/score_s11.sh
echo "scored $(date -u +%H:%M:%S)"
python3 - <<'PY' > $R/rule_outcome.txt
import re, glob
R = "bench/results/epyc-zen5-2026-11-27-s11"
rows = {}
for f in sorted(glob.glob(f"{R}/devscore-*.txt")):
    if "mini" in f:
        continue
    t = open(f).read()
    own, pooled = map(float, re.search(r": dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    npo, npp = map(float, re.search(r"non-pivot dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    agree = float(re.search(r"similarity agreement with \S+ ([\d.]+)", t).group(1))
    rows[f.split("devscore-")[1][:-4]] = ((own + pooled + npo + npp) / 4, own, pooled, npo, npp, agree)
base = rows.pop("lase-base")
need_mean, need_agree = base[0] + 0.3, base[5] - 0.5
print(f"run 13 (models/lase-base): {base[1]:.2f} {base[2]:.2f} {base[3]:.2f} {base[4]:.2f} mean {base[0]:.3f} agreement {base[5]:.2f}")
print(f"rule: mean >= {need_mean:.3f} and agreement >= {need_agree:.2f}")
q = []
for tag, (mean, own, pooled, npo, npp, agree) in rows.items():
    ok = mean >= need_mean and agree >= need_agree
    print(f"{tag}: {own:.2f} {pooled:.2f} {npo:.2f} {npp:.2f} mean {mean:.3f} agreement {agree:.2f} {'qualifies' if ok else 'no'}")
    if ok:
        q.append((mean, tag))
print("chosen: " + (max(q)[1] if q else "none (run 13 stays)"))
PY
cat $R/rule_outcome.txt
chosen=$(sed -n 's/^chosen: \(\S*\).*/\1/p' $R/rule_outcome.txt)
if [ "$chosen" != none ]; then
  m=runs/$chosen
  echo "$m" > runs/chosen_s11.txt
  scripts/default_model_eval.sh $m runs/eval/lase-base-run14 > $R/eval-run14-summary.txt 2>&1
  cp -r runs/eval/lase-base-run14 $R/eval-lase-base-run14
  python3 scripts/tatoeba_compare.py $S9/eval-lase-base-run13/eval-tatoeba112.json runs/eval/lase-base-run14/eval-tatoeba112.json > $R/tatoeba_run13_to_run14.txt
  echo "f32 eval done $(date -u +%H:%M:%S)"
  # The mini's teacher is the new default: prepare runs/mini from it (the run-13 cut kept).
  mv runs/mini runs/mini-run13
  mkdir -p runs/mini
  cp runs/mini-run13/pca-sample.txt runs/mini-run13/vocab-sample.txt runs/mini/
  echo "mini teacher: $m" > $R/mini-teacher.txt
  LASE_MINI_BASE=$m LASE_MINI_PREPARE_ONLY=1 scripts/train_mini.sh > $R/mini-prepare.txt 2>&1
else
  echo "mini teacher: models/lase-base (run 13), runs/mini as prepared 05:30" > $R/mini-teacher.txt
fi
echo "mini start $(date -u +%H:%M:%S)"
scripts/train_mini.sh --threads 2 > runs/mini-s11.log 2>&1
echo "mini ended $(date -u +%H:%M:%S)"
cp runs/mini/distill/metrics.jsonl $R/mini-distill-metrics.jsonl

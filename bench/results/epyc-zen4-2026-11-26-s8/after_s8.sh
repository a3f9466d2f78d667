#!/usr/bin/env bash
# Session 8: when the MSE-2x continuation of run 11 ends, score its candidates (rule.md),
# apply the rule mechanically and, if one qualifies, read its test sets (after the choice).
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen4-2026-11-26-s8
while pgrep -f "lase --threads 2 train --config configs/lase-base-run11-mse2-cpu.toml" >/dev/null; do sleep 20; done
echo "training ended $(date -u +%H:%M:%S)"
cp runs/lase-base-run11-mse2-cpu/metrics.jsonl $R/metrics-run11-mse2-cpu.jsonl
tail -8 runs/run11-mse2.log > $R/run11-mse2-cpu-summary.txt
bash $R/score_s8.sh
echo "scored $(date -u +%H:%M:%S)"
python3 - <<'PY' > $R/rule_outcome.txt
import re, glob
R = "bench/results/epyc-zen4-2026-11-26-s8"
rows = []
for f in sorted(glob.glob(f"{R}/devscore-*.txt")):
    t = open(f).read()
    own, pooled = map(float, re.search(r": dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    npo, npp = map(float, re.search(r"non-pivot dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    agree = float(re.search(r"similarity agreement with \S+ ([\d.]+)", t).group(1))
    mean = (own + pooled + npo + npp) / 4
    ok = mean >= 63.42 and agree >= 71.21
    rows.append((mean, f, own, pooled, npo, npp, agree, ok))
for mean, f, own, pooled, npo, npp, agree, ok in rows:
    print(f"{f.split('devscore-')[1][:-4]}: {own:.2f} {pooled:.2f} {npo:.2f} {npp:.2f} mean {mean:.3f} agreement {agree:.2f} {'qualifies' if ok else 'no'}")
q = [r for r in rows if r[-1]]
print("chosen: " + (max(q)[1].split('devscore-')[1][:-4] if q else "none (run 11 stays)"))
PY
cat $R/rule_outcome.txt
chosen=$(sed -n 's/^chosen: \(\S*\).*/\1/p' $R/rule_outcome.txt)
[ "$chosen" = none ] && exit 0
echo "$chosen" > runs/chosen_s8.txt
scripts/default_model_eval.sh runs/$chosen runs/eval/lase-base-run12 > $R/eval-run12-summary.txt 2>&1
echo "f32 eval done $(date -u +%H:%M:%S)"
LASE_MODEL=runs/$chosen scripts/run.sh > $R/run_f32_run12.txt 2>&1
echo "demo done $(date -u +%H:%M:%S)"
echo "all done $(date -u +%H:%M:%S)"

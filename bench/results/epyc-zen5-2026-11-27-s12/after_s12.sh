#!/usr/bin/env bash
# Session 12: when run 13's MSE-4x continuation ends (configs/lase-base-run13-mse4-cpu.toml,
# started at the eleventh session's end, resumed at this one's start), score the candidates of
# bench/results/epyc-zen5-2026-11-27-s11/rule-mse4.md, each exported to f16 as shipped, beside
# run 13 scored again by this binary; apply the rule mechanically; read the chosen candidate's
# test sets only after the choice.
set -euo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s12
S9=bench/results/h100-2026-11-27
lase=target/release/lase
RUN=runs/lase-base-run13-mse4-cpu
while pgrep -f "lase --threads 2 train --config configs/lase-base-run13-mse4-cpu.toml" >/dev/null; do sleep 20; done
echo "training ended $(date -u +%H:%M:%S)"
cp $RUN/metrics.jsonl $R/metrics-run13-mse4-cpu.jsonl
$lase export --model $RUN/model --output runs/r13mse4-model-f16 --dtype f16 2>&1 | tee $R/export-r13mse4-model.txt
cands="models/lase-base runs/r13mse4-model-f16"
if [ -d $RUN/best-model ] && ! cmp -s $RUN/best-model/model.safetensors $RUN/model/model.safetensors; then
  $lase export --model $RUN/best-model --output runs/r13mse4-best-f16 --dtype f16 2>&1 | tee $R/export-r13mse4-best.txt
  cands="$cands runs/r13mse4-best-f16"
fi
# M = 0.5 N2 + 0.5 N4 (N2: the eleventh session's MSE-2x continuation, exported to f16 then).
$lase interpolate --model runs/r13mse2-model-f16 --to runs/r13mse4-model-f16 --alpha 0.5 --output runs/m-n2-n4 2>&1 | tee $R/interpolate-m-n2-n4.txt
cands="$cands runs/m-n2-n4"
for a in 0.3 0.5; do
  $lase interpolate --model models/lase-base --to runs/m-n2-n4 --alpha $a --output runs/interp-r13-m-$a 2>&1 | tee $R/interpolate-r13-m-$a.txt
  cands="$cands runs/interp-r13-m-$a"
done
for m in $cands; do
  tag=$(basename $m)
  $lase --threads 2 dev-score --model $m --config configs/lase-base-non-pivot-cpu-anneal.toml --set run.dev_max_pairs=0 \
    --teacher models/all-MiniLM-L6-v2 --json $R/devscore-$tag.json 2>&1 | grep -v "^\s*$" | tail -3 | tee $R/devscore-$tag.txt
done
echo "scored $(date -u +%H:%M:%S)"
python3 - <<'PY' > $R/rule_outcome.txt
import re, glob
R = "bench/results/epyc-zen5-2026-11-27-s12"
rows = {}
for f in sorted(glob.glob(f"{R}/devscore-*.txt")):
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
  echo "$m" > runs/chosen_s12.txt
  scripts/default_model_eval.sh $m runs/eval/lase-base-run14 > $R/eval-run14-summary.txt 2>&1
  cp -r runs/eval/lase-base-run14 $R/eval-lase-base-run14
  python3 scripts/tatoeba_compare.py $S9/eval-lase-base-run13/eval-tatoeba112.json runs/eval/lase-base-run14/eval-tatoeba112.json > $R/tatoeba_run13_to_run14.txt
  echo "f32 eval done $(date -u +%H:%M:%S)"
fi

#!/usr/bin/env bash
# Session 9 (2026-11-27): the candidates of bench/results/h100-2026-11-27/rule.md (run 12
# continued on an H100 at MSE 2x and 4x), scored on the dev split beside run 12 itself,
# then the rule applied mechanically (rule_outcome.txt).
set -euo pipefail
cd /work/main
R=bench/results/h100-2026-11-27
lase=target/release/lase
A2=runs/lase-base-run10-mse2-gpu/best-model
A4L=runs/lase-base-run10-mse4-gpu/checkpoint/encoder
A4B=runs/lase-base-run10-mse4-gpu/best-model
$lase interpolate --model $A2 --to $A4B --alpha 0.5 --output runs/s9-M 2>&1 | tee $R/interpolate-M.txt
for a in 0.5 0.3; do
  $lase interpolate --model models/lase-base --to runs/s9-M --alpha $a --output runs/s9-R12-M-$a 2>&1 | tee $R/interpolate-R12-M-$a.txt
done
score() { # TAG MODEL
  $lase --threads 2 dev-score --model "$2" --config configs/lase-base-non-pivot-cpu-anneal.toml --set run.dev_max_pairs=0 \
    --teacher models/all-MiniLM-L6-v2 --json $R/devscore-$1.json 2>&1 | grep -v "^\s*$" | tail -3 | tee $R/devscore-$1.txt
}
score R12 models/lase-base
score A2 $A2
score A4last $A4L
score A4best $A4B
score M runs/s9-M
score R12-M-0.5 runs/s9-R12-M-0.5
score R12-M-0.3 runs/s9-R12-M-0.3
python3 - <<'PY' | tee $R/rule_outcome.txt
import re
R = "bench/results/h100-2026-11-27"
def read(tag):
    t = open(f"{R}/devscore-{tag}.txt").read()
    own, pooled = map(float, re.search(r": dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    npo, npp = map(float, re.search(r"non-pivot dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    agree = float(re.search(r"similarity agreement with \S+ ([\d.]+)", t).group(1))
    return own, pooled, npo, npp, (own + pooled + npo + npp) / 4, agree
base = read("R12")
need_mean, need_agree = base[4] + 0.3, base[5] - 0.5
print(f"R12 (run 12, the default): {base[0]:.2f} {base[1]:.2f} {base[2]:.2f} {base[3]:.2f} mean {base[4]:.3f} agreement {base[5]:.2f}")
print(f"bounds: mean >= {need_mean:.3f}, agreement >= {need_agree:.2f}")
q = []
for tag in ["A2", "A4last", "A4best", "M", "R12-M-0.5", "R12-M-0.3"]:
    r = read(tag)
    ok = r[4] >= need_mean and r[5] >= need_agree
    print(f"{tag}: {r[0]:.2f} {r[1]:.2f} {r[2]:.2f} {r[3]:.2f} mean {r[4]:.3f} agreement {r[5]:.2f} {'qualifies' if ok else 'no'}")
    if ok: q.append((r[4], tag))
print("chosen: " + (max(q)[1] if q else "none (run 12 stays)"))
PY

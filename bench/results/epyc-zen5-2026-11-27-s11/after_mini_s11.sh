#!/usr/bin/env bash
# Session 11: when the fresh lase-mini cut ends, export its best-model, score it and the
# shipped student on all dev pairs, apply mini-rule.md mechanically, then read the test sets
# (after the choice) and, if it replaced the shipped student, run the demo.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-27-s11
lase=target/release/lase
while pgrep -f "lase distill --config configs/lase-mini.toml" >/dev/null; do sleep 15; done
echo "mini ended $(date -u +%H:%M:%S)"
cp runs/mini/distill/metrics.jsonl $R/mini-distill-metrics.jsonl
tail -12 runs/mini-s11.log > $R/mini-distill-summary.txt
rm -rf runs/mini/export
$lase export --model runs/mini/distill/best-model --output runs/mini/export --dtype f16 2>&1 | tee $R/export-mini.txt
for m in models/lase-mini runs/mini/export; do
  tag=$( [ $m = models/lase-mini ] && echo shipped || echo fresh )
  { echo "\$ lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0"
    $lase --threads 2 dev-score --model $m --config configs/lase-mini.toml --set run.dev_max_pairs=0 2>&1 | grep -v '^\s*$' | tail -2; } > $R/devscore-mini-$tag.txt
done
python3 - <<'PY' > $R/mini-rule-outcome.txt
import re
R = "bench/results/epyc-zen5-2026-11-27-s11"
def cols(tag):
    t = open(f"{R}/devscore-mini-{tag}.txt").read()
    own, pooled = map(float, re.search(r": dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    npo, npp = map(float, re.search(r"non-pivot dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    return own, pooled, npo, npp, (own + pooled + npo + npp) / 4
s, f = cols("shipped"), cols("fresh")
print("lase dev-score on all dev pairs (configs/lase-mini.toml's split), this session's binary, 2 threads:")
print("shipped lase-mini: %.2f / %.2f / %.2f / %.2f  mean %.3f" % s)
print("fresh cut, best-model: %.2f / %.2f / %.2f / %.2f  mean %.3f" % f)
ok = f[4] >= s[4] + 0.3
print("rule (mini-rule.md): replace if the mean is at least the shipped student's + 0.3 (%.3f): %s" % (s[4] + 0.3, "replaced" if ok else "not replaced"))
PY
cat $R/mini-rule-outcome.txt
scripts/default_model_eval.sh runs/mini/export runs/eval/lase-mini-s11 > $R/eval-mini-fresh-f32.txt 2>&1
cp -r runs/eval/lase-mini-s11 $R/eval-lase-mini-fresh
echo "f32 eval done $(date -u +%H:%M:%S)"
if grep -q ': replaced$' $R/mini-rule-outcome.txt; then
  cp -r runs/mini/export/. models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > $R/mini-copied-checksums.txt 2>&1
  scripts/run.sh > $R/run_f32.txt 2>&1
  echo "demo f32 done $(date -u +%H:%M:%S)"
  LASE_PRECISION=auto scripts/run.sh > $R/run_auto.txt 2>&1
  echo "demo auto done $(date -u +%H:%M:%S)"
  PRECISION=int8 scripts/default_model_eval.sh runs/mini/export runs/eval/lase-mini-s11-int8 > $R/eval-mini-fresh-int8.txt 2>&1
  cp -r runs/eval/lase-mini-s11-int8 $R/eval-lase-mini-fresh-int8
  echo "int8 eval done $(date -u +%H:%M:%S)"
fi
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# Twenty-third session: a three-layer lase-mini by mini3-rule-s23.md (beside this file).
# Run again after a kill: every step is skipped when its output is there.
set -euo pipefail
cd /work/main
R=bench/results/epyc-zen5-2026-11-29-s23
lase=target/release/lase
run=runs/mini3-s23
mkdir -p $run $R/mini3
. scripts/lib/mini_dev_score.sh   # the dev measure score_mini.sh uses (as it ran: the same lines, inline)
echo "cuts start $(date -u +%H:%M:%S)"
# 1. The four cuts, scored untrained; the default scored on the same split.
for L in 1,2,3 0,2,3 0,1,3 0,1,2; do
  n=cut-${L//,/}
  [ -f $run/$n/modules.json ] || $lase --threads 2 shrink --model models/lase-mini --layers $L --output $run/$n 2>&1 | tee $R/mini3/shrink-$n.txt
  mini_dev_score $run/$n $R/mini3/devscore-mini3-$n.json
done
mini_dev_score models/lase-base $R/mini3/devscore-default-run16.json
cp bench/results/epyc-zen5-2026-11-29-s22/mini-s22c/devscore-mini-s22c-mini-s22c.json $R/mini3/devscore-mini4-shipped.json
python3 - $R/mini3 <<'PY' | tee $R/mini3/cut_choice.txt
import sys
sys.path.insert(0, "scripts")
from dev_rule import measure, describe
d = sys.argv[1]
for n in ["default-run16", "mini4-shipped"]:
    print(f"{n}: {describe(measure(f'{d}/devscore-{n}.json', None))}")
best = None
for n in ["cut-123", "cut-023", "cut-013", "cut-012"]:
    row = measure(f"{d}/devscore-mini3-{n}.json", None)
    print(f"{n} (untrained): {describe(row)}")
    if best is None or row["mean"] > best[1]:
        best = (n, row["mean"])
print(f"cut chosen: {best[0]}")
PY
chosen=$(sed -n 's/^cut chosen: //p' $R/mini3/cut_choice.txt)
[ -f $run/init/modules.json ] || { rm -rf $run/init.tmp && cp -r $run/$chosen $run/init.tmp && mv $run/init.tmp $run/init; }
# 2. Training.
echo "training starts $(date -u +%H:%M:%S)"
LASE_MINI_CONFIG=configs/lase-mini3-s23.toml LASE_MINI_DIR=$run \
  scripts/continue_mini.sh --threads 2 --precision bf16 --quiet >> $run/train.log 2>&1
step=$(python3 -c "import json; print(json.load(open('$run/distill/checkpoint/state.json'))['step'])")
echo "training ended $(date -u +%H:%M:%S) at step $step"
[ "$step" -ge 1000 ] && [ -f $run/distill/best-model/model.safetensors ] || { echo "not finished: the rule waits"; exit 0; }
cp $run/distill/metrics.jsonl $R/mini3/metrics.jsonl
cp $run/train.log $R/mini3/train.log
# 3. The candidate.
if ! [ -f $run/export/checksums.sha256 ]; then
  rm -rf $run/export.tmp
  $lase export --model $run/distill/best-model --output $run/export.tmp --dtype f16 2>&1 | tee $R/mini3/export.txt
  rm -rf $run/export && mv $run/export.tmp $run/export
fi
mini_dev_score $run/export $R/mini3/devscore-mini3-trained.json
[ -f $R/mini3/student_speed_auto.txt ] ||
  { ROUNDS=5 LASE_PRECISION=auto bench/student_speed.sh $run/export models/lase-base 2 > $R/mini3/student_speed_auto.tmp && mv $R/mini3/student_speed_auto.tmp $R/mini3/student_speed_auto.txt; }
du -b $run/export | tail -1 > $R/mini3/size.txt
python3 - $R/mini3 <<'PY' | tee $R/mini3/rule_outcome.txt
import re, sys
sys.path.insert(0, "scripts")
from dev_rule import measure, describe
d = sys.argv[1]
default = measure(f"{d}/devscore-default-run16.json", None)
shipped = measure(f"{d}/devscore-mini4-shipped.json", None)
cand = measure(f"{d}/devscore-mini3-trained.json", None)
speed = float(re.search(r"whole process ([0-9.]+), encoding", open(f"{d}/student_speed_auto.txt").read()).group(1))
size = int(open(f"{d}/size.txt").read().split()[0])
print(f"default (run 16): {describe(default)}")
print(f"four-layer student (shipped): {describe(shipped)}")
print(f"three-layer candidate: {describe(cand)}")
a = cand["mean"] >= default["mean"] - 8.0
b = speed >= 2.00
c = size <= 25_000_000
print(f"a. dev mean {cand['mean']:.3f} >= {default['mean'] - 8.0:.3f} (default - 8.0): {'yes' if a else 'no'}")
print(f"b. whole-process speed ratio under auto {speed:.2f} >= 2.00: {'yes' if b else 'no'}")
print(f"c. size {size} bytes <= 25,000,000: {'yes' if c else 'no'}")
print(f"beside: candidate - four-layer student = {cand['mean'] - shipped['mean']:+.3f}")
print("chosen: mini3-s23" if a and b and c else "chosen: none")
PY
python3 scripts/dev_rule.py --base $R/mini3/devscore-mini4-shipped.json $R/mini3/devscore-mini3-trained.json \
  --min-gain 0.3 --bootstrap 2000 > $R/mini3/bootstrap_against_four_layer.txt || true
# 4. Test sets after the choice; install when chosen.
[ -f $R/mini3/eval-f32.txt ] || scripts/default_model_eval.sh $run/export runs/eval/lase-mini3-s23 > $R/mini3/eval-f32.txt 2>&1
rm -rf $R/mini3/eval && cp -r runs/eval/lase-mini3-s23 $R/mini3/eval
python3 scripts/tatoeba_compare.py bench/results/epyc-zen5-2026-11-29-s22/mini-s22c/eval-mini-s22c/eval-tatoeba112.json \
  $R/mini3/eval/eval-tatoeba112.json > $R/mini3/tatoeba_four_to_three_layers.txt
if grep -q '^chosen: mini3-s23' $R/mini3/rule_outcome.txt; then
  cp -r $run/export/. models/lase-mini/
  (cd models/lase-mini && sha256sum -c checksums.sha256) > $R/mini3/copied-checksums.txt 2>&1
  scripts/run.sh > $R/mini3/run_f32.txt 2>&1
  LASE_PRECISION=auto scripts/run.sh > $R/mini3/run_auto.txt 2>&1
  PRECISION=int8 scripts/default_model_eval.sh $run/export runs/eval/lase-mini3-s23-int8 > $R/mini3/eval-int8.txt 2>&1
  rm -rf $R/mini3/eval-int8 && cp -r runs/eval/lase-mini3-s23-int8 $R/mini3/eval-int8
  python3 scripts/tatoeba_compare.py $R/mini3/eval/eval-tatoeba112.json $R/mini3/eval-int8/eval-tatoeba112.json \
    > $R/mini3/tatoeba_f32_to_int8.txt
fi
echo "all done $(date -u +%H:%M:%S)"

#!/usr/bin/env bash
# rule-run14.md, applied mechanically once both of run 14's CPU arms reach step 500
# (configs/lase-base-run14-mse2-cpu.toml and -mse4-cpu.toml; written in the twelfth session,
# before either arm's first dev score). Resumes an arm that has not finished (the same
# commands continue them), then exports each arm's last model (and its best-model where it
# differs) to f16, makes M' = 0.5 A2 + 0.5 A4 and R14 + 0.3 / 0.5 M', scores them beside
# run 14 (models/lase-base, scored again by this binary) and prints the rule's choice. It
# does not copy anything into models/: the session that runs it does that, then reads the
# test sets (after the choice) with scripts/default_model_eval.sh.
#   bash bench/results/epyc-zen5-2026-11-27-s12/score_run14_arms.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${1:?OUT_DIR for the dev scores and the outcome}
mkdir -p "$out"
lase=target/release/lase
for a in 2 4; do
  run=runs/lase-base-run14-mse$a-cpu
  step=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" $run/checkpoint/state.json 2>/dev/null || echo 0)
  if [ "$step" -lt 500 ] || ! [ -f $run/model/model.safetensors ]; then
    $lase --threads 2 train --config configs/lase-base-run14-mse$a-cpu.toml --out $run --precision bf16
  fi
  cp $run/metrics.jsonl "$out/metrics-run14-mse$a-cpu.jsonl"
  $lase export --model $run/model --output runs/r14a$a-model-f16 --dtype f16 2>&1 | tee "$out/export-r14a$a-model.txt"
done
cands="models/lase-base runs/r14a2-model-f16 runs/r14a4-model-f16"
for a in 2 4; do
  run=runs/lase-base-run14-mse$a-cpu
  if ! cmp -s $run/best-model/model.safetensors $run/model/model.safetensors; then
    $lase export --model $run/best-model --output runs/r14a$a-best-f16 --dtype f16 2>&1 | tee "$out/export-r14a$a-best.txt"
    cands="$cands runs/r14a$a-best-f16"
  fi
done
$lase interpolate --model runs/r14a2-model-f16 --to runs/r14a4-model-f16 --alpha 0.5 --output runs/m-r14 2>&1 | tee "$out/interpolate-m-r14.txt"
cands="$cands runs/m-r14"
for x in 0.3 0.5; do
  $lase interpolate --model models/lase-base --to runs/m-r14 --alpha $x --output runs/interp-r14-m-$x 2>&1 | tee "$out/interpolate-r14-m-$x.txt"
  cands="$cands runs/interp-r14-m-$x"
done
for m in $cands; do
  tag=$(basename $m)
  $lase --threads 2 dev-score --model $m --config configs/lase-base-non-pivot-cpu-anneal.toml --set run.dev_max_pairs=0 \
    --teacher models/all-MiniLM-L6-v2 --json "$out/devscore-$tag.json" 2>&1 | grep -v "^\s*$" | tail -3 | tee "$out/devscore-$tag.txt"
done
python3 - "$out" <<'PY' | tee "$out/rule_outcome.txt"
import glob, json, os, re, sys
out = sys.argv[1]
news = {d.split("-")[0] for d in os.listdir("../shared/data/parallel-news") if d.endswith("-eng")}
rows = {}
for f in sorted(glob.glob(f"{out}/devscore-*.txt")):
    t = open(f).read()
    own, pooled = map(float, re.search(r": dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    npo, npp = map(float, re.search(r"non-pivot dev P@1 ([\d.]+) .*?pooled ([\d.]+)", t).groups())
    agree = float(re.search(r"similarity agreement with \S+ ([\d.]+)", t).group(1))
    g = [l for l in json.load(open(f[:-4] + ".json"))["languages"] if l["language"].split("_")[0] in news]
    grp = sum(l["p_at_1"] + l["pooled_p_at_1"] for l in g) / (2 * len(g))
    rows[f.split("devscore-")[1][:-4]] = ((own + pooled + npo + npp) / 4, own, pooled, npo, npp, agree, grp)
base = rows.pop("lase-base")
need_mean, need_agree, need_news = base[0] + 0.3, base[5] - 0.5, base[6]
print(f"run 14 (models/lase-base): {base[1]:.2f} {base[2]:.2f} {base[3]:.2f} {base[4]:.2f} mean {base[0]:.3f} agreement {base[5]:.2f} news languages {base[6]:.3f}")
print(f"rule: mean >= {need_mean:.3f} and agreement >= {need_agree:.2f} and news languages >= {need_news:.3f}")
q = []
for tag, (mean, own, pooled, npo, npp, agree, grp) in rows.items():
    ok = mean >= need_mean and agree >= need_agree and grp >= need_news
    print(f"{tag}: {own:.2f} {pooled:.2f} {npo:.2f} {npp:.2f} mean {mean:.3f} agreement {agree:.2f} news languages {grp:.3f} {'qualifies' if ok else 'no'}")
    if ok:
        q.append((mean, tag))
print("chosen: " + (max(q)[1] if q else "none (run 14 stays)"))
PY

#!/usr/bin/env bash
# Training throughput of two lase binaries on the same recipe, in one script, as a ratio:
# lase-base's recipe (MSE onto all-MiniLM-L6-v2's vectors plus in-batch InfoNCE, dropout
# 0.1 as the model's config has it) on the same 6,000 WMT news pairs as
# bench/train_precision.sh (deu/fra/rus/zho-eng, 1,500 each), the same init
# (models/lase-base), teacher cache, batches (BATCH pairs, default 64; 64 tokens), seed and
# precision for both; two rounds of BEFORE then AFTER, STEPS steps each (default 30; a
# multiple of 10, at least 20); pairs/s of the 10-step windows after the first, and the loss
# at the last step (equal losses are not expected where the two binaries draw dropout masks
# differently). A side may be a wrapper script that sets the environment and execs lase.
# Run on an otherwise idle machine:
#     [PRECISION=bf16] [BATCH=64] [STEPS=30] bench/train_ab.sh BEFORE_BINARY AFTER_BINARY [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2
PRECISION=${PRECISION:-bf16} BATCH=${BATCH:-64} STEPS=${STEPS:-30}
(( STEPS >= 20 && STEPS % 10 == 0 )) || { echo "STEPS: a multiple of 10, at least 20" >&2; exit 2; }
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/lase-train-ab.XXXXXX")}
mkdir -p "$work"
source bench/train_news_recipe.sh
news_training_recipe "$work" info-nce "$BATCH"
# The teacher cache once (not timed), shared by every timed run.
[[ -f $work/base/teacher-target.npy ]] ||
  "$AFTER" distill --config "$work/recipe.toml" --out "$work/base" --quiet --stop-after 1 >/dev/null
print_cpu
for round in 1 2; do
  for side in before after; do
    if [[ $side == before ]]; then bin=$BEFORE; else bin=$AFTER; fi
    d=$work/$side-$round
    seed_timed_run "$work/base" "$d"
    /usr/bin/time -f "%M" -o "$d.rss" "$bin" distill --config "$work/recipe.toml" --out "$d" --quiet --stop-after "$STEPS" --precision "$PRECISION" >"$d.log"
    python3 - "$d" "$side" "$round" <<'PY'
import json, sys
d, side, r = sys.argv[1:]
rows = [json.loads(l) for l in open(d + "/metrics.jsonl")]
w = [x["pairs_per_second"] for x in rows[1:]]
rss = int(open(d + ".rss").read().split()[-1]) / 1024
print(f"round {r} {side:6s} pairs/s per 10-step window: {', '.join(f'{v:.1f}' for v in w)}; "
      f"mean {sum(w) / len(w):.1f}; loss at step {rows[-1]['step']} {rows[-1]['loss']:.4f}; peak RSS {rss:.0f} MiB")
open(d + ".mean", "w").write(str(sum(w) / len(w)))
PY
  done
done
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
m = {s: sum(float(open(f"{w}/{s}-{r}.mean").read()) for r in (1, 2)) / 2 for s in ("before", "after")}
print(f"after / before training throughput: {m['after'] / m['before']:.2f}x ({m['after']:.1f} vs {m['before']:.1f} pairs/s)")
PY

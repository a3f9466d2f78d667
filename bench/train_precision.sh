#!/usr/bin/env bash
# Training throughput of lase-base's recipe, f32 against bf16 mixed precision
# (`lase distill --precision bf16`), in one script, as a ratio. The same 6,000 WMT news
# pairs (deu/fra/rus/zho-eng, 1,500 each, from ../shared/data/parallel-news), the same
# init (models/lase-base), teacher cache, batches (32 pairs, 64 tokens) and seed for
# both; two rounds of f32 then bf16, 40 steps each; pairs/s of the 10-step windows
# after the first. Run on an otherwise idle machine:
#     bench/train_precision.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-target/release/lase}
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/lase-train-precision.XXXXXX")}
mkdir -p "$work"
source bench/train_news_recipe.sh
news_training_recipe "$work" none 32
# The teacher cache once (not timed), shared by every timed run.
[[ -f $work/base/teacher-target.npy ]] ||
  "$LASE" distill --config "$work/recipe.toml" --out "$work/base" --quiet --stop-after 1 >/dev/null
print_cpu
declare -A total
for round in 1 2; do
  for p in f32 bf16; do
    d=$work/$p-$round
    seed_timed_run "$work/base" "$d"
    "$LASE" distill --config "$work/recipe.toml" --out "$d" --quiet --stop-after 40 --precision "$p" >"$d.log"
    python3 - "$d" "$p" "$round" <<'PY'
import json, sys
d, p, r = sys.argv[1:]
rows = [json.loads(l) for l in open(d + "/metrics.jsonl")]
w = [x["pairs_per_second"] for x in rows[1:]]
print(f"round {r} {p:5s} pairs/s per 10-step window: {', '.join(f'{v:.1f}' for v in w)}; "
      f"mean {sum(w) / len(w):.1f}; loss at step 40 {rows[-1]['loss']:.6f}")
open(d + ".mean", "w").write(str(sum(w) / len(w)))
PY
  done
done
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
m = {p: sum(float(open(f"{w}/{p}-{r}.mean").read()) for r in (1, 2)) / 2 for p in ("f32", "bf16")}
print(f"bf16 / f32 training throughput: {m['bf16'] / m['f32']:.2f}x ({m['bf16']:.1f} vs {m['f32']:.1f} pairs/s)")
PY

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
python3 - "$work" <<'PY'
import glob, gzip, random, sys
work = sys.argv[1]
random.seed(0)
rows = []
for lang in ["deu", "fra", "rus", "zho"]:
    for f in sorted(glob.glob(f"../shared/data/parallel-news/{lang}-eng/*.{lang}.gz")):
        e = f[: -len(f".{lang}.gz")] + ".eng.gz"
        a = gzip.open(f, "rt", encoding="utf-8").read().splitlines()
        b = gzip.open(e, "rt", encoding="utf-8").read().splitlines()
        rows += [(x.replace("\t", " "), y.replace("\t", " "), lang) for x, y in zip(a, b) if x and y]
random.shuffle(rows)
for lang in ["deu", "fra", "rus", "zho"]:
    mine = [r for r in rows if r[2] == lang][:1500]
    open(f"{work}/{lang}.tsv", "w", encoding="utf-8").write("".join(f"{x}\t{y}\n" for x, y, _ in mine))
PY
sources=""
for lang in deu fra rus zho; do
  sources+="  { format = \"tsv\", path = \"$work/$lang.tsv\", src_lang = \"$lang\", tgt_lang = \"eng\" },"$'\n'
done
cat >"$work/recipe.toml" <<TOML
[model]
init_from = "models/lase-base"
train_max_tokens = 64

[data]
sources = [
$sources]
exclude_test_sets = false   # a speed benchmark: the model is thrown away
dev = { pairs_per_language = 0, min_language_pairs = 100000 }

[objective]
contrastive = "none"
xtr = false

[objective.distillation]
teacher = "models/all-MiniLM-L6-v2"
teacher_side = "target"
mse = 1.0
normalize_student = true

[optimizer]
lr = 5e-5
weight_decay = 0.01

[schedule]
steps = 1000
warmup_steps = 10
batch_pairs = 32

[run]
seed = 1
log_every = 10
eval_every = 0
checkpoint_every = 1000
TOML
# The teacher cache once (not timed), shared by every timed run.
[[ -f $work/base/teacher-target.npy ]] ||
  "$LASE" distill --config "$work/recipe.toml" --out "$work/base" --quiet --stop-after 1 >/dev/null
lscpu | grep -E "^Model name"
lscpu | grep -o -w -E "avx2|avx512f|avx512_bf16|amx_bf16|amx_tile" | sort -u | tr '\n' ' '
echo
declare -A total
for round in 1 2; do
  for p in f32 bf16; do
    d=$work/$p-$round
    rm -rf "$d" && mkdir -p "$d"
    cp "$work/base/config.toml" "$d/"
    ln "$work/base/teacher-target.npy" "$d/" 2>/dev/null || cp "$work/base/teacher-target.npy" "$d/"
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

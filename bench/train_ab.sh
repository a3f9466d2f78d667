#!/usr/bin/env bash
# Training throughput of two lase binaries on the same recipe, in one script, as a ratio:
# lase-base's recipe (MSE onto all-MiniLM-L6-v2's vectors plus in-batch InfoNCE, dropout
# 0.1 as the model's config has it) on the same 6,000 WMT news pairs as
# bench/train_precision.sh (deu/fra/rus/zho-eng, 1,500 each), the same init
# (models/lase-base), teacher cache, batches (64 pairs, 64 tokens), seed and precision
# for both; two rounds of BEFORE then AFTER, 30 steps each; pairs/s of the 10-step windows
# after the first, and the loss at step 30 (equal losses are not expected where the two
# binaries draw dropout masks differently). Run on an otherwise idle machine:
#     [PRECISION=bf16] bench/train_ab.sh BEFORE_BINARY AFTER_BINARY [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2
PRECISION=${PRECISION:-bf16}
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/lase-train-ab.XXXXXX")}
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
contrastive = "info-nce"
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
batch_pairs = 64

[run]
seed = 1
log_every = 10
eval_every = 0
checkpoint_every = 1000
TOML
# The teacher cache once (not timed), shared by every timed run.
[[ -f $work/base/teacher-target.npy ]] ||
  "$AFTER" distill --config "$work/recipe.toml" --out "$work/base" --quiet --stop-after 1 >/dev/null
lscpu | grep -E "^Model name"
lscpu | grep -o -w -E "avx2|avx512f|avx512_bf16|amx_bf16|amx_tile" | sort -u | tr '\n' ' '
echo
for round in 1 2; do
  for side in before after; do
    if [[ $side == before ]]; then bin=$BEFORE; else bin=$AFTER; fi
    d=$work/$side-$round
    rm -rf "$d" && mkdir -p "$d"
    cp "$work/base/config.toml" "$d/"
    for f in teacher-target.npy teacher-target.texts; do ln "$work/base/$f" "$d/" 2>/dev/null || cp "$work/base/$f" "$d/"; done
    /usr/bin/time -f "%M" -o "$d.rss" "$bin" distill --config "$work/recipe.toml" --out "$d" --quiet --stop-after 30 --precision "$PRECISION" >"$d.log"
    python3 - "$d" "$side" "$round" <<'PY'
import json, sys
d, side, r = sys.argv[1:]
rows = [json.loads(l) for l in open(d + "/metrics.jsonl")]
w = [x["pairs_per_second"] for x in rows[1:]]
rss = int(open(d + ".rss").read().split()[-1]) / 1024
print(f"round {r} {side:6s} pairs/s per 10-step window: {', '.join(f'{v:.1f}' for v in w)}; "
      f"mean {sum(w) / len(w):.1f}; loss at step 30 {rows[-1]['loss']:.4f}; peak RSS {rss:.0f} MiB")
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

#!/usr/bin/env bash
# What `lase train` does to every training sentence before its first step, timed in two
# builds of examples/tokenize_speed.rs (SentenceTokenizer::encode_to_store over N sampled
# training sentences, the trainer's 16,384-sentence chunks), interleaved rounds, as a
# ratio, on an otherwise idle machine. The same sentences and tokens on both sides (the
# script checks the token counts and a hash of the ids match).
#     bench/tokenize_speed.sh BEFORE_BINARY AFTER_BINARY [MODEL] [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2
MODEL=${3:-models/lase-base}
N=${4:-500000}
ROUNDS=${5:-3}
source bench/train_news_recipe.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/lase-tokenize-speed.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/sample_training_sentences.py "$work/sentences.txt" --count "$N" --per-file 2000 --seed 5 >/dev/null
print_cpu
echo "$(wc -l <"$work/sentences.txt") sampled training sentences, $MODEL's tokenizer, RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-all cores}"
for round in $(seq "$ROUNDS"); do
  for side in before after; do
    if [[ $side == before ]]; then bin=$BEFORE; else bin=$AFTER; fi
    line=$("$bin" "$MODEL" "$work/sentences.txt")
    echo "round $round $side: $line"
    echo "$line" >>"$work/$side"
  done
done
python3 - "$work" <<'PY'
import re, sys
d = sys.argv[1]
rate = {s: [float(re.search(r"([\d.]+) sentences/s", l).group(1)) for l in open(f"{d}/{s}")] for s in ("before", "after")}
tokens = {s: {re.search(r"(\d+ tokens, ids hash \w+)", l).group(1) for l in open(f"{d}/{s}")} for s in ("before", "after")}
assert tokens["before"] == tokens["after"] and len(tokens["after"]) == 1, f"tokens differ: {tokens}"
b, a = (sum(rate[s]) / len(rate[s]) for s in ("before", "after"))
print(f"after / before tokenising rate: {a / b:.2f}x ({a:.0f} vs {b:.0f} sentences/s, mean of {len(rate['after'])} rounds)")
PY

#!/usr/bin/env bash
# lase embed's in-process rate on the FLORES-200 English devtest (the sentences
# bench/serve_load.sh serves) at several most-padded-tokens-per-pass settings, interleaved
# rounds, with the shape of each run's passes from lase embed's debug log: how much a
# pass's size alone costs, apart from serving.
# Usage: [LASE_PRECISION=auto] [ROUNDS=3] bench/embed_pass_size.sh [MODEL_DIR] [TOKENS...]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/all-MiniLM-L6-v2}
shift || true
TOKENS=${*:-512 256 128}
S=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
OUT=$(mktemp --suffix .npy)
trap 'rm -f "$OUT"' EXIT
for round in $(seq 1 "${ROUNDS:-3}"); do
  for t in $TOKENS; do
    printed=$(LASE_LOG=warn,lase::inference=debug ./target/release/lase embed --precision "${LASE_PRECISION:-auto}" \
      --model "$MODEL" --input "$S" --output "$OUT" --quiet --max-batch-tokens "$t" 2>&1)
    rate=$(grep -o -E '[0-9.]+ sentences/s' <<<"$printed" | head -n 1)
    shape=$(grep -o -E '[0-9]+ passes for [0-9]+ sentences: [0-9]+ tokens, [0-9]+ with padding' <<<"$printed" |
      awk '{n+=$1; s+=$4; r+=$6; p+=$8} END {printf "%d passes, %.1f sentences per pass, padding %.1f%%", n, s/n, 100*(p-r)/p}')
    echo "round $round, --max-batch-tokens $t: $rate in-process; $shape"
  done
done

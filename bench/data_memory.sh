#!/usr/bin/env bash
# The memory a recipe's training data takes: runs `lase tokenizer coverage` (which reads the
# recipe's sources, drops test-set leaks, splits dev and keeps `max_train_pairs`' sample exactly
# as `lase train` does, then tokenizes a few sentences per language) and samples its /proc
# status every 0.1 s. Prints the peak (VmHWM) and the resident memory of the last sample before
# the process exits (the data as a trainer keeps it; coverage adds little to it).
#   bench/data_memory.sh LASE_BINARY RECIPE MODEL_DIR
set -euo pipefail
bin=$1 recipe=$2 model=$3
start=$(date +%s.%N)
"$bin" tokenizer coverage --threads 1 --per-language 100 --model "$model" --config "$recipe" \
  > /dev/null 2>&1 &
pid=$!
hwm=0 last=0 samples=0
while [[ -r /proc/$pid/status ]]; do
  status=$(cat "/proc/$pid/status" 2>/dev/null) || break
  rss=$(awk '/^VmRSS:/ {print $2}' <<< "$status")
  peak=$(awk '/^VmHWM:/ {print $2}' <<< "$status")
  [[ -n $rss ]] || break
  last=$rss hwm=$peak samples=$((samples + 1))
  sleep 0.1
done
wait "$pid" && rc=0 || rc=$?
end=$(date +%s.%N)
awk -v b="$bin" -v r="$recipe" -v h="$hwm" -v l="$last" -v n="$samples" -v s="$start" -v e="$end" -v rc="$rc" \
  'BEGIN { printf "%s on %s: rc %d, %.1f s, peak (VmHWM) %.2f GB, resident at the last of %d samples %.2f GB\n", b, r, rc, e - s, h / 1048576, n, l / 1048576 }'

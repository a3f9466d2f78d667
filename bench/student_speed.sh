#!/usr/bin/env bash
# Encode speed of the shipped student against the teacher: the same sentences (FLORES-200
# devtest, 1,012 English and 1,012 German), the same binary, the same threads, one after
# the other in this script. Prints sentences/s, peak RSS and the ratio.
# Usage: bench/student_speed.sh [STUDENT] [TEACHER] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
student=${1:-models/lase-small}
teacher=${2:-models/all-MiniLM-L6-v2}
threads=${3:-2}
# f32 unless LASE_PRECISION says otherwise (the figures in docs/benchmarks.md are f32).
precision=${LASE_PRECISION:-f32}
input=$(mktemp --suffix .txt)
cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest ../shared/data/flores200-devtest/devtest/deu_Latn.devtest >"$input"
n=$(wc -l <"$input")
declare -A rate
for model in "$teacher" "$student"; do
  target/release/lase --threads "$threads" embed --precision "$precision" --model "$model" --input "$input" --output /tmp/speed.npy --quiet >/dev/null  # warm-up (page cache)
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o /tmp/speed.rss target/release/lase --threads "$threads" embed --precision "$precision" --model "$model" \
    --input "$input" --output /tmp/speed.npy --quiet >/dev/null
  end=$(date +%s.%N)
  seconds=$(echo "$end - $start" | bc -l)
  rate[$model]=$(echo "$n / $seconds" | bc -l)
  printf "%-28s %6.1f sentences/s  (%d sentences, %.1f s, peak RSS %d MiB, %s on disk)\n" "$model" "${rate[$model]}" "$n" "$seconds" \
    $(($(cat /tmp/speed.rss) / 1024)) "$(du -sh --apparent-size "$model" | cut -f1)"
done
printf "ratio student / teacher: %.2f\n" "$(echo "${rate[$student]} / ${rate[$teacher]}" | bc -l)"
rm -f "$input" /tmp/speed.npy /tmp/speed.rss

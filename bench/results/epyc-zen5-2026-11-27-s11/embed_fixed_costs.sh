#!/usr/bin/env bash
# Fixed costs of one `lase embed` process (start, model load, auto's probe): wall time for 3
# sentences in int8, and for the 2,024 sentences of bench/student_speed.sh in int8 and auto,
# lase-base and lase-mini, 2 threads, two rounds; the caller stops other work first.
set -euo pipefail
cd "$(dirname "$0")/../../.."
all=$(mktemp --suffix .txt); three=$(mktemp --suffix .txt)
cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest ../shared/data/flores200-devtest/devtest/deu_Latn.devtest >"$all"
head -3 "$all" >"$three"
wall() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); printf "%.3f" "$(echo "$e - $s" | bc -l)"; }
for round in 1 2; do
  for m in models/lase-base models/lase-mini; do
    t3=$(wall target/release/lase --threads 2 embed --precision int8 --model $m --input "$three" --output /tmp/fixed.npy --quiet)
    ti=$(wall target/release/lase --threads 2 embed --precision int8 --model $m --input "$all" --output /tmp/fixed.npy --quiet)
    ta=$(wall target/release/lase --threads 2 embed --precision auto --model $m --input "$all" --output /tmp/fixed.npy --quiet)
    echo "round $round $m: 3 sentences int8 ${t3} s; 2024 sentences int8 ${ti} s, auto ${ta} s"
  done
done
rm -f "$all" "$three" /tmp/fixed.npy

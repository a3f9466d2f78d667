#!/usr/bin/env bash
# Model-load A/B: wall time of `lase embed --precision int8` on 3 sentences (process start,
# model load, one pass) for lase-base and lase-mini, two binaries interleaved, ROUNDS rounds;
# the caller stops other work first.
# Usage: bench/results/epyc-zen5-2026-11-27-s11/load_ab.sh BEFORE AFTER ROUNDS
set -euo pipefail
cd "$(dirname "$0")/../../.."
before=$1 after=$2 rounds=${3:-5}
three=$(mktemp --suffix .txt)
head -3 ../shared/data/flores200-devtest/devtest/eng_Latn.devtest >"$three"
wall() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); printf "%.3f" "$(echo "$e - $s" | bc -l)"; }
for m in models/lase-base models/lase-mini; do
  for bin in "$before" "$after"; do wall "$bin" --threads 2 embed --precision int8 --model $m --input "$three" --output /tmp/load_ab.npy --quiet >/dev/null; done  # page cache
  b=() a=()
  for i in $(seq "$rounds"); do
    b+=("$(wall "$before" --threads 2 embed --precision int8 --model $m --input "$three" --output /tmp/load_ab.npy --quiet)")
    a+=("$(wall "$after" --threads 2 embed --precision int8 --model $m --input "$three" --output /tmp/load_ab.npy --quiet)")
  done
  echo "$m before: ${b[*]}"
  echo "$m after:  ${a[*]}"
  printf "%s median before %s s, after %s s\n" "$m" "$(printf "%s\n" "${b[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")" "$(printf "%s\n" "${a[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")"
done
rm -f "$three" /tmp/load_ab.npy

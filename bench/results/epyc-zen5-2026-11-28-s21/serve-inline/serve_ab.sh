#!/usr/bin/env bash
# serve_load A/B on one machine, alternating BEFORE and AFTER binaries, ROUNDS times, nothing
# else running. Twenty-first session: BEFORE = the tree at 1daa145 (every request tokenised on
# a blocking thread through rayon), AFTER = the same tree with requests of <= 1 KiB of text
# tokenised on the HTTP runtime's thread without rayon.
# Usage: bench/results/epyc-zen5-2026-11-28-s21/serve-inline/serve_ab.sh BEFORE AFTER ROUNDS SECONDS
set -euo pipefail
cd "$(dirname "$0")/../../../.."
before=$1 after=$2 rounds=${3:-4} seconds=${4:-10}
out=${OUT:-bench/results/epyc-zen5-2026-11-28-s21/serve-inline}
for i in $(seq "$rounds"); do
  LASE=$before LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 "$seconds" > "$out/serve_before_$i.txt" 2>&1
  LASE=$after LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 "$seconds" > "$out/serve_after_$i.txt" 2>&1
done
for f in "$out"/serve_before_*.txt "$out"/serve_after_*.txt; do
  echo "$f: $(grep -E '^\| 64 ' "$f")"
done

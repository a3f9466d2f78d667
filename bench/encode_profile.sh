#!/usr/bin/env bash
# Where lase's encode time goes (issue 19): `perf record` of `lase embed` on 3,112 real
# English sentences (FLORES-200 devtest + TICO-19 test), all-MiniLM-L6-v2, 2 threads, in
# PRECISION (default bf16), then the shares of the shared objects and the top symbols.
#   bench/encode_profile.sh [PRECISION]      # needs perf; run with nothing else busy
set -euo pipefail
cd "$(dirname "$0")/.."
precision=${1:-bf16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest
 zcat ../shared/data/tico19-test/en-fr/tico19-test.en.gz) > "$tmp/sentences.txt"
grep -m1 "model name" /proc/cpuinfo
grep -m1 -o -w -E "avx512_bf16|amx_bf16" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
./target/release/lase embed --model models/all-MiniLM-L6-v2 --input "$tmp/sentences.txt" \
  --output "$tmp/e.npy" --precision "$precision" --threads 2 --quiet
perf record -q -o "$tmp/perf.data" ./target/release/lase embed --model models/all-MiniLM-L6-v2 \
  --input "$tmp/sentences.txt" --output "$tmp/e.npy" --precision "$precision" --threads 2 --quiet
perf report -i "$tmp/perf.data" --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
perf report -i "$tmp/perf.data" --no-children --sort symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' \
  | head -14 | cut -c1-150

#!/usr/bin/env bash
# The rate `lase embed` prints itself (tokenising and encoding; no process start, model load
# or auto's probe) for lase-base and lase-mini on bench/student_speed.sh's 2,024 FLORES
# sentences, auto precision, 2 threads, two rounds; the caller stops other work first.
set -euo pipefail
cd "$(dirname "$0")/../../.."
input=$(mktemp --suffix .txt)
cat ../shared/data/flores200-devtest/devtest/eng_Latn.devtest ../shared/data/flores200-devtest/devtest/deu_Latn.devtest >"$input"
for round in 1 2; do
  for m in models/lase-base models/lase-mini; do
    echo "round $round $m: $(target/release/lase --threads 2 embed --model $m --input "$input" --output /tmp/inproc.npy 2>&1 | grep 'sentences/s' | tail -1)"
  done
done
rm -f "$input" /tmp/inproc.npy

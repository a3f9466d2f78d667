#!/usr/bin/env bash
# Thirty-second session: the memory of a recipe's training data before (the binary built at
# 630f34a, copied to /tmp/lase-before) and after split_dev moves pairs and keep_sample copies
# its sample out (target/release/lase), three alternating runs each, on the 256,000-pair sample
# of run18tcm1k's recipe and on the whole corpus of a GPU recipe (no max_train_pairs).
set -euo pipefail
cd "$(dirname "$0")/../../.."
grep -m1 'model name' /proc/cpuinfo
for recipe in configs/lase-base-run18tcm1k-mse2-cpu.toml configs/lase-base-run10-mse2-gpu.toml; do
  for round in 1 2 3; do
    for bin in /tmp/lase-before target/release/lase; do
      bench/data_memory.sh "$bin" "$recipe" models/lase-base
    done
  done
done

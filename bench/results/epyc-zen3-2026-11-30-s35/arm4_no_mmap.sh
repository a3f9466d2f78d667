#!/usr/bin/env bash
# Session 35 (Zen 3): a perf profile of a running arm (perf_arm2_before.txt) put 31.6% of its
# time in the kernel, 22.8% in clear_page_erms under page faults: glibc hands every tensor
# over its mmap threshold (at most 32 MiB) a fresh mmap, and munmap gives it back on free, so
# each training step zeroes its activations' pages again. This restarts arm 4 right after
# its step-200 checkpoint with glibc's mmap use turned off by its tunables (the allocator
# only; the arithmetic is the same), leaving arm 2 as it runs, to compare pairs/s.
set -euo pipefail
cd "$(dirname "$0")/../../.."
a=runs/lase-base-run19tcm1k-mse4-cpu
until grep -q '"step": 200,' $a/checkpoint/state.json; do sleep 5; done
pid=$(pgrep -f 'mse4-cpu.toml')
kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 1; done
echo "$(date -u +%T) arm 4 (pid $pid) stopped after its step-200 checkpoint; restarted with GLIBC_TUNABLES" >> bench/results/epyc-zen3-2026-11-30-s34/arms_pauses.txt
GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296 \
nohup runs/bin/lase --threads 1 train --config configs/lase-base-run19tcm1k-mse4-cpu.toml \
  --out $a --precision f32 --quiet >> runs/run19tcm1k-mse4.log 2>&1 &
echo "arm 4 pid $!"

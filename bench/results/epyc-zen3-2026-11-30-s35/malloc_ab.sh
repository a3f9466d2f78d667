#!/usr/bin/env bash
# Session 35 (Zen 3): does turning glibc's mmap use off speed a single training process up?
# (Side by side with arm 2, arm 4 restarted that way ran no faster: arms' metrics.jsonl.)
# Arm 4 is stopped after its step-275 checkpoint and arm 2 paused (SIGSTOP) so that the
# machine is otherwise idle; bench/train_ab.sh at the arms' batch (256 pairs, f32, both
# cores) with runs/bin/lase as BEFORE and lase_no_mmap.sh as AFTER; then the arms go on.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=bench/results/epyc-zen3-2026-11-30-s35
P=bench/results/epyc-zen3-2026-11-30-s34/arms_pauses.txt
a=runs/lase-base-run19tcm1k-mse4-cpu
until grep -q '"step": 275,' $a/checkpoint/state.json; do sleep 5; done
p4=$(pgrep -f 'mse4-cpu.toml'); p2=$(pgrep -f 'mse2-cpu.toml')
kill "$p4"; while kill -0 "$p4" 2>/dev/null; do sleep 1; done
kill -STOP "$p2"
echo "$(date -u +%T) arm 4 (pid $p4) stopped after its step-275 checkpoint, arm 2 (pid $p2) SIGSTOP, for malloc_ab.sh" >> $P
PRECISION=f32 BATCH=256 STEPS=20 bench/train_ab.sh runs/bin/lase $D/lase_no_mmap.sh /tmp/malloc-ab > $D/malloc_ab.txt 2>&1 || true
kill -CONT "$p2"
nohup runs/bin/lase --threads 1 train --config configs/lase-base-run19tcm1k-mse4-cpu.toml \
  --out $a --precision f32 --quiet >> runs/run19tcm1k-mse4.log 2>&1 &
echo "$(date -u +%T) arm 2 SIGCONT; arm 4 resumed (pid $!, default glibc settings again)" >> $P

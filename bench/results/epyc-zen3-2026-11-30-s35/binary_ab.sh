#!/usr/bin/env bash
# Session 35 (Zen 3): the binary that calls runtime::keep_freed_memory_for_reuse (built at
# f816589) against the arms' binary without it (runs/bin/lase, built at e01eb12's tree), the
# same bench/train_ab.sh run as malloc_ab.sh (batch 256, f32, 20 steps, both cores), with no
# GLIBC_TUNABLES on either side. Each arm is stopped after its step-400 checkpoint (the
# machine's memory holds two arms, not a third training process), then both resume with the
# new binary (start_arms.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=bench/results/epyc-zen3-2026-11-30-s35
P=bench/results/epyc-zen3-2026-11-30-s34/arms_pauses.txt
for a in 2 4; do
  f=runs/lase-base-run19tcm1k-mse$a-cpu/checkpoint/state.json
  ( until grep -q '"step": 400,' $f; do sleep 3; done
    p=$(pgrep -f "mse$a-cpu.toml"); kill "$p"; while kill -0 "$p" 2>/dev/null; do sleep 1; done
    echo "$(date -u +%T) arm $a (pid $p) stopped after its step-400 checkpoint for binary_ab.sh" >> $P ) &
done
wait
unset GLIBC_TUNABLES
PRECISION=f32 BATCH=256 STEPS=20 bench/train_ab.sh runs/bin/lase /tmp/lase-after /tmp/binary-ab > $D/binary_ab.txt 2>&1 || true
sha256sum runs/bin/lase /tmp/lase-after target/release/lase >> $D/binary_ab.txt
bash bench/results/epyc-zen3-2026-11-30-s34/start_arms.sh
echo "$(date -u +%T) both arms resumed from step 400 with the binary built at f816589 (start_arms.sh)" >> $P

#!/usr/bin/env bash
cd /work/main
R=bench/results/epyc-zen3-2026-11-28-s16
while pgrep -f soup_s16.sh >/dev/null; do sleep 5; done
echo "soup done $(date -u +%H:%M:%S)"
st=runs/lase-base-run15-mse2-cpu/checkpoint/state.json
m0=$(stat -c %Y $st 2>/dev/null || echo 0)
while [ "$(stat -c %Y $st 2>/dev/null || echo 0)" = "$m0" ]; do sleep 3; done
sleep 20   # the checkpoint's other files
step=$(python3 -c "import json; print(json.load(open('$st'))['step'])")
echo "checkpoint at step $step $(date -u +%H:%M:%S); stopping the arm"
pkill -f 'lase --threads 2 train --config configs/lase-base-run15-mse2-cpu.toml'
sleep 5
$R/serve_tokens_ab.sh
echo "A/B done $(date -u +%H:%M:%S); resuming the arm"
setsid nohup bash -c './target/release/lase --threads 2 train --config configs/lase-base-run15-mse2-cpu.toml --out runs/lase-base-run15-mse2-cpu --precision f32 >> runs/run15-mse2-cpu-s16.log 2>&1' >/dev/null 2>&1 &

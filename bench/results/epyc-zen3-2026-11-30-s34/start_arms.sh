#!/usr/bin/env bash
# the two arms of round run19tcm1k, f32 on this AVX2-only Zen 3 (rule: f32 where no BF16/AMX), side by side
cd /work/main
mkdir -p /work/train-bin runs
cp -f target/release/lase /work/train-bin/lase
for a in 2 4; do
  nohup /work/train-bin/lase --threads 1 train --config configs/lase-base-run19tcm1k-mse$a-cpu.toml \
    --out runs/lase-base-run19tcm1k-mse$a-cpu --precision f32 --quiet >> runs/run19tcm1k-mse$a.log 2>&1 &
  echo "arm $a pid $!"
done

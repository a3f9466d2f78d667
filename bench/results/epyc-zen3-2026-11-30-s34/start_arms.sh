#!/usr/bin/env bash
# The two arms of round run19tcm1k side by side, one thread each, f32 on this AVX2-only Zen 3
# (the rule: f32 on a CPU without AVX512-BF16 or AMX), each resuming from its checkpoint if one
# is there. They run a copy of the release binary (runs/bin/lase), so that rebuilding the
# checkout does not change the binary a resumed arm runs. Scoring: after_s34.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p runs/bin
cp -f target/release/lase runs/bin/lase
for a in 2 4; do
  nohup runs/bin/lase --threads 1 train --config configs/lase-base-run19tcm1k-mse$a-cpu.toml \
    --out runs/lase-base-run19tcm1k-mse$a-cpu --precision f32 --quiet >> runs/run19tcm1k-mse$a.log 2>&1 &
  echo "arm $a pid $!"
done

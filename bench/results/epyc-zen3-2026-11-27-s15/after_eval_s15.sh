#!/usr/bin/env bash
# Session 15, after after_mini_s15.sh: the checks of this session's code (scripts/test.sh,
# the setup already done here), then run 15's two CPU arms (rule-run15.md of the thirteenth
# session) in f32 (this Zen 3 has no bf16 hardware), one after the other, each resumable:
# the session that finds them at step 500 scores them with scripts/score_arms.sh.
# As run: its shell was stopped (kill) while its cargo test ran, which went on writing
# checks.txt; the arms gave way to a shorter lase-mini continuation that fits the session
# (mini_s15.sh) and were not started.
set -uo pipefail
cd /work/main
R=bench/results/epyc-zen3-2026-11-27-s15
while pgrep -f "[a]fter_mini_s15.sh" >/dev/null; do sleep 15; done
echo "checks start $(date -u +%H:%M:%S)"
{ cargo fmt --check && echo "fmt ok"
  cargo clippy --release --all-targets --quiet -- -D warnings && echo "clippy ok"
  LASE_REQUIRE_TEACHER=1 cargo test --release 2>&1 | grep -E "^test result|FAILED|panicked|failed" ; } > $R/checks.txt 2>&1
echo "checks done $(date -u +%H:%M:%S)"
for a in 2 4; do
  ./target/release/lase --threads 2 train --config configs/lase-base-run15-mse$a-cpu.toml \
    --out runs/lase-base-run15-mse$a-cpu --precision f32 > $R/run15-mse$a-cpu.log 2>&1
  echo "arm $a ended rc $? $(date -u +%H:%M:%S)"
done

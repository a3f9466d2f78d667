#!/usr/bin/env bash
# Today's `lase serve` against the in-process rate on this Zen 5 (issue 19's serving goal):
# bench/serve_load.sh ROUNDS times at `auto`, 10 s a level, with round run20tcm1k's training
# stopped (SIGSTOP) around it and started again (SIGCONT) after, even on error; the stop and
# the start are appended to arms_pauses.txt. Usage: serve_s39.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=bench/results/epyc-zen5-2026-12-01-s39
rounds=${1:-6}
pat='lase-run20tcm1k --threads 2 (train|distill)'
resume() { pkill -CONT -f "$pat" || true; echo "$(date -u +%H:%M:%S) UTC  training continued (SIGCONT) after serve_s39.sh" >> $here/arms_pauses.txt; }
if pkill -STOP -f "$pat"; then
  echo "$(date -u +%H:%M:%S) UTC  training stopped (SIGSTOP) for serve_s39.sh" >> $here/arms_pauses.txt
  trap resume EXIT
fi
sleep 2
./target/release/lase info > $here/lase_info.txt 2>&1
for i in $(seq "$rounds"); do
  LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 > "$here/serve_auto_$i.txt" 2>&1
  echo "round $i: $(grep -E '^\| 64 ' "$here/serve_auto_$i.txt")"
done

#!/usr/bin/env bash
# Thirty-second session, AMX Xeon (VM model 167): `lase serve`'s passes cut by padded tokens
# (BEFORE: the binary built at 630f34a, --forward-batch-tokens 256 padded, the CPU default then)
# against passes cut by real tokens (AFTER: target/release/lase, plan_run_passes, 512 real
# tokens, the new default), under `auto` (= bf16 here), 64 clients among 1/8/64, 10 s a level,
# interleaved ABBA so neither binary always runs first. Nothing else ran (training finished).
# Each run prints its own in-process `lase embed` rate beside the served one; the summary sums
# both over the rounds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=$(dirname "$0")
BEFORE=${BEFORE:-/tmp/lase-before}
ROUNDS=${ROUNDS:-2}
grep -m1 'model name' /proc/cpuinfo; grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
run() { # arm round
  local bin=$BEFORE; [ "$1" = after ] && bin=target/release/lase
  echo "== $1, round $2, $(date -u +%H:%M:%S)"
  LASE=$bin LASE_PRECISION=auto bench/serve_load.sh models/all-MiniLM-L6-v2 10 > "$R/serve_plan_$1_r$2.txt" 2>&1
  grep -E '^offline|^\| 64 |64 clients:' "$R/serve_plan_$1_r$2.txt"
}
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then run before "$round"; run after "$round"; else run after "$round"; run before "$round"; fi
done
for arm in before after; do
  cat "$R"/serve_plan_${arm}_r*.txt | awk -v arm=$arm '
    /^offline/ { for (i = 1; i <= NF; i++) if ($i == "in-process") inproc += $(i - 2) }
    /^\| 64 \|/ { split($0, c, "|"); served += c[4] + 0 }
    END { printf "%s: served at 64 clients %.1f, in-process %.1f (summed over the rounds): %.3fx\n", arm, served, inproc, served / inproc }'
done

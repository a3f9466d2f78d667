#!/usr/bin/env bash
# After the rule chose none: the test sets of the two candidates nearest to qualifying
# (read after the choice; they change nothing), against run 16's numbers of the s19 session.
set -euo pipefail
cd "$(dirname "$0")/../../.."
O=bench/results/epyc-zen5-2026-11-28-s21
until grep -q '^rc=' $O/cargo_test_release.txt; do sleep 15; done
for m in interp-r16-m-0.3 m-r16; do
  scripts/default_model_eval.sh runs/$m runs/eval/$m > $O/eval-$m-summary.txt 2>&1
  rm -rf $O/eval-$m && cp -r runs/eval/$m $O/eval-$m
  python3 scripts/tatoeba_compare.py bench/results/xeon-amx-2026-11-28-s19/eval-lase-base-run16/eval-tatoeba112.json \
    runs/eval/$m/eval-tatoeba112.json > $O/tatoeba_run16_to_$m.txt
  echo "$m done $(date -u +%H:%M:%S)"
done

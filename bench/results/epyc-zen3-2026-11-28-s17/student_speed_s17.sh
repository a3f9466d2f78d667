#!/usr/bin/env bash
# lase-mini against lase-base (the shipped pair since the sixteenth session) with
# bench/student_speed.sh (interleaved rounds, best of each): 5 rounds under auto, 3 in f32.
# The caller pauses other work (the training: SIGSTOP) first.
set -euo pipefail
cd "$(dirname "$0")/../../.."
echo "## ROUNDS=5 LASE_PRECISION=auto bench/student_speed.sh models/lase-mini models/lase-base 2"
ROUNDS=5 LASE_PRECISION=auto bench/student_speed.sh models/lase-mini models/lase-base 2
echo "## ROUNDS=3 bench/student_speed.sh models/lase-mini models/lase-base 2   (f32)"
ROUNDS=3 bench/student_speed.sh models/lase-mini models/lase-base 2

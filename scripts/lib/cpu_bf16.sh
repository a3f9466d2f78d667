# shellcheck shell=bash
# Whether this CPU computes bf16 in hardware (AVX512-BF16 or AMX-BF16). Elsewhere libtorch
# emulates bf16 and it is slower than f32, so the scripts that pick a precision (training in
# scripts/score_arms.sh, the test sets in scripts/adopt_default.sh) ask this first.
#   cpu_has_bf16        status 0 if the CPU's flags list avx512_bf16 or amx_bf16
#   pick_training_precision  sets `precision` and `why`: LASE_TRAIN_PRECISION if set, else
#                       bf16 where cpu_has_bf16 and f32 elsewhere (scripts/score_arms.sh,
#                       scripts/mini_round.sh)
# The flags are read from /proc/cpuinfo, or from the file LASE_CPUINFO names (the scripts'
# tests use it to stand for either kind of CPU).
cpu_has_bf16() {
  grep -q -w -E 'avx512_bf16|amx_bf16' "${LASE_CPUINFO:-/proc/cpuinfo}" 2>/dev/null
}
pick_training_precision() {
  if [ -n "${LASE_TRAIN_PRECISION:-}" ]; then
    precision=$LASE_TRAIN_PRECISION why="LASE_TRAIN_PRECISION"
  elif cpu_has_bf16; then
    precision=bf16 why="the CPU has AVX512-BF16 or AMX"
  else
    precision=f32 why="the CPU has neither AVX512-BF16 nor AMX: bf16 would be emulated"
  fi
}

# Sourced (not run) by scripts/score_arms.sh, scripts/score_mini.sh and scripts/gpu_train.sh: how far a `lase train`
# or `lase distill` run has got, read from the files the trainer writes.
#   recipe_steps CONFIG   the recipe's last step (its `steps = N` line; of the recipe as
#                         `$LASE recipe` merges it when CONFIG extends a base); empty if none
#   checkpoint_step RUN   the step of RUN's last checkpoint (RUN/checkpoint/state.json); 0 if none
recipe_steps() {
  if grep -Eq '^[[:space:]]*"?extends"?[[:space:]]*=' "$1"; then
    "${LASE:-./target/release/lase}" recipe --config "$1" | sed -n 's/^steps = \([0-9]*\)$/\1/p' | head -1
  else
    sed -n 's/^steps = \([0-9]*\)$/\1/p' "$1" | head -1
  fi
}
checkpoint_step() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
    "$1/checkpoint/state.json" 2>/dev/null || echo 0
}

# Sourced (not run) by scripts/score_arms.sh, scripts/score_mini.sh and scripts/gpu_train.sh: how far a `lase train`
# or `lase distill` run has got, read from the files the trainer writes.
#   recipe_steps CONFIG   the recipe's last step (its `steps = N` line); empty if it has none
#   checkpoint_step RUN   the step of RUN's last checkpoint (RUN/checkpoint/state.json); 0 if none
recipe_steps() {
  sed -n 's/^steps = \([0-9]*\)$/\1/p' "$1" | head -1
}
checkpoint_step() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
    "$1/checkpoint/state.json" 2>/dev/null || echo 0
}

# Sourced (not run) by scripts/score_arms.sh, scripts/score_mini.sh and scripts/gpu_train.sh: how far a `lase train`
# or `lase distill` run has got, read from the files the trainer writes.
#   recipe_steps CONFIG   the recipe's last step (the `steps = N` line of recipe_text CONFIG,
#                         scripts/lib/recipe.sh); empty if none
#   checkpoint_step RUN   the step of RUN's last checkpoint (RUN/checkpoint/state.json); 0 if none
. "$(dirname "${BASH_SOURCE[0]}")/recipe.sh"
recipe_steps() {
  recipe_text "$1" | sed -n 's/^steps = \([0-9]*\)$/\1/p' | head -1
}
checkpoint_step() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" \
    "$1/checkpoint/state.json" 2>/dev/null || echo 0
}

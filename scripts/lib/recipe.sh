# Sourced (not run) by scripts that read a recipe's keys in shell: scripts/lib/run_progress.sh,
# scripts/continue_mini.sh, scripts/distill_ablations.sh.
#   recipe_text CONFIG   the recipe as it trains: `$LASE recipe` (its extends chain merged, every
#                        default filled in) when CONFIG extends a base, else CONFIG's own text
recipe_text() {
  if grep -Eq '^[[:space:]]*"?extends"?[[:space:]]*=' "$1"; then
    "${LASE:-./target/release/lase}" recipe --config "$1"
  else
    cat "$1"
  fi
}

# Sourced (not run) by scripts/score_mini.sh and the session scripts that score lase-mini
# candidates (bench/results/*/mini3_s23.sh): the lase-mini rules' dev measure.
#   mini_dev_score MODEL JSON   `lase dev-score` of MODEL on all dev pairs of configs/lase-mini.toml's
#                               split into JSON (written whole: via JSON.tmp), the command and the
#                               score's last two lines into JSON's name with .txt; skipped when
#                               JSON is there. The binary: $LASE (default ./target/release/lase).
mini_dev_score() {
  [ -f "$2" ] && return 0
  { echo "\$ lase --threads 2 dev-score --model $1 --config configs/lase-mini.toml --set run.dev_max_pairs=0 --json $(basename "$2")"
    ${LASE:-./target/release/lase} --threads 2 dev-score --model "$1" --config configs/lase-mini.toml \
      --set run.dev_max_pairs=0 --json "$2.tmp" 2>&1 | { grep -v '^\s*$' || true; } | tail -2; } > "${2%.json}.txt"
  mv "$2.tmp" "$2"
}

# Sourced (not run) by scripts/score_arms.sh and the session scripts that score lase-base
# candidates (bench/results/*/after_s25b.sh): the default's rules' dev measure.
#   base_dev_score MODEL OUT_DIR   `lase dev-score` of MODEL on all dev pairs of
#                                  configs/lase-base-non-pivot-cpu-anneal.toml's split, with agreement
#                                  against models/all-MiniLM-L6-v2, into OUT_DIR/devscore-NAME.json
#                                  (NAME = MODEL's folder name; written whole, via .json.tmp) and the
#                                  score's last three lines into devscore-NAME.txt; skipped when the
#                                  JSON is there. The binary: $LASE (default ./target/release/lase).
base_dev_score() {
  local t
  t=$(basename "$1")
  [ -f "$2/devscore-$t.json" ] && return 0
  ${LASE:-./target/release/lase} --threads 2 dev-score --model "$1" --config configs/lase-base-non-pivot-cpu-anneal.toml \
    --set run.dev_max_pairs=0 --teacher models/all-MiniLM-L6-v2 --json "$2/devscore-$t.json.tmp" \
    2>&1 | grep -v "^\s*$" | tail -3 > "$2/devscore-$t.txt"
  mv "$2/devscore-$t.json.tmp" "$2/devscore-$t.json"
}

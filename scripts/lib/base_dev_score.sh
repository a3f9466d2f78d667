# Sourced (not run) by scripts/score_arms.sh and the session scripts that score lase-base
# candidates (bench/results/*/after_s25b.sh, after_s27.sh): the default's rules' dev measure,
# their rule, and the candidates that pool two rounds of arms.
#   base_dev_score MODEL OUT_DIR   `lase dev-score` of MODEL on all dev pairs of
#                                  configs/lase-base-non-pivot-cpu-anneal.toml's split, with agreement
#                                  against models/all-MiniLM-L6-v2, into OUT_DIR/devscore-NAME.json
#                                  (NAME = MODEL's folder name; written whole, via .json.tmp) and the
#                                  score's last three lines into devscore-NAME.txt; skipped when the
#                                  JSON is there. The binary: $LASE (default ./target/release/lase).
#   base_dev_rule OUT_DIR OUTCOME JSON...
#                                  scripts/dev_rule.py of the candidates' JSONs against
#                                  OUT_DIR/devscore-lase-base.json by the default's rule (retrieval
#                                  mean >= + 0.3, agreement >= - 0.5, the WMT-news languages' dev
#                                  group >= the default's; $LASE_RULE_ARGS replaces these), printed
#                                  and written to OUTCOME.
#   pool_arms MEAN_A MEAN_B TAG OUT_DIR
#                                  The pooled candidates of rule-run17osb.md and rule-run18osb.md:
#                                  runs/m4-TAG = 0.5 MEAN_A + 0.5 MEAN_B (two rounds' arm means),
#                                  runs/interp-TAG-m4-X = models/lase-base moved X = 0.3 and 0.5 of
#                                  the way to it (`lase interpolate`, its lines in
#                                  OUT_DIR/interpolate-*.txt), each scored by base_dev_score.
base_dev_score() {
  local t
  t=$(basename "$1")
  [ -f "$2/devscore-$t.json" ] && return 0
  ${LASE:-./target/release/lase} --threads 2 dev-score --model "$1" --config configs/lase-base-non-pivot-cpu-anneal.toml \
    --set run.dev_max_pairs=0 --teacher models/all-MiniLM-L6-v2 --json "$2/devscore-$t.json.tmp" \
    2>&1 | grep -v "^\s*$" | tail -3 > "$2/devscore-$t.txt"
  mv "$2/devscore-$t.json.tmp" "$2/devscore-$t.json"
}

base_dev_rule() {
  local dir=$1 outcome=$2
  shift 2
  # shellcheck disable=SC2086
  python3 scripts/dev_rule.py --base "$dir/devscore-lase-base.json" "$@" \
    ${LASE_RULE_ARGS:---min-gain 0.3 --max-agreement-loss 0.5 --group-folder ../shared/data/parallel-news --bootstrap 2000} \
    | tee "$outcome"
}

pool_arms() {
  local lase=${LASE:-./target/release/lase} tag=$3 out=$4 x m
  $lase interpolate --model "$1" --to "$2" --alpha 0.5 --output "runs/m4-$tag" \
    2>&1 | tee "$out/interpolate-m4-$tag.txt"
  for x in 0.3 0.5; do
    $lase interpolate --model models/lase-base --to "runs/m4-$tag" --alpha $x \
      --output "runs/interp-$tag-m4-$x" 2>&1 | tee "$out/interpolate-$tag-m4-$x.txt"
  done
  for m in "runs/m4-$tag" "runs/interp-$tag-m4-0.3" "runs/interp-$tag-m4-0.5"; do
    base_dev_score "$m" "$out"
  done
}

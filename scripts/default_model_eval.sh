#!/usr/bin/env bash
# The numbers the default-model issue asks for, for one model, each suite into its own
# JSON and text log in OUT_DIR (an interrupted run resumes where it stopped):
#   FLORES-200 devtest xx-eng P@1 (both directions) for deu, fra, spa, rus, zho_Hans, arb,
#   and the 30 non-English pairs among them; Tatoeba (all 112 languages); STS (STS-B in 11
#   languages, KorSTS, cross-lingual). Then prints one summary line per suite and FLORES
#   per language. TATOEBA=0 leaves Tatoeba out (its 112 languages take the longest).
#   Usage: [PRECISION=f32|bf16|int8] [TATOEBA=0] scripts/default_model_eval.sh MODEL_DIR OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
PRECISION=${PRECISION:-f32}
FLORES6=deu_Latn,fra_Latn,spa_Latn,rus_Cyrl,zho_Hans,arb_Arab
model=$1 dir=$2
mkdir -p "$dir"

suite() { # name tag [extra eval arguments...]
  local name=$1 tag=$2; shift 2
  [ -f "$dir/eval-$tag.json" ] && return 0
  $LASE eval --model "$model" --suite "$name" --precision "$PRECISION" --quiet "$@" \
    --json "$dir/eval-$tag.json.tmp" --report "$dir/eval-$tag.md" >"$dir/eval-$tag.txt"
  mv "$dir/eval-$tag.json.tmp" "$dir/eval-$tag.json"
}

suite flores flores6 --langs "$FLORES6"
suite sts sts
[ "${TATOEBA:-1}" = 0 ] || suite tatoeba tatoeba112
echo "== $model"
cat "$dir"/eval-flores6.txt "$dir"/eval-sts.txt | grep -v "^$"
[ "${TATOEBA:-1}" = 0 ] || grep -v "^$" "$dir"/eval-tatoeba112.txt
python3 - "$dir/eval-flores6.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["flores"]["xx_eng"]
print("flores xx-eng P@1 (mean of both directions): " + ", ".join(
    f"{k.split('-')[0]} {50 * (v['p_at_1_xy'] + v['p_at_1_yx']):.1f}" for k, v in sorted(r.items())))
PY

#!/usr/bin/env bash
# Evaluates one ablation model on the benchmark columns of docs/results.md's ablation
# tables, each suite into its own JSON in RUN_DIR so an interrupted run resumes where it
# stopped: Tatoeba's XTREME-36 languages (eval-tatoeba.json), STS-B mono and cross-lingual
# (eval.json, the file older scripts took as "done"), FLORES-200 devtest xx-eng and the 30
# non-English pairs among 6 languages (eval-flores.json), SIB-200 zero-shot from English
# (eval-sib.json); RUN_DIR/evaluated-model.txt names the model they describe.
# Usage: scripts/ablation_eval.sh MODEL_DIR RUN_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
XTREME36=afr,ara,bul,ben,deu,ell,spa,est,eus,pes,fin,fra,heb,hin,hun,ind,ita,jpn,jav,kat,kaz,kor,mal,mar,nld,por,rus,swh,tam,tel,tha,tgl,tur,urd,vie,cmn
FLORES6=deu_Latn,fra_Latn,spa_Latn,rus_Cyrl,zho_Hans,arb_Arab
model=$1 dir=$2
# The model the JSON files in RUN_DIR describe: evaluating another one (best-model/ instead
# of model/) starts the suites afresh.
record="$dir/evaluated-model.txt"
if [ "$(cat "$record" 2>/dev/null)" != "$model" ]; then
  rm -f "$dir/eval.json" "$dir/eval-tatoeba.json" "$dir/eval-flores.json" "$dir/eval-sib.json"
  echo "$model" >"$record"
fi

suite() { # name json-file [extra eval arguments...]
  local name=$1 json=$2; shift 2
  [ -f "$dir/$json" ] && return 0
  $LASE eval --model "$model" --suite "$name" --quiet "$@" \
    --json "$dir/$json.tmp" --report "$dir/eval-$name.md"
  mv "$dir/$json.tmp" "$dir/$json"
}

suite tatoeba eval-tatoeba.json --langs "$XTREME36"
suite sts eval.json
suite flores eval-flores.json --langs "$FLORES6"
suite sib eval-sib.json

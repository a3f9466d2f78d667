#!/usr/bin/env bash
# Reproduces the EMS-from-scratch numbers of docs/results.md on a 2-core CPU:
#   1. the scaled-down EMS model (configs/ems-small.toml), evaluated on Tatoeba, FLORES
#      xx-eng, STS and SIB;
#   2. the ems.txt Table XIV ablation at a fixed budget (configs/ablation/*.toml),
#      evaluated on Tatoeba's XTREME-36 languages.
# Runs resume if killed (run the script again). Outputs go to runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
XTREME36=afr,ara,bul,ben,deu,ell,spa,est,eus,pes,fin,fra,heb,hin,hun,ind,ita,jpn,jav,kat,kaz,kor,mal,mar,nld,por,rus,swh,tam,tel,tha,tgl,tur,urd,vie,cmn

if [ "${SKIP_MAIN:-0}" != 1 ]; then
  $LASE train --config configs/ems-small.toml --out runs/ems-small --quiet
  $LASE eval --model runs/ems-small/model --suite tatoeba,flores,sts,sib --quiet \
    --json runs/ems-small/eval.json --report runs/ems-small/eval.md
fi

for variant in xtr-contrastive contrastive-only xtr-only ams-xtr; do
  out=runs/ablation-$variant
  mkdir -p "$out"
  # The same tokenizer for every variant (trained once by the main run).
  [ -f "$out/tokenizer.json" ] || cp runs/ems-small/tokenizer.json "$out/tokenizer.json"
  $LASE train --config "configs/ablation/$variant.toml" --out "$out" --quiet
  $LASE eval --model "$out/model" --suite tatoeba --langs "$XTREME36" --quiet \
    --json "$out/eval.json" --report "$out/eval.md"
done

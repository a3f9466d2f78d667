#!/usr/bin/env bash
# Multi-stage distillation at a small budget (configs/multistage/small.toml) and the
# stage ablation of multistage-distillation.txt Table 6: every stage's model evaluated on
# Tatoeba's XTREME-36 languages and STS (mono and cross-lingual). Resumes if killed.
set -euo pipefail
cd "$(dirname "$0")/.."
LASE=${LASE:-./target/release/lase}
XTREME36=afr,ara,bul,ben,deu,ell,spa,est,eus,pes,fin,fra,heb,hin,hun,ind,ita,jpn,jav,kat,kaz,kor,mal,mar,nld,por,rus,swh,tam,tel,tha,tgl,tur,urd,vie,cmn
OUT=${OUT:-runs/multistage-small}
$LASE distill multistage --config configs/multistage/small.toml --out "$OUT" --quiet
for stage in 1-assistant 2-bottleneck 3-student 4-contrastive; do
  dir=$OUT/$stage
  [ -f "$dir/eval.json" ] && continue
  $LASE eval --model "$dir/model" --suite tatoeba --langs "$XTREME36" --quiet \
    --json "$dir/eval-tatoeba.json" --report "$dir/eval-tatoeba.md"
  $LASE eval --model "$dir/model" --suite sts --quiet --json "$dir/eval.tmp.json" --report "$dir/eval-sts.md"
  mv "$dir/eval.tmp.json" "$dir/eval.json"
done

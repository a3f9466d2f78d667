#!/usr/bin/env bash
# Checks that two lase binaries produce byte-identical outputs on the README's commands
# (embed, mine with a model and with precomputed vectors, eval of every suite with
# --json/--report/--plot, a short distillation run with dev evaluation and a resume):
# the check a behaviour-preserving refactor must pass.
# Usage: scripts/same_outputs.sh OLD_BINARY NEW_BINARY [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 work=${3:-runs/same-outputs}
rm -rf "$work"; mkdir -p "$work/old" "$work/new"
flores=../shared/data/flores200-devtest/devtest
demo=data/demo/tico19-en-fr
cat >"$work/recipe.toml" <<TOML
[model]
init_from = "models/lase-small"
[data]
sources = [{ format = "n-way", path = "../shared/data/parallel-pud" }]
exclude_test_sets = "../shared/data"
dev = { pairs_per_language = 20, min_language_pairs = 500 }
[objective]
contrastive = "info-nce"
xtr = false
[objective.distillation]
teacher = "models/all-MiniLM-L6-v2"
teacher_side = "target"
mse = 0.0
feature = 1.0
[schedule]
steps = 6
warmup_steps = 2
batch_pairs = 16
[run]
seed = 3
log_every = 1
eval_every = 3
checkpoint_every = 2
TOML
for side in old new; do
  bin=${!side} out=$work/$side
  "$bin" --threads 2 embed --quiet --model models/lase-base --input "$flores/eng_Latn.devtest" --output "$out/eng.npy" >/dev/null
  "$bin" --threads 2 embed --quiet --model models/lase-base --input "$flores/fra_Latn.devtest" --output "$out/fra.npy" >/dev/null
  "$bin" --threads 2 mine --quiet --model models/lase-base --src "$demo.en" --tgt "$demo.fr" --output "$out/demo.tsv" \
    --threshold 1.07904 --gold "$demo.gold.tsv" | sed "s|$out/||; s/, [0-9.]* s)\$/)/" >"$out/mine.stdout"
  "$bin" --threads 2 mine --quiet --src "$flores/fra_Latn.devtest" --tgt "$flores/eng_Latn.devtest" \
    --src-embeddings "$out/fra.npy" --tgt-embeddings "$out/eng.npy" --output "$out/flores-mined.tsv" --indices >/dev/null
  "$bin" --threads 2 eval --quiet --model models/lase-small --suite tatoeba,flores,bucc,pool,sts,sib \
    --langs deu,fra,rus,zho_Hans,ko --json "$out/eval.json" --report "$out/eval.md" --plot "$out/eval.svg" \
    | sed 's/; [0-9]* s$//' >"$out/eval.stdout"
  "$bin" --threads 2 distill --quiet --config "$work/recipe.toml" --out "$out/run" --stop-after 4 >/dev/null
  "$bin" --threads 2 distill --quiet --config "$work/recipe.toml" --out "$out/run" >/dev/null
  # Timings differ between runs: keep every metric but those.
  python3 -c "import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); r.pop('pairs_per_second',None); print(json.dumps(r,sort_keys=True))" "$out/run/metrics.jsonl" >"$out/metrics.clean"
done
status=0
for f in eng.npy fra.npy demo.tsv mine.stdout flores-mined.tsv eval.json eval.md eval.svg eval.stdout \
  run/model/model.safetensors run/best-model/model.safetensors run/best-model/dev.json metrics.clean; do
  if cmp -s "$work/old/$f" "$work/new/$f"; then echo "identical  $f"; else echo "DIFFERENT  $f"; status=1; fi
done
exit $status

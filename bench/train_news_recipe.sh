# Sourced by bench/train_precision.sh and bench/train_ab.sh: the training benchmarks' shared
# data, recipe and run folders. lase-base's recipe (init models/lase-base, MSE onto
# all-MiniLM-L6-v2's cached vectors of the English side, 64 tokens, seed 1, a metrics line
# every 10 steps) on 6,000 WMT news pairs (deu/fra/rus/zho-eng, 1,500 each, a seeded draw
# from ../shared/data/parallel-news).

# news_training_recipe WORK CONTRASTIVE BATCH_PAIRS: writes WORK/{deu,fra,rus,zho}.tsv and
# WORK/recipe.toml (CONTRASTIVE: "none", "info-nce", ...).
news_training_recipe() {
  local work=$1 contrastive=$2 batch=$3
python3 - "$work" <<'PY'
import glob, gzip, random, sys
work = sys.argv[1]
random.seed(0)
rows = []
for lang in ["deu", "fra", "rus", "zho"]:
    for f in sorted(glob.glob(f"../shared/data/parallel-news/{lang}-eng/*.{lang}.gz")):
        e = f[: -len(f".{lang}.gz")] + ".eng.gz"
        a = gzip.open(f, "rt", encoding="utf-8").read().splitlines()
        b = gzip.open(e, "rt", encoding="utf-8").read().splitlines()
        rows += [(x.replace("\t", " "), y.replace("\t", " "), lang) for x, y in zip(a, b) if x and y]
random.shuffle(rows)
for lang in ["deu", "fra", "rus", "zho"]:
    mine = [r for r in rows if r[2] == lang][:1500]
    open(f"{work}/{lang}.tsv", "w", encoding="utf-8").write("".join(f"{x}\t{y}\n" for x, y, _ in mine))
PY
local lang sources=""
for lang in deu fra rus zho; do
  sources+="  { format = \"tsv\", path = \"$work/$lang.tsv\", src_lang = \"$lang\", tgt_lang = \"eng\" },"$'\n'
done
cat >"$work/recipe.toml" <<TOML
[model]
init_from = "models/lase-base"
train_max_tokens = 64

[data]
sources = [
$sources]
exclude_test_sets = false   # a speed benchmark: the model is thrown away
dev = { pairs_per_language = 0, min_language_pairs = 100000 }

[objective]
contrastive = "$contrastive"
xtr = false

[objective.distillation]
teacher = "models/all-MiniLM-L6-v2"
teacher_side = "target"
mse = 1.0
normalize_student = true

[optimizer]
lr = 5e-5
weight_decay = 0.01

[schedule]
steps = 1000
warmup_steps = 10
batch_pairs = $batch

[run]
seed = 1
log_every = 10
eval_every = 0
checkpoint_every = 1000
TOML
}

# seed_timed_run BASE DIR: a fresh run folder DIR holding BASE's recipe copy and its teacher
# cache (hard links where the file system allows), so a timed run computes no teacher vectors.
seed_timed_run() {
  local base=$1 dir=$2 f
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$base/config.toml" "$dir/"
  for f in teacher-target.npy teacher-target.texts; do
    ln "$base/$f" "$dir/" 2>/dev/null || cp "$base/$f" "$dir/"
  done
}

# print_cpu: the CPU's name and the flags that decide the kernels.
print_cpu() {
  lscpu | grep -E "^Model name"
  lscpu | grep -o -w -E "avx2|avx512f|avx512_bf16|amx_bf16|amx_tile" | sort -u | tr '\n' ' '
  echo
}

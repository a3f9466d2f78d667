#!/usr/bin/env bash
# Trains a lase recipe on a lent GPU machine (the device tool: no Rust and no network
# there, PyTorch + CUDA installed, at most 64 MiB sent per call and 8 files of 16 MiB
# back), resumably across calls and sessions, and benchmarks lase against PyTorch there.
#
#   scripts/gpu_train.sh pack NAME RECIPE [--set KEY=VALUE ...]
#       Here. Bundles what the run needs into .gpu/NAME/parts/part-NN, each at most
#       LASE_GPU_PART_MB MiB (default: 40, or less where this checkout's travelling tree
#       leaves less of a call's 64 MiB; every device call sends that tree too; a larger
#       LASE_GPU_PART_MB than the tree leaves room for is refused, unless LASE_GPU_DEVICE=cpu):
#       the release binary (stripped), the recipe, its data sources, its teacher and
#       init_from models (f16), the test sentences its sources contain (so the device
#       drops the same pairs without the benchmark folders: lase check-leakage
#       --write-found), and runs/NAME's checkpoint when an earlier call brought one back.
#       Also what device-bench runs: target/release/examples/train_step (stripped; build
#       it with `cargo build --release --example train_step`), bench/train_step.py,
#       bench/embed_speed.py, all-MiniLM-L6-v2's tokenizer.json and the 128 pairs of
#       bench/train_step.py (LASE_GPU_BENCH_PAIRS, LASE_GPU_BENCH_TOKENIZER: others).
#       Prints the device calls to make, in order.
#       LASE_GPU_ARMS="RECIPE2 ...": more recipes in the same bundle (their models and any
#       data the first recipe does not already carry; their test sentences join the same
#       list), each an arm named by its file stem, trained by `device-run NAME SECONDS ARM`
#       beside the others in one call (one staging of shared data for several runs).
#       LASE_GPU_BENCH_TRAIN_STEP=0: no train_step binary and pairs (device-bench's
#       train-step part then reports them missing).
#   scripts/gpu_train.sh stage NAME PART
#       On the device (one call per part, carry .gpu/NAME/parts/PART): keeps the part
#       in $LASE_GPU_STAGE (default /tmp/lase-gpu), which lasts while the machine is warm.
#   scripts/gpu_train.sh device-bench NAME [embed|train-step ...]
#       On the device, after the parts are staged (before device-run): GPU checks with the
#       bundled binaries, appended to $OUT/bench.txt; each part runs even if the one
#       before failed (then the command fails at the end, the other numbers still there).
#       embed (at most LASE_GPU_BENCH_EMBED_SECONDS, 330): lase CUDA vs CPU parity (f32)
#         and encode sentences/s vs sentence-transformers on the same GPU, f32 and bf16
#         (bench/embed_speed.py --device cuda), LASE_GPU_BENCH_SENTENCES (20,000) English
#         sentences of the bundle (4,000 ran in under a second: too short to time),
#         the recipe's teacher, best of LASE_GPU_BENCH_REPEATS (3) runs per setting.
#       train-step (each precision at most LASE_GPU_BENCH_TRAIN_SECONDS, 110): one
#         training step, lase vs PyTorch on the same GPU, same model and batch
#         (bench/train_step.py --device cuda), in f32 and in bf16 (PyTorch: torch.autocast;
#         lase: --precision bf16), raw results in $OUT/train-step-{f32,bf16}.json.
#         LASE_GPU_BENCH_PRECISIONS (default "f32 bf16"), LASE_GPU_BENCH_CHUNKS (default
#         "32": sentences per length-sorted forward, --chunk; others add
#         train-step-PRECISION-chunkN.json), LASE_GPU_BENCH_TRAIN_ARGS
#         (default "--steps 30 --warmup 5": more bench/train_step.py arguments).
#       Default: both parts, embed first; together at most 550 s, so that stage + device-bench
#       fit one 600 s call (the parts' lines reach $OUT as they are printed).
#   scripts/gpu_train.sh device-run NAME SECONDS [ARM]
#       On the device, in the call that carries the last part: unpacks the bundle, runs
#       `lase distill|train --device cuda --precision f32` (LASE_GPU_PRECISION=bf16 for
#       mixed precision: on the H100 of 2026-11-23 it was slower at bench/train_step.py's size) for
#       at most SECONDS from lase's start, reading the data and the teacher's vectors
#       included (`--time-limit`; about 70 s for one run over all the pairs, 153 s for three
#       at once: leave the call's timeout_s room for that, the closing eval and checkpoint
#       (~30 s) and the export) (checkpointed; resumes the bundled checkpoint; LASE_GPU_SETS=
#       "KEY=VALUE ..." adds --set options), then cuts the checkpoint (weights, as f16
#       unless LASE_GPU_SHIP_DTYPE=f32; step; sampler position; not the AdamW moments,
#       twice the weights' size) and the best-dev model (best-model/, same dtype; only
#       its dev.json where it is the checkpoint's step) into
#       <= 15 MiB pieces and puts the first 4 of them (LASE_GPU_RETURN_PIECES) and
#       run.log in $OUT. With ARM (a LASE_GPU_ARMS recipe's stem): that recipe, run
#       name ARM, its files in $OUT/ARM/. Arms may run at once (pack prints the line: each
#       in the background, each wait checked, LASE_GPU_RETURN_PIECES=0 so that the runs'
#       logs and checksums fit the call's 8 files, then one fetch per run); the bundle is
#       unpacked once under a lock. pack's --set options apply to every arm.
#   scripts/gpu_train.sh fetch NAME [ARM]
#       On the device, the next call: puts the remaining pieces in $OUT (or $OUT/ARM), at
#       most LASE_GPU_RETURN_PIECES (4) of them per fetch (a call brings back 8 files and
#       64 MiB: one fetch per call).
#   scripts/gpu_train.sh slim-tree | restore-tree
#       Here. Every device call also sends this checkout's tracked and untracked-not-ignored
#       files; where they take most of the 64 MiB (a committed model), slim-tree takes
#       tracked files of >= 5 MiB (LASE_GPU_SLIM_MB) out of the index and ignores them
#       (files stay on disk), so pack makes 40 MiB parts; restore-tree undoes it. Commit
#       nothing in between (git status shows them deleted).
#   scripts/gpu_train.sh unpack NAME|ARM DIR [DIR ...]   (for an arm, the DIRs' ARM/ folders)
#       Here: reassembles the pieces found in the DIRs (the calls' files_at), checks
#       their checksums, and installs the checkpoint as runs/NAME/checkpoint (atomically)
#       and the call's best-dev model as runs/NAME/best-model where its dev P@1 beats the one there,
#       so the next `pack` resumes it, and `lase export` / `lase eval` can read
#       runs/NAME/checkpoint/encoder.
#
# LASE_GPU_DEVICE (default cuda) and LASE_GPU_TORCH_LIB (default: the torch/lib of the
# machine's python3) let the same commands run on a CPU machine: tests/gpu_bundle.rs runs
# pack, stage, device-run, fetch and unpack here for a few steps and loads the result,
# and runs device-bench's train-step part (lase's side) from the bundle.
# The device machine has gzip but no zstd: parts and pieces are gzip streams.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/run_progress.sh

PART_MB=${LASE_GPU_PART_MB:-}
PIECE_MB=15
STAGE=${LASE_GPU_STAGE:-/tmp/lase-gpu}
LASE=${LASE_BIN:-target/release/lase}
TRAIN_STEP=${LASE_TRAIN_STEP_BIN:-target/release/examples/train_step}
log() { printf '[gpu_train] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The recipe's paths, one per line: sources' folders/files, teacher, init_from.
recipe_paths() {
  python3 - "$1" <<'EOF'
import sys, tomllib
r = tomllib.load(open(sys.argv[1], "rb"))
out = []
for s in r.get("data", {}).get("sources", []):
    for k in ("path", "src", "tgt"):
        if k in s:
            out.append(("data", s[k]))
m = r.get("model", {}).get("init_from")
if m:
    out.append(("model", m))
t = r.get("objective", {}).get("distillation", {}).get("teacher")
if t:
    out.append(("model", t))
tok = r.get("tokenizer", {}).get("path")
if tok:
    out.append(("data", tok))
for kind, p in dict.fromkeys(out):
    print(kind, p)
EOF
}

# Bytes of what every device call sends besides its carried paths: this checkout's tracked
# and untracked-not-ignored files (links as links), and a shared/ folder if there is one.
travelling_tree_bytes() {
  local bytes shared=0
  bytes=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
  [[ -d shared ]] && shared=$(du -sb shared | cut -f1)
  echo $((${bytes:-0} + shared))
}

# The part size in MiB: LASE_GPU_PART_MB, else 40 or what a call leaves beside the tree
# (1 MiB kept for the manifest and slack).
part_mib() {
  local tree free no_room
  tree=$(travelling_tree_bytes)
  free=$(((64 * 1048576 - tree) / 1048576 - 1))
  no_room="this checkout's travelling tree is $((tree / 1048576)) MiB: no room for a part in a 64 MiB call (scripts/gpu_train.sh slim-tree, then pack again; the big files: git ls-files -z | xargs -0 du -b | sort -n | tail)"
  if [[ -n $PART_MB ]]; then
    [[ $PART_MB =~ ^[1-9][0-9]*$ ]] || die "LASE_GPU_PART_MB=$PART_MB: a whole number of MiB, at least 1"
    # A call that sends the tree and one part over 64 MiB is refused before any machine
    # starts (2026-11-26: 56 MiB parts beside an 8 MiB tree). A rehearsal on this machine
    # (LASE_GPU_DEVICE=cpu, as tests/gpu_bundle.rs runs it) makes no device call.
    if [[ ${LASE_GPU_DEVICE:-cuda} != cpu ]] && ((PART_MB > free)); then
      ((free >= 1)) || die "$no_room"
      die "LASE_GPU_PART_MB=$PART_MB: this checkout's travelling tree is $((tree / 1048576)) MiB, so a 64 MiB call has room for parts of at most $free MiB"
    fi
    echo "$PART_MB"
    return
  fi
  ((free >= 1)) || die "$no_room"
  ((free < 40)) || free=40
  if ((free < 20)); then
    log "warning: this checkout's travelling tree (tracked and untracked-not-ignored files) is $((tree / 1048576)) MiB of the 64 MiB a device call sends; parts of $free MiB. Largest:"
    git ls-files -z --cached --others --exclude-standard | xargs -0 du -b 2>/dev/null | sort -n | tail -n 3 | sed 's/^/[gpu_train]     /' >&2
    log "to carry 40 MiB parts: scripts/gpu_train.sh slim-tree, then pack again (and restore-tree after the device calls)"
  fi
  echo "$free"
}

pack() {
  local name=$1 recipe=$2
  shift 2
  [[ -f $recipe ]] || die "$recipe: no such recipe"
  [[ -x $LASE ]] || die "$LASE: build it first (cargo build --release)"
  local with_train_step=1
  [[ ${LASE_GPU_BENCH_TRAIN_STEP:-1} == 0 ]] && with_train_step=0
  ((with_train_step == 0)) || [[ -x $TRAIN_STEP ]] ||
    die "$TRAIN_STEP: build it first (cargo build --release --example train_step), or LASE_GPU_BENCH_TRAIN_STEP=0"
  local bench_tokenizer=${LASE_GPU_BENCH_TOKENIZER:-models/all-MiniLM-L6-v2/tokenizer.json}
  [[ -f $bench_tokenizer ]] || die "$bench_tokenizer missing (scripts/setup.sh fetches it; LASE_GPU_BENCH_TOKENIZER names another)"
  local part_mb
  part_mb=$(part_mib)
  local root=.gpu/$name bundle=.gpu/$name/bundle
  rm -rf "$root"
  mkdir -p "$bundle/tree/repo" "$root/parts"
  # The bundle mirrors this checkout and ../shared, so the recipe's relative paths hold.
  strip -o "$bundle/lase" "$LASE"
  # device-bench's train-step comparison: its binary, the bench scripts, the tokenizer and
  # the 128 pairs bench/train_step.py takes from ../shared/data (or LASE_GPU_BENCH_PAIRS).
  # LASE_GPU_BENCH_TRAIN_STEP=0 leaves it out (the binary is most of a part once measured).
  mkdir -p "$bundle/bench"
  cp bench/train_step.py bench/embed_speed.py "$bundle/bench/"
  cp "$bench_tokenizer" "$bundle/bench/tokenizer.json"
  if ((with_train_step)); then
    strip -o "$bundle/train_step" "$TRAIN_STEP"
    if [[ -n ${LASE_GPU_BENCH_PAIRS:-} ]]; then
      cp "$LASE_GPU_BENCH_PAIRS" "$bundle/bench/train-step-pairs.tsv"
    else
      python3 bench/train_step.py --write-pairs "$bundle/bench/train-step-pairs.tsv" >/dev/null ||
        die "bench/train_step.py --write-pairs failed (no ../shared/data? LASE_GPU_BENCH_PAIRS names a TSV instead)"
    fi
  fi
  local arms=() arm r
  read -r -a arms <<<"${LASE_GPU_ARMS:-}"
  : >"$bundle/arms"
  local -A copied=()
  for r in "$recipe" "${arms[@]+"${arms[@]}"}"; do
    [[ -f $r ]] || die "$r: no such recipe"
    if [[ $r != "$recipe" ]]; then
      arm=$(basename "$r" .toml)
      [[ $arm =~ ^[A-Za-z0-9._-]+$ ]] || die "arm $arm ($r): a recipe's file stem of letters, digits, '.', '_' and '-' only"
      [[ $arm != "$name" ]] || die "arm $arm has the run's own name $name: both would write runs/$name"
      awk -v a="$arm" '$1 == a { found = 1 } END { exit !found }' "$bundle/arms" && die "two arms named $arm"
      printf '%s %s\n' "$arm" "$r" >>"$bundle/arms"
    fi
    # Each recipe travels resolved (`lase recipe` with pack's --set: its extends chain merged,
    # every default filled in), so the device needs none of its bases and the readers below
    # see every key; the device applies the same --set again (a no-op).
    mkdir -p "$bundle/tree/repo/$(dirname "$r")"
    "$LASE" recipe --config "$r" "$@" >"$bundle/tree/repo/$r" || die "$r: lase recipe refused it"
    local kind p
    while read -r kind p; do
      [[ -e $p ]] || die "$r names $p, which is not here"
      local dest="$bundle/tree/repo/$p"
      [[ -n ${copied[$p]:-} ]] && continue # another recipe of the bundle brought it
      copied[$p]=1
      mkdir -p "$(dirname "$dest")"
      if [[ $kind == model ]]; then
        "$LASE" export --model "$p" --output "$dest" --dtype f16 >/dev/null
      else
        cp -r "$p" "$dest"
      fi
    done < <(recipe_paths "$bundle/tree/repo/$r")
  done
  local sets=("$@") exclusion found=() i=0
  for r in "$recipe" "${arms[@]+"${arms[@]}"}"; do
    exclusion=$(python3 -c 'import sys,tomllib; e = tomllib.load(open(sys.argv[1],"rb"))["data"].get("exclude_test_sets", False); print(e if isinstance(e, str) else "")' "$bundle/tree/repo/$r")
    [[ -n $exclusion ]] || continue
    "$LASE" check-leakage --config "$bundle/tree/repo/$r" --data-dir "$exclusion" \
      --write-found "$bundle/found-$i.txt" >&2
    found+=("$bundle/found-$i.txt")
    i=$((i + 1))
  done
  if ((${#found[@]})); then
    # One list for every recipe of the bundle: each drops what any of them found.
    LC_ALL=C sort -u "${found[@]}" >"$bundle/tree/repo/test-sentences.txt"
    rm -f "${found[@]}"
    sets+=(--set "data.exclude_test_sets=test-sentences.txt")
  fi
  printf '%s\n' "$recipe" >"$bundle/recipe-path"
  printf '%s\n' "${sets[@]+"${sets[@]}"}" >"$bundle/args"
  local run_name
  for run_name in "$name" $(cut -d' ' -f1 "$bundle/arms"); do
    [[ -d runs/$run_name/checkpoint ]] || continue
    mkdir -p "$bundle/tree/repo/runs/$run_name"
    cp -r "runs/$run_name/checkpoint" "$bundle/tree/repo/runs/$run_name/"
    for f in config.toml metrics.jsonl; do
      [[ -f runs/$run_name/$f ]] && cp "runs/$run_name/$f" "$bundle/tree/repo/runs/$run_name/"
    done
    log "resuming runs/$run_name/checkpoint (step $(checkpoint_step "runs/$run_name"))"
  done
  tar -C "$bundle" -cf - . | gzip -6 | split -b "${part_mb}M" -d -a 2 - "$root/parts/part-"
  (cd "$root/parts" && sha256sum part-* >../manifest.sha256)
  cp "$root/manifest.sha256" "$root/parts/"
  rm -rf "$bundle"
  local parts=("$root"/parts/part-*) last
  last=$(basename "${parts[-1]}")
  log "$(du -sh "$root/parts" | cut -f1) in ${#parts[@]} parts of <= $part_mb MiB; device calls, in order (carry the named path):"
  for part in "${parts[@]}"; do
    part=$(basename "$part")
    if [[ $part == "$last" ]]; then
      echo "carry [.gpu/$name/parts/$part, .gpu/$name/parts/manifest.sha256]: bash scripts/gpu_train.sh stage $name $part && bash scripts/gpu_train.sh device-bench $name"
      if ((${#arms[@]} == 0)); then
        echo "no carry: bash scripts/gpu_train.sh device-run $name 540"
      else
        # All runs at once, no pieces in this call (each run's run.log and pieces.sha256
        # fill it), then a fetch call per run; each wait checked apart.
        local line="no carry: export LASE_GPU_RETURN_PIECES=0; bash scripts/gpu_train.sh device-run $name 480 & p0=\$!" k=1
        for arm in "${arms[@]}"; do
          line+="; bash scripts/gpu_train.sh device-run $name 480 $(basename "$arm" .toml) & p$k=\$!"
          k=$((k + 1))
        done
        line+="; s=0; for p in"
        for ((j = 0; j < k; j++)); do line+=" \$p$j"; done
        line+="; do wait \$p || s=1; done; exit \$s"
        echo "$line"
        for arm in "${arms[@]}"; do
          echo "no carry (per call, until it prints 0 left): bash scripts/gpu_train.sh fetch $name $(basename "$arm" .toml)"
        done
      fi
    else
      echo "carry [.gpu/$name/parts/$part]: bash scripts/gpu_train.sh stage $name $part"
    fi
  done
  echo "no carry (per call, until it prints 0 left): bash scripts/gpu_train.sh fetch $name"
  echo "here: scripts/gpu_train.sh unpack $name FILES_AT_OF_DEVICE_RUN FILES_AT_OF_FETCH"
  for arm in "${arms[@]+"${arms[@]}"}"; do
    arm=$(basename "$arm" .toml)
    echo "here: scripts/gpu_train.sh unpack $arm FILES_AT_OF_DEVICE_RUN/$arm FILES_AT_OF_FETCH/$arm"
  done
}

stage() {
  local name=$1 part=$2
  mkdir -p "$STAGE/$name/parts"
  [[ -f .gpu/$name/parts/$part ]] || die ".gpu/$name/parts/$part was not carried"
  rm -rf "$STAGE/$name/bundle" # a new part makes any unpacked bundle stale
  cp ".gpu/$name/parts/$part" "$STAGE/$name/parts/"
  [[ -f .gpu/$name/parts/manifest.sha256 ]] && cp ".gpu/$name/parts/manifest.sha256" "$STAGE/$name/"
  log "staged $part ($(ls "$STAGE/$name/parts" | wc -l) parts in $STAGE/$name)"
}

torch_lib() {
  if [[ -n ${LASE_GPU_TORCH_LIB:-} ]]; then
    echo "$LASE_GPU_TORCH_LIB"
  else
    python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))'
  fi
}

unpack_bundle() { # NAME: the staged parts, checked, unpacked once into $STAGE/NAME/bundle
  local dir=$STAGE/$1
  [[ -f $dir/bundle/.complete ]] && return 0
  # Arms started together unpack once: the first holds the lock, the others then find
  # the bundle complete. It is unpacked beside and moved in whole, so a call killed
  # mid-way leaves no bundle that looks complete.
  mkdir -p "$dir"
  exec {lock}>"$dir/unpack.lock"
  flock "$lock"
  if [[ ! -f $dir/bundle/.complete ]]; then
    [[ -f $dir/manifest.sha256 ]] || die "$dir/manifest.sha256 missing: carry it with the last part"
    (cd "$dir/parts" && sha256sum --quiet -c ../manifest.sha256) ||
      die "parts missing or damaged in $dir/parts (the machine went back between calls? stage them again)"
    rm -rf "$dir/bundle" "$dir/bundle.partial"
    mkdir -p "$dir/bundle.partial"
    # Only the manifest's parts, in order (a machine may hold parts of an older pack).
    awk '{print $2}' "$dir/manifest.sha256" | sed "s|^|$dir/parts/|" | xargs cat | gzip -dc | tar -C "$dir/bundle.partial" -xf -
    touch "$dir/bundle.partial/.complete"
    mv "$dir/bundle.partial" "$dir/bundle"
  fi
  exec {lock}>&-
}

# device-bench's parts. Each returns non-zero on failure; device_bench goes on with the next.
bench_embed() { # NAME: encode parity and sentences/s (bench/embed_speed.py), into $OUT/bench.txt
  local dir=$STAGE/$1 out=$OUT teacher sentences=$STAGE/$1/bench-sentences.txt
  teacher=$(python3 -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))["objective"]["distillation"]["teacher"])' \
    "$dir/bundle/tree/repo/$(cat "$dir/bundle/recipe-path")") || {
    echo "== embed: the recipe names no teacher to encode with" >>"$out/bench.txt"
    return 1
  }
  find "$dir/bundle/tree" -name '*.eng.gz' -o -name 'eng_Latn.txt.gz' | sort | head -n 20 | xargs zcat | awk 'NF >= 3' | head -n "${LASE_GPU_BENCH_SENTENCES:-20000}" >"$sentences"
  echo "== embed: bench/embed_speed.py, ${LASE_GPU_DEVICE:-cuda}, $(wc -l <"$sentences") sentences" >>"$out/bench.txt"
  PYTHONUNBUFFERED=1 timeout "${LASE_GPU_BENCH_EMBED_SECONDS:-330}" python3 "$dir/bundle/bench/embed_speed.py" --device "${LASE_GPU_DEVICE:-cuda}" \
    --lase "$dir/bundle/lase" --model "$dir/bundle/tree/repo/$teacher" --sentences "$sentences" --threads "$(nproc)" --n "$(wc -l <"$sentences")" \
    --repeats "${LASE_GPU_BENCH_REPEATS:-3}" 2>&1 | tee -a "$out/bench.txt"
  return "${PIPESTATUS[0]}"
}

bench_train_step() { # NAME: one training step, lase vs PyTorch (bench/train_step.py), f32 and bf16
  local b=$STAGE/$1/bundle out=$OUT device=${LASE_GPU_DEVICE:-cuda} lib precision status=0 code
  [[ -x $b/train_step && -f $b/bench/train-step-pairs.tsv ]] || {
    echo "== train step: not in this bundle (packed by an older gpu_train.sh?)" >>"$out/bench.txt"
    return 1
  }
  lib=$(torch_lib) || return 1
  local extra
  read -r -a extra <<<"${LASE_GPU_BENCH_TRAIN_ARGS:---steps 30 --warmup 5}"
  local chunk suffix
  for chunk in ${LASE_GPU_BENCH_CHUNKS:-32}; do
    for precision in ${LASE_GPU_BENCH_PRECISIONS:-f32 bf16}; do
      suffix=$precision
      [[ $chunk == 32 ]] || suffix=$precision-chunk$chunk
      echo "== train step: bench/train_step.py, $device, $precision, chunk $chunk" >>"$out/bench.txt"
      PYTHONUNBUFFERED=1 timeout "${LASE_GPU_BENCH_TRAIN_SECONDS:-110}" python3 "$b/bench/train_step.py" --device "$device" \
        --precision "$precision" --chunk "$chunk" --threads "$(nproc)" --lase-bin "$b/train_step" --libtorch "$lib" \
        --tokenizer "$b/bench/tokenizer.json" --pairs-file "$b/bench/train-step-pairs.tsv" \
        --json-out "$out/train-step-$suffix.json" "${extra[@]}" 2>&1 | tee -a "$out/bench.txt"
      code=${PIPESTATUS[0]}
      ((code == 0)) || { echo "== train step $precision chunk $chunk failed (exit $code)" >>"$out/bench.txt"; status=1; }
    done
  done
  return $status
}

device_bench() {
  local name=$1
  shift
  local parts=("$@") part failed=()
  ((${#parts[@]})) || parts=(embed train-step)
  : "${OUT:?OUT must name the folder whose files come back}"
  unpack_bundle "$name"
  {
    echo "== $(date -u +%FT%TZ) device-bench $name: ${parts[*]}, device ${LASE_GPU_DEVICE:-cuda}"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  } >>"$OUT/bench.txt" 2>&1
  for part in "${parts[@]}"; do
    case $part in
      embed) bench_embed "$name" || failed+=("$part") ;;
      train-step) bench_train_step "$name" || failed+=("$part") ;;
      *) die "unknown device-bench part $part (embed, train-step)" ;;
    esac
  done
  echo "== $(date -u +%FT%TZ) done${failed[*]:+; failed: ${failed[*]}}" >>"$OUT/bench.txt"
  ((${#failed[@]} == 0)) || die "device-bench: ${failed[*]} failed (the rest of $OUT/bench.txt holds the other numbers)"
}

# run_paths NAME [ARM]: sets run (the run's name), ret (its return folder on the device)
# and out (where its files go in $OUT) for the bundle's first recipe or one arm.
run_paths() {
  local name=$1 arm=${2:-}
  local dir=$STAGE/$name
  : "${OUT:?OUT must name the folder whose files come back}"
  if [[ -z $arm ]]; then
    run=$name ret=$dir/return out=$OUT
  else
    [[ $arm =~ ^[A-Za-z0-9._-]+$ ]] || die "arm $arm: letters, digits, '.', '_' and '-' only"
    run=$arm ret=$dir/return-$arm out=$OUT/$arm
  fi
  mkdir -p "$out"
}

device_run() {
  local name=$1 seconds=$2 arm=${3:-}
  local dir=$STAGE/$name run ret out
  run_paths "$name" "$arm"
  unpack_bundle "$name"
  rm -rf "$ret"
  mkdir -p "$ret"
  local recipe lib device=${LASE_GPU_DEVICE:-cuda} precision
  # f32 unless asked: bf16 mixed precision was slower than f32 on the H100 for
  # bench/train_step.py's model (docs/benchmarks.md, "GPU").
  precision=${LASE_GPU_PRECISION:-f32}
  if [[ -z $arm ]]; then
    recipe=$(cat "$dir/bundle/recipe-path")
  else
    recipe=$(awk -v a="$arm" '$1 == a { print $2 }' "$dir/bundle/arms" 2>/dev/null)
    [[ -n $recipe ]] || die "no arm $arm in this bundle (arms: $(cut -d' ' -f1 "$dir/bundle/arms" 2>/dev/null | tr '\n' ' '))"
  fi
  mapfile -t sets <"$dir/bundle/args"
  # LASE_GPU_SETS="KEY=VALUE ..." adds --set options at the device (a schedule.steps chosen
  # from device-bench's step time, say); a resumed run needs the same ones again.
  local kv
  for kv in ${LASE_GPU_SETS:-}; do sets+=(--set "$kv"); done
  lib=$(torch_lib)
  local command=distill
  grep -q '^\[objective.distillation\]' "$dir/bundle/tree/repo/$recipe" || command=train
  {
    echo "== $(date -u +%FT%TZ) device $device, precision $precision, torch lib $lib"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    (cd "$dir/bundle/tree/repo" && LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LASE_LOG=info \
      "$dir/bundle/lase" "$command" --config "$recipe" --out "runs/$run" --device "$device" \
      --precision "$precision" --time-limit "$seconds" --quiet "${sets[@]+"${sets[@]}"}") || echo "== lase exited with $?"
    echo "== $(date -u +%FT%TZ) done"
  } >"$ret.log" 2>&1
  tail -n 40 "$ret.log"
  cp "$ret.log" "$out/run.log" # also when the run failed below
  local shipdir=$ret.ship
  local run_dir=$dir/bundle/tree/repo/runs/$run
  [[ -f $run_dir/checkpoint/state.json ]] || die "no checkpoint written (see run.log above)"
  local ship=$shipdir/$run
  rm -rf "$shipdir"
  mkdir -p "$ship"
  cp -r "$run_dir/checkpoint" "$ship/"
  rm -f "$ship/checkpoint/optimizer.safetensors"
  # f16 weights by default: half the bytes to bring back (returns cost device time: on
  # 2026-11-23 held time rose 217 s across a 0.2 s fetch of f32 pieces). Loading converts them to f32; a
  # resumed run starts from the rounded weights (its AdamW moments restart anyway).
  if [[ ${LASE_GPU_SHIP_DTYPE:-f16} == f16 ]]; then
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/bundle/lase" export \
      --model "$ship/checkpoint/encoder" --output "$ship/checkpoint/encoder.f16" --dtype f16 >/dev/null
    rm -rf "$ship/checkpoint/encoder"
    mv "$ship/checkpoint/encoder.f16" "$ship/checkpoint/encoder"
  fi
  touch "$ship/checkpoint/TRANSFERRED"
  # The model at the best dev P@1 of this call (the trainer's best-model/), in the same dtype.
  # Where it is the checkpoint's own step (a schedule that ends with its best eval), only
  # its dev.json travels, marked AT_CHECKPOINT: unpack copies the checkpoint's weights in,
  # and the return is one model's pieces, not two.
  if [[ -f $run_dir/best-model/dev.json ]]; then
    local best_step checkpoint_step
    best_step=$(json_field "$run_dir/best-model/dev.json" step)
    checkpoint_step=$(json_field "$run_dir/checkpoint/state.json" step)
    mkdir -p "$ship/best-model"
    if [[ $best_step == "$checkpoint_step" ]]; then
      touch "$ship/best-model/AT_CHECKPOINT"
      log "best-model is the checkpoint's step $checkpoint_step: its weights travel once"
    else
      LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dir/bundle/lase" export \
        --model "$run_dir/best-model" --output "$ship/best-model" --dtype "${LASE_GPU_SHIP_DTYPE:-f16}" >/dev/null
    fi
    cp "$run_dir/best-model/dev.json" "$ship/best-model/"
  fi
  for f in config.toml metrics.jsonl; do [[ -f $run_dir/$f ]] && cp "$run_dir/$f" "$ship/"; done
  tar -C "$shipdir" -cf - "$run" | gzip -1 | split -b "${PIECE_MB}M" -d -a 2 - "$ret/piece-"
  (cd "$ret" && sha256sum piece-* >pieces.sha256)
  local pieces=("$ret"/piece-*) i=0
  cp "$ret/pieces.sha256" "$out/"
  for p in "${pieces[@]}"; do
    if ((i < ${LASE_GPU_RETURN_PIECES:-4})); then mv "$p" "$out/"; fi
    i=$((i + 1))
  done
  log "${#pieces[@]} pieces; $(ls "$ret" | grep -c piece- || true) left for 'fetch $name${arm:+ $arm}'"
}

fetch() {
  local name=$1 arm=${2:-} run ret out
  run_paths "$name" "$arm"
  [[ -d $ret ]] || die "$ret missing: the machine went back after device-run"
  local left=("$ret"/piece-*)
  [[ -e ${left[0]} ]] || { log "nothing left to fetch"; return; }
  # At most LASE_GPU_RETURN_PIECES (default 4: 60 MiB of a call's 64) per call.
  local n=${LASE_GPU_RETURN_PIECES:-4}
  ((n >= 1)) || die "LASE_GPU_RETURN_PIECES=$n: fetch needs at least 1"
  mv "${left[@]:0:n}" "$out/"
  log "fetched $((${#left[@]} < n ? ${#left[@]} : n)) pieces; $((${#left[@]} > n ? ${#left[@]} - n : 0)) left for another fetch"
}

unpack() {
  local name=$1
  shift
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/lase-unpack.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  local d
  for d in "$@"; do cp "$d"/piece-* "$work/" 2>/dev/null || true; [[ -f $d/pieces.sha256 ]] && cp "$d/pieces.sha256" "$work/"; done
  [[ -f $work/pieces.sha256 ]] || die "no pieces.sha256 among $*"
  (cd "$work" && sha256sum --quiet -c pieces.sha256) || die "pieces missing or damaged (fetch them all)"
  mkdir -p "$work/x"
  cat "$work"/piece-* | gzip -dc | tar -C "$work/x" -xf -
  [[ -f $work/x/$name/checkpoint/state.json ]] || die "the pieces hold no checkpoint of $name"
  mkdir -p "runs/$name"
  for f in config.toml metrics.jsonl; do [[ -f $work/x/$name/$f ]] && mv "$work/x/$name/$f" "runs/$name/$f"; done
  local best=$work/x/$name/best-model
  if [[ -f $best/AT_CHECKPOINT ]]; then # device-run sent the checkpoint's weights once
    cp -r "$work/x/$name/checkpoint/encoder/." "$best/"
    rm "$best/AT_CHECKPOINT"
  fi
  swap_in "$work/x/$name/checkpoint" "runs/$name/checkpoint"
  install_best_model "$name" "$work/x/$name/best-model"
  log "runs/$name/checkpoint at step $(json_field "runs/$name/checkpoint/state.json" step)"
}

# swap_in SRC TARGET: the folder SRC replaces TARGET (moved beside it first, so the old
# TARGET goes only once the new one is complete next to it).
swap_in() {
  local src=$1 target=$2
  rm -rf "$target.incoming" "$target.old"
  mv "$src" "$target.incoming"
  [[ -d $target ]] && mv "$target" "$target.old"
  mv "$target.incoming" "$target"
  rm -rf "$target.old"
}

json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# The best-dev model that came back replaces runs/NAME/best-model only where its dev P@1 is
# higher (a device call that resumed a checkpoint knows nothing of an earlier call's best).
install_best_model() {
  local name=$1 incoming=$2 here=runs/$1/best-model
  [[ -f $incoming/dev.json ]] || return 0
  local p_in p_here=-1
  p_in=$(json_field "$incoming/dev.json" dev_p_at_1)
  [[ -f $here/dev.json ]] && p_here=$(json_field "$here/dev.json" dev_p_at_1)
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$p_in" "$p_here"; then
    swap_in "$incoming" "$here"
    log "runs/$name/best-model: dev P@1 $p_in (was $p_here)"
  else
    log "runs/$name/best-model kept: dev P@1 $p_here >= $p_in of the call"
  fi
}

# slim-tree / restore-tree: tracked files of >= LASE_GPU_SLIM_MB MiB (default 5) leave
# the index and are ignored (.git/info/exclude) while device calls run, so the tree every
# call sends leaves room for 40 MiB parts; the files stay on disk, untouched.
slim_tree() {
  local list=.gpu/slim-tree.list exclude f min=$((${LASE_GPU_SLIM_MB:-5} * 1048576))
  exclude=$(git rev-parse --git-path info/exclude)
  [[ -f $list ]] && die "$list exists: the tree is already slim (restore-tree first)"
  mkdir -p .gpu "$(dirname "$exclude")"
  git ls-files -z | xargs -0 du -b 2>/dev/null | awk -F '\t' -v min="$min" '$1 >= min { print $2 }' >"$list.new"
  [[ -s $list.new ]] || { rm -f "$list.new"; log "no tracked file of ${LASE_GPU_SLIM_MB:-5} MiB or more"; return; }
  mv "$list.new" "$list"
  echo "# gpu_train.sh slim-tree (restore-tree removes these lines)" >>"$exclude"
  while IFS= read -r f; do
    git rm --cached -q -- "$f"
    printf '/%s\n' "$f" >>"$exclude"
    log "out of the tree until restore-tree: $f ($(($(stat -c %s "$f") / 1048576)) MiB)"
  done <"$list"
  log "travelling tree now $(($(travelling_tree_bytes) / 1048576)) MiB. git status shows these files deleted: commit nothing before restore-tree"
}

restore_tree() {
  local list=.gpu/slim-tree.list exclude f
  exclude=$(git rev-parse --git-path info/exclude)
  [[ -f $list ]] || { log "nothing to restore ($list missing)"; return; }
  while IFS= read -r f; do git reset -q -- "$f"; done <"$list"
  { echo "# gpu_train.sh slim-tree (restore-tree removes these lines)"; sed 's|^|/|' "$list"; } >"$list.lines"
  grep -vxF -f "$list.lines" "$exclude" >"$exclude.new" || true
  mv "$exclude.new" "$exclude"
  rm -f "$list" "$list.lines"
  log "restored: $(git status --short | head -n 5 | tr '\n' ' ')"
}

case ${1:-} in
  slim-tree) slim_tree ;;
  restore-tree) restore_tree ;;
  pack) shift; (($# >= 2)) || die "usage: pack NAME RECIPE [--set K=V ...]"; pack "$@" ;;
  stage) shift; (($# == 2)) || die "usage: stage NAME PART"; stage "$@" ;;
  device-run) shift; (($# == 2 || $# == 3)) || die "usage: device-run NAME SECONDS [ARM]"; device_run "$@" ;;
  fetch) shift; (($# == 1 || $# == 2)) || die "usage: fetch NAME [ARM]"; fetch "$@" ;;
  device-bench) shift; (($# >= 1)) || die "usage: device-bench NAME [embed|train-step ...]"; device_bench "$@" ;;
  unpack) shift; (($# >= 2)) || die "usage: unpack NAME|ARM DIR [DIR ...]"; unpack "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
esac

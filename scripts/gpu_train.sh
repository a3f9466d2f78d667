#!/usr/bin/env bash
# Trains a lase recipe on a lent GPU machine (the device tool: no Rust and no network
# there, PyTorch + CUDA installed, at most 64 MiB sent per call and 8 files of 16 MiB
# back), resumably across calls and sessions.
#
#   scripts/gpu_train.sh pack NAME RECIPE [--set KEY=VALUE ...]
#       Here. Bundles what the run needs into .gpu/NAME/parts/part-NN (each under
#       LASE_GPU_PART_MB, default 40 MiB, so a part plus the working tree fits one call):
#       the release binary (stripped), the recipe, its data sources, its teacher and
#       init_from models (f16), the test sentences its sources contain (so the device
#       drops the same pairs without the benchmark folders: lase check-leakage
#       --write-found), and runs/NAME's checkpoint when an earlier call brought one back.
#       Prints the device calls to make, in order.
#   scripts/gpu_train.sh stage NAME PART
#       On the device (one call per part, carry .gpu/NAME/parts/PART): keeps the part
#       in $LASE_GPU_STAGE (default /tmp/lase-gpu), which lasts while the machine is warm.
#   scripts/gpu_train.sh device-run NAME SECONDS
#       On the device, in the call that carries the last part: unpacks the bundle, runs
#       `lase distill|train --device cuda` for at most SECONDS (checkpointed; resumes the
#       bundled checkpoint), then cuts the checkpoint (weights, step, sampler position;
#       not the AdamW moments, twice the weights' size) into <= 15 MiB pieces and puts
#       the first 4 of them and run.log in $OUT.
#   scripts/gpu_train.sh device-bench NAME
#       On the device, after the parts are staged (before device-run): GPU checks with the
#       bundled binary and teacher, into $OUT/bench.txt: lase CUDA vs CPU parity (f32) and
#       encode sentences/s vs sentence-transformers on the same GPU, f32 and bf16
#       (bench/embed_speed.py --device cuda), on 4,000 English sentences of the bundle.
#   scripts/gpu_train.sh fetch NAME
#       On the device, the next call: puts the remaining pieces in $OUT.
#   scripts/gpu_train.sh unpack NAME DIR [DIR ...]
#       Here: reassembles the pieces found in the DIRs (the calls' files_at), checks
#       their checksums, and installs the checkpoint as runs/NAME/checkpoint (atomically),
#       so the next `pack` resumes it, and `lase export` / `lase eval` can read
#       runs/NAME/checkpoint/encoder.
#
# LASE_GPU_DEVICE (default cuda) and LASE_GPU_TORCH_LIB (default: the torch/lib of the
# machine's python3) let the same commands run on a CPU machine: tests/gpu_bundle.rs runs
# pack, stage, device-run, fetch and unpack here for a few steps and loads the result.
set -euo pipefail
cd "$(dirname "$0")/.."

PART_MB=${LASE_GPU_PART_MB:-40}
PIECE_MB=15
STAGE=${LASE_GPU_STAGE:-/tmp/lase-gpu}
LASE=${LASE_BIN:-target/release/lase}
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

pack() {
  local name=$1 recipe=$2
  shift 2
  [[ -f $recipe ]] || die "$recipe: no such recipe"
  [[ -x $LASE ]] || die "$LASE: build it first (cargo build --release)"
  local root=.gpu/$name bundle=.gpu/$name/bundle
  rm -rf "$root"
  mkdir -p "$bundle/tree/repo" "$root/parts"
  # The bundle mirrors this checkout and ../shared, so the recipe's relative paths hold.
  strip -o "$bundle/lase" "$LASE"
  mkdir -p "$bundle/tree/repo/$(dirname "$recipe")"
  cp "$recipe" "$bundle/tree/repo/$recipe"
  local kind p
  while read -r kind p; do
    [[ -e $p ]] || die "$recipe names $p, which is not here"
    local dest="$bundle/tree/repo/$p"
    mkdir -p "$(dirname "$dest")"
    if [[ $kind == model ]]; then
      [[ -d $dest ]] && continue
      "$LASE" export --model "$p" --output "$dest" --dtype f16 >/dev/null
    else
      cp -r "$p" "$dest"
    fi
  done < <(recipe_paths "$recipe")
  local sets=("$@") exclusion
  exclusion=$(python3 -c 'import sys,tomllib; e = tomllib.load(open(sys.argv[1],"rb"))["data"].get("exclude_test_sets", False); print(e if isinstance(e, str) else "")' "$recipe")
  if [[ -n $exclusion ]]; then
    "$LASE" check-leakage --config "$recipe" --data-dir "$exclusion" \
      --write-found "$bundle/tree/repo/test-sentences.txt" >&2
    sets+=(--set "data.exclude_test_sets=test-sentences.txt")
  fi
  printf '%s\n' "$recipe" >"$bundle/recipe-path"
  printf '%s\n' "${sets[@]+"${sets[@]}"}" >"$bundle/args"
  if [[ -d runs/$name/checkpoint ]]; then
    mkdir -p "$bundle/tree/repo/runs/$name"
    cp -r "runs/$name/checkpoint" "$bundle/tree/repo/runs/$name/"
    for f in config.toml metrics.jsonl; do
      [[ -f runs/$name/$f ]] && cp "runs/$name/$f" "$bundle/tree/repo/runs/$name/"
    done
    log "resuming runs/$name/checkpoint (step $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "runs/$name/checkpoint/state.json"))"
  fi
  tar -C "$bundle" -cf - . | zstd -q -T0 -10 | split -b "${PART_MB}M" -d -a 2 - "$root/parts/part-"
  (cd "$root/parts" && sha256sum part-* >../manifest.sha256)
  cp "$root/manifest.sha256" "$root/parts/"
  rm -rf "$bundle"
  local parts=("$root"/parts/part-*) last
  last=$(basename "${parts[-1]}")
  log "$(du -sh "$root/parts" | cut -f1) in ${#parts[@]} parts; device calls, in order (carry the named path):"
  for part in "${parts[@]}"; do
    part=$(basename "$part")
    if [[ $part == "$last" ]]; then
      echo "carry [.gpu/$name/parts/$part, .gpu/$name/parts/manifest.sha256]: bash scripts/gpu_train.sh stage $name $part && bash scripts/gpu_train.sh device-bench $name"
      echo "no carry: bash scripts/gpu_train.sh device-run $name 540"
    else
      echo "carry [.gpu/$name/parts/$part]: bash scripts/gpu_train.sh stage $name $part"
    fi
  done
  echo "no carry: bash scripts/gpu_train.sh fetch $name"
  echo "here: scripts/gpu_train.sh unpack $name FILES_AT_OF_DEVICE_RUN FILES_AT_OF_FETCH"
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
  [[ -f $dir/bundle/recipe-path ]] && return 0
  [[ -f $dir/manifest.sha256 ]] || die "$dir/manifest.sha256 missing: carry it with the last part"
  (cd "$dir/parts" && sha256sum --quiet -c ../manifest.sha256) ||
    die "parts missing or damaged in $dir/parts (the machine went back between calls? stage them again)"
  rm -rf "$dir/bundle"
  mkdir -p "$dir/bundle"
  # Only the manifest's parts, in order (a machine may hold parts of an older pack).
  awk '{print $2}' "$dir/manifest.sha256" | sed "s|^|$dir/parts/|" | xargs cat | zstd -q -d | tar -C "$dir/bundle" -xf -
}

device_bench() {
  local name=$1 dir=$STAGE/$1 out=${OUT:?OUT must name the folder whose files come back}
  unpack_bundle "$name"
  local teacher sentences=$dir/bench-sentences.txt
  teacher=$(python3 -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))["objective"]["distillation"]["teacher"])' \
    "$dir/bundle/tree/repo/$(cat "$dir/bundle/recipe-path")")
  find "$dir/bundle/tree" -name '*.eng.gz' -o -name 'eng_Latn.txt.gz' | sort | head -n 20 | xargs zcat | awk 'NF >= 3' | head -n 4000 >"$sentences"
  python3 bench/embed_speed.py --device "${LASE_GPU_DEVICE:-cuda}" --lase "$dir/bundle/lase" \
    --model "$dir/bundle/tree/repo/$teacher" --sentences "$sentences" --threads "$(nproc)" --repeats 3 2>&1 | tee "$out/bench.txt"
}

device_run() {
  local name=$1 seconds=$2
  local dir=$STAGE/$name out=${OUT:?OUT must name the folder whose files come back}
  unpack_bundle "$name"
  rm -rf "$dir/return"
  mkdir -p "$dir/return"
  local recipe lib device=${LASE_GPU_DEVICE:-cuda}
  recipe=$(cat "$dir/bundle/recipe-path")
  mapfile -t sets <"$dir/bundle/args"
  lib=$(torch_lib)
  local command=distill
  grep -q '^\[objective.distillation\]' "$dir/bundle/tree/repo/$recipe" || command=train
  {
    echo "== $(date -u +%FT%TZ) device $device, torch lib $lib"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    (cd "$dir/bundle/tree/repo" && LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LASE_LOG=info \
      "$dir/bundle/lase" "$command" --config "$recipe" --out "runs/$name" --device "$device" \
      --time-limit "$seconds" --quiet "${sets[@]+"${sets[@]}"}") || echo "== lase exited with $?"
    echo "== $(date -u +%FT%TZ) done"
  } >"$dir/run.log" 2>&1
  tail -n 40 "$dir/run.log"
  local run=$dir/bundle/tree/repo/runs/$name
  [[ -f $run/checkpoint/state.json ]] || die "no checkpoint written (see run.log above)"
  local ship=$dir/ship/$name
  rm -rf "$dir/ship"
  mkdir -p "$ship"
  cp -r "$run/checkpoint" "$ship/"
  rm -f "$ship/checkpoint/optimizer.safetensors"
  touch "$ship/checkpoint/TRANSFERRED"
  for f in config.toml metrics.jsonl; do [[ -f $run/$f ]] && cp "$run/$f" "$ship/"; done
  tar -C "$dir/ship" -cf - "$name" | zstd -q -T0 -3 | split -b "${PIECE_MB}M" -d -a 2 - "$dir/return/piece-"
  (cd "$dir/return" && sha256sum piece-* >pieces.sha256)
  local pieces=("$dir"/return/piece-*) i=0
  cp "$dir/return/pieces.sha256" "$dir/run.log" "$out/"
  for p in "${pieces[@]}"; do
    if ((i < 4)); then mv "$p" "$out/"; fi
    i=$((i + 1))
  done
  log "${#pieces[@]} pieces; $(ls "$dir/return" | grep -c piece- || true) left for 'fetch $name'"
}

fetch() {
  local name=$1 out=${OUT:?OUT must name the folder whose files come back}
  local dir=$STAGE/$name/return
  [[ -d $dir ]] || die "$dir missing: the machine went back after device-run"
  local left=("$dir"/piece-*)
  [[ -e ${left[0]} ]] || { log "nothing left to fetch"; return; }
  ((${#left[@]} <= 8)) || die "${#left[@]} pieces left: more than one call brings back"
  mv "${left[@]}" "$out/"
  log "fetched ${#left[@]} pieces"
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
  cat "$work"/piece-* | zstd -q -d | tar -C "$work/x" -xf -
  [[ -f $work/x/$name/checkpoint/state.json ]] || die "the pieces hold no checkpoint of $name"
  mkdir -p "runs/$name"
  rm -rf "runs/$name/checkpoint.incoming"
  mv "$work/x/$name/checkpoint" "runs/$name/checkpoint.incoming"
  for f in config.toml metrics.jsonl; do [[ -f $work/x/$name/$f ]] && mv "$work/x/$name/$f" "runs/$name/$f"; done
  rm -rf "runs/$name/checkpoint.old"
  [[ -d runs/$name/checkpoint ]] && mv "runs/$name/checkpoint" "runs/$name/checkpoint.old"
  mv "runs/$name/checkpoint.incoming" "runs/$name/checkpoint"
  rm -rf "runs/$name/checkpoint.old"
  log "runs/$name/checkpoint at step $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "runs/$name/checkpoint/state.json")"
}

case ${1:-} in
  pack) shift; (($# >= 2)) || die "usage: pack NAME RECIPE [--set K=V ...]"; pack "$@" ;;
  stage) shift; (($# == 2)) || die "usage: stage NAME PART"; stage "$@" ;;
  device-run) shift; (($# == 2)) || die "usage: device-run NAME SECONDS"; device_run "$@" ;;
  fetch) shift; (($# == 1)) || die "usage: fetch NAME"; fetch "$@" ;;
  device-bench) shift; (($# == 1)) || die "usage: device-bench NAME"; device_bench "$@" ;;
  unpack) shift; (($# >= 2)) || die "usage: unpack NAME DIR [DIR ...]"; unpack "$@" ;;
  *) sed -n '2,37p' "$0"; exit 2 ;;
esac

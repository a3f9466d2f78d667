#!/usr/bin/env bash
# Drives `lase serve` with the official openai and huggingface_hub Python clients and checks
# their vectors equal `lase embed`'s (bench/real_clients.py). Installs the clients into
# .venv-clients (git-ignored) from PyPI on first use; needs the release build.
#   scripts/real_clients.sh [bench/real_clients.py arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x target/release/lase ]] || cargo build --release
if [[ ! -x .venv-clients/bin/python ]]; then
  python3 -m venv .venv-clients
  .venv-clients/bin/python -m pip install -q openai huggingface_hub numpy
fi
.venv-clients/bin/python bench/real_clients.py "$@"

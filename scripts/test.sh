#!/usr/bin/env bash
# The test suite on a fresh machine: set up (libtorch, teacher), then format and lint
# checks and every test, the teacher parity tests included (they must not skip here).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --check
cargo clippy --release --all-targets --quiet -- -D warnings
LASE_REQUIRE_TEACHER=1 cargo test --release

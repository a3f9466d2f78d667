#!/usr/bin/env bash
# Load and soak `lase serve` on loopback (issue 16 item 5): starts the server on a free
# port, runs bench/soak.py against it (valid, oversized, malformed and slowloris clients
# for MINUTES), then stops it with SIGTERM and reports how it exited.
# Usage: scripts/soak.sh [MINUTES] [MODEL] [extra bench/soak.py options...]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
model=${2:-models/lase-base}
shift $(($# < 2 ? $# : 2))
LASE=${LASE:-./target/release/lase}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
$LASE serve --precision "${LASE_PRECISION:-f32}" --model "$model" --port "$port" --host 127.0.0.1 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 1
done
echo "== lase serve --model $model on port $port (pid $pid); $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
status=0
python3 bench/soak.py --port "$port" --pid "$pid" --sentences data/demo/tico19-en-fr.en --minutes "$minutes" "$@" || status=$?
kill -TERM $pid
wait $pid && echo "server exited 0 after SIGTERM" || echo "server exited $? after SIGTERM"
echo "panics in the server log: $(grep -c panicked "$log" || true)"
exit $status

#!/usr/bin/env bash
# Where `lase serve` spends its CPU at 64 clients (perf, 999 Hz, 15 s of a 20 s wrk load),
# against `lase embed` on the same sentences: which share of the samples falls in the
# forward pass (libtorch, oneDNN/fbgemm kernels, lase's own int8 code) and which in HTTP,
# JSON, tokenising, tokio, the kernel and wrk. Usage: serve_profile.sh OUT_DIR
set -eu
cd "$(dirname "$0")/../../.."
out=$1; mkdir -p "$out"
LASE=./target/release/lase
MODEL=models/all-MiniLM-L6-v2
PORT=18090
W=$(mktemp -d)
cp ../shared/data/flores200-devtest/devtest/eng_Latn.devtest "$W/s.txt"
python3 - "$W/s.txt" > "$W/post.lua" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8")]
print("local bodies = {")
for l in lines:
    print("  [==[" + json.dumps({"inputs": l}, ensure_ascii=True) + "]==],")
print("}\nlocal counter = 0\nrequest = function()\n  counter = counter + 1\n  return wrk.format('POST', '/embed', {['Content-Type'] = 'application/json'}, bodies[(counter % #bodies) + 1])\nend")
PY
$LASE serve --precision auto --model $MODEL --port $PORT --max-queued-requests 1024 2> "$W/server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$W"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.2; done
wrk -t 2 -c 64 -d 20s --timeout 30s -s "$W/post.lua" "http://127.0.0.1:$PORT" > "$out/wrk.txt" &
WRK=$!
sleep 3
perf record -F 999 -a -o "$W/serve.data" -- sleep 15 2> "$out/perf-record-serve.txt"
wait $WRK
perf report -i "$W/serve.data" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -40 > "$out/serve_by_comm_dso.txt"
perf report -i "$W/serve.data" --no-children --sort sym --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60 > "$out/serve_by_symbol.txt"
perf report -i "$W/serve.data" --no-children --comm tokio-rt-worker --sort sym --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -50 > "$out/serve_tokio_by_symbol.txt"
kill $SERVER; wait $SERVER 2>/dev/null || true
# lase embed on the same sentences, repeated to ~20 s of work
for _ in $(seq 20); do cat "$W/s.txt"; done > "$W/s20.txt"
perf record -F 999 -o "$W/embed.data" -- $LASE embed --precision auto --model $MODEL --input "$W/s20.txt" --output "$W/e.npy" --quiet > "$out/embed.txt" 2> "$out/perf-record-embed.txt"
perf report -i "$W/embed.data" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -30 > "$out/embed_by_comm_dso.txt"
perf report -i "$W/embed.data" --no-children --sort sym --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60 > "$out/embed_by_symbol.txt"

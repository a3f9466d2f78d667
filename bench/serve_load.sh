#!/usr/bin/env bash
# Load test of `lase serve` on loopback with wrk (Debian package `wrk`): 1, 8 and 64
# concurrent clients, each request one real sentence (FLORES-200 English devtest), against
# the offline `lase embed` throughput on the same sentences, same model, same machine.
# Prints requests/s, sentences/s, p50/p99 latency, non-2xx count and server RSS, then the
# server's forward passes per level (sentences and padded tokens per pass, padding). On a
# 2-core machine wrk (2 threads) shares the CPU with the server.
# Usage: [LASE=BINARY] bench/serve_load.sh [MODEL_DIR] [SECONDS_PER_LEVEL]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/all-MiniLM-L6-v2}
DURATION=${2:-20}
PORT=${PORT:-18080}
LASE=${LASE:-./target/release/lase}
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

SENTENCES=../shared/data/flores200-devtest/devtest/eng_Latn.devtest
cp "$SENTENCES" "$WORK/sentences.txt"
N=$(wc -l < "$WORK/sentences.txt")

# Offline references: the same sentences through `lase embed` (best of 2): its process
# wall time (start and model load included), and its in-process rate (the rate lase embed
# prints: tokenizing and encoding only), which issue 19's goal compares against.
best=0
inproc=0
for _ in 1 2; do
  start=$(date +%s.%N)
  printed=$(LASE_LOG=warn,lase::inference=debug $LASE embed --precision "${LASE_PRECISION:-f32}" --model "$MODEL" --input "$WORK/sentences.txt" --output "$WORK/e.npy" --quiet 2>&1)
  end=$(date +%s.%N)
  rate=$(python3 -c "print($N/($end-$start))")
  best=$(python3 -c "print(max($best,$rate))")
  own=$(grep -o -E '[0-9.]+ sentences/s' <<< "$printed" | cut -d' ' -f1)
  inproc=$(python3 -c "print(max($inproc,$own))")
done
echo "offline lase embed: $N sentences, $(printf %.1f "$best") sentences/s (process wall time), $(printf %.1f "$inproc") sentences/s in-process"
# lase embed's own passes on these sentences (its debug log, the last run's), beside the
# server's below.
{ grep -o -E '[0-9]+ passes for [0-9]+ sentences: [0-9]+ tokens, [0-9]+ with padding' <<< "$printed" || true; } |
  awk '{n+=$1; s+=$4; r+=$6; p+=$8} END {printf "lase embed: %d passes, %.1f sentences and %.0f padded tokens per pass, padding %.1f%% of the padded tokens\n", n, s/(n?n:1), p/(n?n:1), 100*(p-r)/(p?p:1)}'

# wrk script: each request embeds the next sentence of the file.
python3 - "$WORK/sentences.txt" > "$WORK/post.lua" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8")]
print("local bodies = {")
for l in lines:
    body = json.dumps({"inputs": l}, ensure_ascii=True)
    print("  [==[" + body + "]==],")
print("}")
print('''
local counter = 0
request = function()
  counter = counter + 1
  local body = bodies[(counter % #bodies) + 1]
  return wrk.format("POST", "/embed", {["Content-Type"] = "application/json"}, body)
end
local non2xx = 0
response = function(status, headers, body)
  if status ~= 200 then non2xx = non2xx + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT requests=%d seconds=%.2f rps=%.1f p50_ms=%.1f p99_ms=%.1f errors=%d\\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
''')
PY

# LASE_PRECISION: both sides' precision (default f32, as docs/benchmarks.md measured first;
# auto is what embed and serve run by default).
# SERVE_ARGS: extra `lase serve` flags, e.g. "--forward-batch-tokens 256".
$LASE serve --precision "${LASE_PRECISION:-f32}" --model "$MODEL" --port "$PORT" --max-queued-requests 1024 ${SERVE_ARGS:-} 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break
  sleep 0.2
done
rss() { awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$SERVER/status; }
echo "server RSS at start: $(rss) MiB"
echo "| clients | requests/s | sentences/s | vs offline | vs in-process | p50 ms | p99 ms | errors | server RSS MiB |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
# The server's forward passes, from its /metrics: passes, sentences, and tokens without and
# with padding, as "passes sentences real padded" (differences per level below).
pass_stats() {
  curl -s "http://127.0.0.1:$PORT/metrics" | awk '
    /^lase_forward_pass_sentences_count / {n=$2} /^lase_forward_pass_sentences_sum / {s=$2}
    /^lase_forward_tokens_total\{kind="real"\}/ {r=$2} /^lase_forward_tokens_total\{kind="padded"\}/ {p=$2}
    END {print n+0, s+0, r+0, p+0}'
}
passes=()
for c in 1 8 64; do
  before=$(pass_stats)
  line=$(wrk -t "$(( c < 2 ? 1 : 2 ))" -c "$c" -d "${DURATION}s" --timeout 30s -s "$WORK/post.lua" "http://127.0.0.1:$PORT" | grep RESULT)
  rps=$(sed -E 's/.*rps=([0-9.]+).*/\1/' <<< "$line")
  p50=$(sed -E 's/.*p50_ms=([0-9.]+).*/\1/' <<< "$line")
  p99=$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<< "$line")
  err=$(sed -E 's/.*errors=([0-9]+).*/\1/' <<< "$line")
  ratio=$(python3 -c "print(f'{$rps/$best:.2f}x')")
  ratio_in=$(python3 -c "print(f'{$rps/$inproc:.2f}x')")
  echo "| $c | $rps | $rps | $ratio | $ratio_in | $p50 | $p99 | $err | $(rss) |"
  passes+=("$c $before $(pass_stats)")
done
echo "forward passes per level (lase_forward_pass_sentences, lase_forward_tokens_total):"
for p in "${passes[@]}"; do
  read -r c n0 s0 r0 p0 n1 s1 r1 p1 <<<"$p"
  python3 -c "n, s, r, p = $n1 - $n0, $s1 - $s0, $r1 - $r0, $p1 - $p0
print(f'  {$c} clients: {n} passes, {s / max(n, 1):.1f} sentences and {p / max(n, 1):.0f} padded tokens per pass, padding {100 * (p - r) / max(p, 1):.1f}% of the padded tokens')"
done
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E "^lase_batch_sentences_(sum|count)"

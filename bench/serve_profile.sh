#!/usr/bin/env bash
# Where `lase serve`'s CPU time goes at 64 clients, and what the load generator costs:
# perf record (software clock, call graphs) of the server process for SECONDS while wrk
# (2 threads, 64 connections) posts one FLORES-200 English sentence per request, as
# bench/serve_load.sh does; then the share by library and the top symbols, and wrk's own
# CPU time from /usr/bin/time, and the server's CPU time from /proc (how busy it keeps the
# cores), in all and by thread name (the inference pool's threads against the HTTP
# runtime's: what the requests cost outside the forward passes). Needs perf (Debian
# linux-perf) and wrk.
# Usage: [LASE_PRECISION=auto] bench/serve_profile.sh [MODEL_DIR] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/all-MiniLM-L6-v2}
SECONDS_=${2:-10}
PORT=${PORT:-18097}
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; [ -n "${KEEP_PERF:-}" ] && cp "$WORK/perf.data" "$KEEP_PERF"; rm -rf "$WORK"' EXIT
python3 - ../shared/data/flores200-devtest/devtest/eng_Latn.devtest > "$WORK/post.lua" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8")]
print("local bodies = {")
for l in lines:
    print("  [==[" + json.dumps({"inputs": l}, ensure_ascii=True) + "]==],")
print("}")
print('''
local counter = 0
request = function()
  counter = counter + 1
  return wrk.format("POST", "/embed", {["Content-Type"] = "application/json"}, bodies[(counter % #bodies) + 1])
end''')
PY
./target/release/lase serve --precision "${LASE_PRECISION:-auto}" --model "$MODEL" --port "$PORT" --max-queued-requests 1024 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.2; done
kill -0 "$SERVER"  # the server must be up (a port in use ends it)
wrk -t 2 -c 64 -d 3s -s "$WORK/post.lua" "http://127.0.0.1:$PORT" > /dev/null   # warm-up
ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
# CPU ticks of each of the server's threads, as "name ticks" lines (the name is /proc's
# comm, between the parentheses; fields 14 and 15 after it are user and system time).
thread_ticks() {
  python3 - "$SERVER" <<'PY'
import os, sys
pid = sys.argv[1]
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
    except OSError:
        continue
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2:].split()
    print(tid, name.replace(" ", "_"), int(rest[11]) + int(rest[12]))
PY
}
thread_ticks > "$WORK/threads.before"
before=$(ticks)
perf record -F 499 -g -p "$SERVER" -o "$WORK/perf.data" -- sleep "$SECONDS_" > /dev/null 2>&1 &
PERF=$!
/usr/bin/time -f "wrk CPU: user %U s, system %S s over %e s of wall time" \
  wrk -t 2 -c 64 -d "${SECONDS_}s" -s "$WORK/post.lua" "http://127.0.0.1:$PORT" 2>&1 | grep -E 'Requests/sec|wrk CPU'
wait "$PERF"
after=$(ticks)
thread_ticks > "$WORK/threads.after"
python3 -c "import os; t=($after-$before)/os.sysconf('SC_CLK_TCK'); print(f'server CPU: {t:.2f} s over {$SECONDS_} s = {t/$SECONDS_/os.cpu_count():.0%} of {os.cpu_count()} cores (perf sampling included)')"
echo "== server CPU by thread name (threads of one name summed; share of the server's CPU)"
python3 - "$WORK/threads.before" "$WORK/threads.after" <<'PY'
import os, re, sys
def read(path):
    return {tid: (name, int(t)) for tid, name, t in (l.split() for l in open(path))}
before, after = read(sys.argv[1]), read(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")
by_name = {}
for tid, (name, t) in after.items():
    used = t - before.get(tid, (name, 0))[1]
    name = re.sub(r"[-_]?[0-9]+$", "", name)
    count, total = by_name.get(name, (0, 0))
    by_name[name] = (count + 1, total + used)
whole = sum(total for _, total in by_name.values()) or 1
for name, (count, total) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
    if total:
        print(f"  {name} x{count}: {total / hz:.2f} s CPU = {100 * total / whole:.1f}%")
PY
# The first N sample lines of a perf report, reading it to its end: `head` would close the
# pipe early, and under pipefail the SIGPIPE that grep or perf then gets ends the script
# (it stopped after "top symbols" so, before the runtime's section).
first() { awk -v n="$1" '/^ +[0-9.]+%/ && ++k <= n'; }
echo "== server CPU by library"
perf report -i "$WORK/perf.data" --no-children --sort dso 2>/dev/null | first 10
echo "== top symbols"
perf report -i "$WORK/perf.data" --no-children --sort dso,sym 2>/dev/null | first 25 | cut -c1-160
echo "== top symbols of the HTTP runtime's threads (tokio-rt-worker: parsing, tokenising, JSON, sockets)"
perf report -i "$WORK/perf.data" --comms tokio-rt-worker --no-children --sort dso,sym 2>/dev/null | first 25 | cut -c1-160

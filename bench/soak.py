#!/usr/bin/env python3
"""Soak `lase serve` on loopback with a mix of valid, oversized, malformed and slow clients.

Standard library only (asyncio, raw HTTP/1.1 over sockets), so it runs wherever Python 3
does. For --minutes it keeps:
  --valid N      clients posting /embed (1-32 real sentences, 1 in 8 to /v1/embeddings,
                 1 in 16 a /mine of 4 x 4) back to back, timing each answer;
  --bad N        clients sending bad requests in turn: a body over the server's limit
                 (413), 300 inputs (422), cut JSON (400), a text/plain body (415), random
                 bytes, an unknown field (422), a request line of garbage;
  --slow N       slowloris clients: half send their headers one byte a second and never
                 finish them, half send full headers with Content-Length 4096 and then one
                 body byte a second; each is replaced when the server closes it.
Every 5 s it samples the server's RSS (/proc/PID/status) and open connections. At the end
it checks that the server is alive and still answers a valid request correctly, then prints
counts per (client kind, status), latency percentiles of the valid requests, RSS first /
peak / last, and exits non-zero if the server died, answered a valid request with a 5xx or
not at all, or answered a bad request with a 5xx.

Usage: bench/soak.py --port P --pid PID --sentences FILE [--minutes 10] [--valid 16]
       [--bad 4] [--slow 64] [--max-body-bytes 2097152]
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from collections import Counter


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


async def http(port, method, path, body=b"", content_type="application/json", timeout=120.0):
    """One request on its own connection: (status, body bytes)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        writer.write(head + body)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    if not data:
        return None, b""
    line, _, rest = data.partition(b"\r\n")
    parts = line.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return status, rest.partition(b"\r\n\r\n")[2]


async def raw(port, payload, timeout=30.0):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    parts = data.split(b"\r\n", 1)[0].split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


class Soak:
    def __init__(self, args, sentences):
        self.args = args
        self.sentences = sentences
        self.end = time.monotonic() + args.minutes * 60
        self.counts = Counter()
        self.latencies = []
        self.failures = []
        self.slow_closed = Counter()

    def running(self):
        return time.monotonic() < self.end

    def note(self, kind, status):
        self.counts[(kind, status)] += 1

    async def valid_client(self, seed):
        rng = random.Random(seed)
        while self.running():
            n = rng.randint(1, 32)
            batch = [rng.choice(self.sentences) for _ in range(n)]
            roll = rng.random()
            if roll < 1 / 16:
                kind, path = "valid /mine", "/mine"
                body = {"src": batch[:4], "tgt": [rng.choice(self.sentences) for _ in range(4)]}
            elif roll < 1 / 16 + 1 / 8:
                kind, path, body = "valid /v1/embeddings", "/v1/embeddings", {"input": batch, "model": "lase"}
            else:
                kind, path, body = "valid /embed", "/embed", {"inputs": batch, "truncate": True}
            started = time.monotonic()
            try:
                status, text = await http(self.args.port, "POST", path, json.dumps(body).encode())
            except (OSError, asyncio.TimeoutError) as e:
                status, text = None, str(e).encode()
            took = time.monotonic() - started
            self.note(kind, status)
            if status == 200:
                self.latencies.append(took)
            elif status != 429:  # 429 = shed under load, by design
                self.failures.append(f"{kind}: {status} {text[:200]!r}")

    async def bad_client(self, seed):
        rng = random.Random(seed)
        cases = [
            ("bad: body over the limit", lambda: http(self.args.port, "POST", "/embed", b'{"inputs": ["' + b"a" * (self.args.max_body_bytes + 10) + b'"]}')),
            ("bad: 300 inputs", lambda: http(self.args.port, "POST", "/embed", json.dumps({"inputs": ["x"] * 300}).encode())),
            ("bad: cut JSON", lambda: http(self.args.port, "POST", "/embed", b'{"inputs": ["the cat')),
            ("bad: text/plain", lambda: http(self.args.port, "POST", "/embed", b"the cat", "text/plain")),
            ("bad: random bytes", lambda: http(self.args.port, "POST", "/v1/embeddings", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4000))))),
            ("bad: unknown field", lambda: http(self.args.port, "POST", "/mine", b'{"src": ["a"], "tgt": ["b"], "bogus": 1}')),
            ("bad: garbage request line", lambda: raw(self.args.port, b"\x00\x01 GARBAGE\r\n\r\n")),
        ]
        while self.running():
            kind, make = rng.choice(cases)
            try:
                result = await make()
                status = result[0] if isinstance(result, tuple) else result
            except (OSError, asyncio.TimeoutError):
                status = "closed"  # the server may close on a broken request: fine
            self.note(kind, status)
            if isinstance(status, int) and status >= 500:
                self.failures.append(f"{kind}: {status}")

    async def slow_client(self, seed):
        rng = random.Random(seed)
        headers_only = seed % 2 == 0
        kind = "slow: headers 1 byte/s" if headers_only else "slow: body 1 byte/s"
        while self.running():
            opened = time.monotonic()
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.args.port)
            except OSError as e:
                self.note(kind, f"connect failed: {e.__class__.__name__}")
                await asyncio.sleep(1)
                continue
            if headers_only:
                payload = b"POST /embed HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + b"a" * 10000
            else:
                writer.write(b"POST /embed HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n")
                payload = b'{"inputs": ["' + b"a" * 5000
            outcome = "still open at the end"
            try:
                for b in payload:
                    if not self.running():
                        break
                    writer.write(bytes([b]))
                    await writer.drain()
                    try:
                        data = await asyncio.wait_for(reader.read(4096), 1.0 + rng.random() * 0.2)
                    except asyncio.TimeoutError:
                        continue
                    line = data.split(b"\r\n", 1)[0].split()
                    outcome = f"answered {line[1].decode()}" if len(line) > 1 else "closed by the server"
                    break
            except OSError:
                outcome = "closed by the server"
            finally:
                writer.close()
            self.note(kind, outcome)
            self.slow_closed[kind] += time.monotonic() - opened

    async def sampler(self, samples):
        while self.running():
            samples.append((time.monotonic(), rss_kib(self.args.pid), open_fds(self.args.pid)))
            await asyncio.sleep(5)


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--sentences", required=True)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--valid", type=int, default=16)
    p.add_argument("--bad", type=int, default=4)
    p.add_argument("--slow", type=int, default=64)
    p.add_argument("--max-body-bytes", type=int, default=2 << 20)
    args = p.parse_args()
    sentences = [s.strip() for s in open(args.sentences, encoding="utf-8") if s.strip()]
    soak = Soak(args, sentences)
    samples = [(time.monotonic(), rss_kib(args.pid), open_fds(args.pid))]
    started = time.monotonic()
    tasks = [soak.sampler(samples)]
    tasks += [soak.valid_client(i) for i in range(args.valid)]
    tasks += [soak.bad_client(1000 + i) for i in range(args.bad)]
    tasks += [soak.slow_client(2000 + i) for i in range(args.slow)]
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    alive = os.path.exists(f"/proc/{args.pid}")
    check = "server gone"
    if alive:
        status, body = await http(args.port, "POST", "/embed", json.dumps({"inputs": ["the cat sat"]}).encode())
        check = f"{status}, {len(json.loads(body)[0]) if status == 200 else body[:200]!r} dims"
        if status != 200:
            soak.failures.append(f"final check: {check}")
    samples.append((time.monotonic(), rss_kib(args.pid) if alive else 0, open_fds(args.pid) if alive else -1))
    print(f"soak: {elapsed / 60:.1f} min, {args.valid} valid + {args.bad} bad + {args.slow} slow clients")
    for (kind, status), n in sorted(soak.counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(f"  {kind:28s} {str(status):26s} {n:8d}")
    valid = sum(n for (k, s), n in soak.counts.items() if k.startswith("valid"))
    valid_5xx = sum(n for (k, s), n in soak.counts.items() if k.startswith("valid") and isinstance(s, int) and s >= 500)
    valid_none = sum(n for (k, s), n in soak.counts.items() if k.startswith("valid") and s is None)
    lat = sorted(soak.latencies)
    if lat:
        q = statistics.quantiles(lat, n=100)
        print(f"valid requests: {valid} ({valid / elapsed:.1f}/s), 5xx {valid_5xx}, unanswered {valid_none}; "
              f"latency of the 200s p50 {q[49] * 1000:.0f} ms, p99 {q[98] * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms")
    for kind, seconds in sorted(soak.slow_closed.items()):
        n = sum(c for (k, _), c in soak.counts.items() if k == kind)
        print(f"{kind}: {n} connections, held {seconds / max(n, 1):.1f} s on average")
    rss = [r for _, r, _ in samples]
    fds = [f for _, _, f in samples]
    print(f"server RSS: {rss[0] / 1024:.0f} MiB at the start, peak {max(rss) / 1024:.0f} MiB, {rss[-1] / 1024:.0f} MiB at the end; "
          f"open fds {fds[0]} at the start, peak {max(fds)}, {fds[-1]} at the end")
    t0 = samples[0][0]
    by_minute = {}
    for t, r, _ in samples:
        by_minute.setdefault(int((t - t0) // 60), r)
    print("server RSS at the start of each minute (MiB): " + ", ".join(f"{m}: {r / 1024:.0f}" for m, r in sorted(by_minute.items())))
    print(f"server alive at the end: {alive}; a valid request after the soak: {check}")
    for f in soak.failures[:20]:
        print("FAILURE", f)
    ok = alive and valid_5xx == 0 and valid_none == 0 and not soak.failures
    print("soak: ok" if ok else f"soak: FAILED ({len(soak.failures)} failures)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    asyncio.run(main())

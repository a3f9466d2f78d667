"""Exact k-NN, both directions: lase vs faiss-cpu IndexFlatIP, same data, same threads.

X, Y: N x 256 random unit float32 vectors (seeded), k = 4, 2 threads. faiss runs one
search per direction (X in Y, Y in X); lase does both in one pass. faiss is run under
each OpenBLAS core type this CPU can execute and its best time is the comparison. Each
engine runs in its own process; peak RSS comes from wait4. Then the full `lase mine`
(search + ratio margin + max retrieval + TSV) on the same embeddings.

    .venv/bin/pip install faiss-cpu
    cargo build --release --example knn_search
    .venv/bin/python bench/knn_speed.py            # --n 100000 by default
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

FAISS_CHILD = r"""
import json, sys, time, numpy as np, faiss
faiss.omp_set_num_threads(int(sys.argv[4]))
x = np.load(sys.argv[1]); y = np.load(sys.argv[2]); k = int(sys.argv[3])
t = time.perf_counter()
ix = faiss.IndexFlatIP(x.shape[1]); ix.add(y); D1, I1 = ix.search(x, k)
iy = faiss.IndexFlatIP(x.shape[1]); iy.add(x); D2, I2 = iy.search(y, k)
dt = time.perf_counter() - t
np.save(sys.argv[5], np.concatenate([I1.ravel(), I2.ravel()]))
print(json.dumps({"seconds": dt, "faiss": faiss.__version__}))
"""


def run(cmd, env=None):
    """Runs a child; returns (stdout, peak RSS MiB) from wait4."""
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            os.dup2(out.fileno(), 1)
            os.execvpe(cmd[0], cmd, env or os.environ)
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        text = out.read().decode()
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed ({status}):\n{text}")
    return text, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lase-knn-"))
    rng = np.random.default_rng(0)
    for name in ("x", "y"):
        a = rng.standard_normal((args.n, args.dim)).astype(np.float32)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        np.save(tmp / f"{name}.npy", a)
    matrices_mib = 2 * args.n * args.dim * 4 / 2**20
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    rows = []

    flags = open("/proc/cpuinfo").read().split()
    coretypes = ["(default)", "Haswell", "Zen"] + (["SkylakeX"] if "avx512f" in flags else [])
    faiss_best = None
    for ct in coretypes:
        e = dict(env)
        if ct != "(default)":
            e["OPENBLAS_CORETYPE"] = ct
        else:
            e.pop("OPENBLAS_CORETYPE", None)
        out, rss = run([sys.executable, "-c", FAISS_CHILD, str(tmp / "x.npy"), str(tmp / "y.npy"), str(args.k), str(args.threads), str(tmp / "faiss_idx.npy")], e)
        info = json.loads(out.strip().splitlines()[-1])
        rows.append((f"faiss {info['faiss']} IndexFlatIP, OPENBLAS_CORETYPE={ct}", info["seconds"], rss))
        faiss_best = info["seconds"] if faiss_best is None else min(faiss_best, info["seconds"])

    out, rss = run([str(ROOT / "target/release/examples/knn_search"), str(tmp / "x.npy"), str(tmp / "y.npy"), str(args.k), str(args.threads)], env)
    info = json.loads(out.strip().splitlines()[-1])
    rows.append(("lase exact k-NN (one pass, both directions)", info["seconds"], rss))
    lase_search = info

    lines = "".join(f"s{i}\n" for i in range(args.n))
    (tmp / "src.txt").write_text(lines)
    (tmp / "tgt.txt").write_text(lines.replace("s", "t"))
    import time
    t = time.perf_counter()
    _, rss = run([str(ROOT / "target/release/lase"), "--device", "cpu", "--threads", str(args.threads), "mine", "--quiet",
                  "--src", str(tmp / "src.txt"), "--tgt", str(tmp / "tgt.txt"), "--src-embeddings", str(tmp / "x.npy"),
                  "--tgt-embeddings", str(tmp / "y.npy"), "--output", str(tmp / "pairs.tsv")], env)
    rows.append(("lase mine (search + ratio margin + max retrieval + TSV)", time.perf_counter() - t, rss))

    print(f"{args.n} x {args.n} x {args.dim}-d float32 unit vectors, k={args.k}, both directions, {args.threads} threads")
    print(f"the two matrices: {matrices_mib:.0f} MiB; lase's process before touching them: {lase_search['baseline_rss_mib']:.0f} MiB")
    print(f"{'engine':62} {'seconds':>8} {'faiss/lase':>10} {'peak RSS MiB':>12}")
    for name, secs, rss in rows:
        print(f"{name:62} {secs:>8.1f} {faiss_best / secs:>9.2f}x {rss:>12.0f}")
    lase_extra = rows[-2][2] - lase_search["baseline_rss_mib"]
    print(f"lase search memory above its baseline: {lase_extra:.0f} MiB = {lase_extra / matrices_mib:.2f}x the two matrices")


if __name__ == "__main__":
    main()

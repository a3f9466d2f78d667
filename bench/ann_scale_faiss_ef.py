#!/usr/bin/env python3
"""faiss HNSWSQ bf16 alone at other search widths (ef) on a size bench/ann_scale.py already
prepared: the same FAISS program, graph parameters (M 16, ef_construction 128), k 4,
4k candidates rescored in f32 and 1,000 recall queries a direction, so a row compares with
that script's lase row at the same recall rather than the same ef.

Usage: .venv/bin/python bench/ann_scale_faiss_ef.py [--dir runs/ann-scale-1m/n1000000] [--threads 2] EF [EF ...]
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ann_scale  # noqa: E402
from ann_search import run as timed  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("ef", nargs="+")
ap.add_argument("--dir", default="runs/ann-scale-1m/n1000000")
ap.add_argument("--threads", default="2")
args = ap.parse_args()
n = sum(1 for _ in open(Path(args.dir) / "src.txt", encoding="utf-8"))
for ef in args.ef:
    seconds, rss, out = timed([sys.executable, "-c", ann_scale.FAISS, f"{args.dir}/src.npy", f"{args.dir}/tgt.npy",
                               "16", "128", ef, "4", args.threads, "1000", "bf16", "4"])
    f = json.loads(out.strip().splitlines()[-1])
    print(f"| {n:,} | faiss {f['faiss']} HNSWSQ bf16, ef {ef} | {f['search_seconds']:.1f} | {seconds:.1f} | {rss:.0f} "
          f"| {f['recall'][0]:.4f} / {f['recall'][1]:.4f} |", flush=True)

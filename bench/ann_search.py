"""Exact search vs HNSW (`lase mine --ann`) on real sentence embeddings: seconds, peak RSS,
the recall@k `lase mine` itself reports, and how many mined pairs agree with exact mining.

Rows: distinct rows of a float32 .npy of sentence embeddings (default: the all-MiniLM-L6-v2
embeddings of the English training sentences that `lase distill` caches for
configs/lase-small.toml), split into a source and a target half, 2 threads.

    .venv/bin/python bench/ann_search.py [--embeddings E.npy] [--rows 200000]
"""

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run(cmd):
    """Runs `cmd` under /usr/bin/time -v: (wall seconds, peak RSS MiB, stdout)."""
    out = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    h, m, s = wall.groups()
    seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) / 1024
    return seconds, rss, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embeddings", default=str(ROOT / "runs/lase-small/teacher-target.npy"))
    ap.add_argument("--rows", type=int, default=200_000, help="distinct rows used, split in halves")
    ap.add_argument("-k", type=int, default=4)
    args = ap.parse_args()
    m = np.load(args.embeddings, mmap_mode="r")
    _, first = np.unique(np.asarray(m[: min(len(m), 3 * args.rows)]), axis=0, return_index=True)
    keep = np.sort(first)[: args.rows]
    rows = np.asarray(m[keep], dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    half = len(rows) // 2
    tmp = Path(tempfile.mkdtemp(prefix="lase-ann-"))
    for name, part in (("src", rows[:half]), ("tgt", rows[half : 2 * half])):
        np.save(tmp / f"{name}.npy", part)
        (tmp / f"{name}.txt").write_text("".join(f"{name} {i}\n" for i in range(len(part))))
    print(f"{half} x {half} distinct rows of {args.embeddings} ({rows.shape[1]}-d), k = {args.k}, 2 threads")
    base = [str(ROOT / "target/release/lase"), "--device", "cpu", "--threads", "2", "mine", "--quiet",
            "--src", str(tmp / "src.txt"), "--tgt", str(tmp / "tgt.txt"),
            "--src-embeddings", str(tmp / "src.npy"), "--tgt-embeddings", str(tmp / "tgt.npy"),
            "-k", str(args.k), "--threshold", "1.06"]
    settings = [("exact", []),
                ("HNSW M 16, ef_construction 128, ef 64 (defaults)", ["--ann"]),
                ("HNSW M 16, ef_construction 64, ef 32", ["--ann", "--ann-ef-construction", "64", "--ann-ef-search", "32"])]
    exact_pairs = None
    print("| search | seconds | peak RSS MiB | recall@k src->tgt / tgt->src | mined pairs | same as exact |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for name, extra in settings:
        out = tmp / "pairs.tsv"
        seconds, rss, stdout = run(base + extra + ["--output", str(out)])
        # The pair, not its score: a missed neighbour shifts the margin of pairs it borders.
        pairs = {tuple(line.split("\t")[1:3]) for line in out.read_text().splitlines()}
        recall = re.search(r"source->target ([\d.]+), target->source ([\d.]+)", stdout)
        recall = f"{recall.group(1)} / {recall.group(2)}" if recall else "1 (exact)"
        if exact_pairs is None:
            exact_pairs = pairs
        same = len(pairs & exact_pairs) / max(1, len(exact_pairs))
        print(f"| {name} | {seconds:.1f} | {rss:.0f} | {recall} | {len(pairs)} | {100 * same:.1f}% |", flush=True)


if __name__ == "__main__":
    main()

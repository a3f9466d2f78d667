"""Quantised vs exact search on real sentence embeddings.

12,000 distinct English sentences from the Tatoeba training data (eng-rus English side)
against 12,000 others (eng-spa English side), embedded with all-MiniLM-L6-v2 (384-d): paraphrase
mining. `lase mine` with exact search, then binary and int8 shortlists (10 x k) with float
rescoring: time, peak RSS, the recall@4 that lase mine itself reports (1,000 sampled
queries per direction), code size, and the share of mined pairs equal to exact search's.

    .venv/bin/python bench/quantized_search.py
"""

import gzip
import os
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "tatoeba-challenge-eng-train"
LASE = str(ROOT / "target/release/lase")


def english(pair, n, skip=0):
    with gzip.open(DATA / pair / "tatoeba-test-v2021-08-07.eng.gz", "rt", encoding="utf-8") as f:
        seen, out = set(), []
        for line in f:
            s = line.strip()
            if s and s not in seen:
                seen.add(s)
                out.append(s)
    return out[skip : skip + n]


def timed(cmd):
    pid = os.fork()
    if pid == 0:
        out = os.open(os.devnull, os.O_WRONLY)
        os.dup2(out, 2)
        os.execv(cmd[0], cmd)
    import time

    t = time.perf_counter()
    _, status, usage = os.wait4(pid, 0)
    assert status == 0, cmd
    return time.perf_counter() - t, usage.ru_maxrss / 1024


def main():
    tmp = Path(tempfile.mkdtemp(prefix="lase-quant-"))
    src, tgt = english("eng-rus", 12000), english("eng-spa", 12000)
    (tmp / "src.txt").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp / "tgt.txt").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    for side in ("src", "tgt"):
        subprocess.run([LASE, "--device", "cpu", "embed", "--quiet", "--precision", "f32", "--model", str(ROOT / "models/all-MiniLM-L6-v2"),
                        "--input", str(tmp / f"{side}.txt"), "--output", str(tmp / f"{side}.npy")], check=True, capture_output=True)
    results = {}
    for q in ("none", "binary", "int8"):
        cmd = [LASE, "--device", "cpu", "--threads", "2", "mine", "--quiet", "--src", str(tmp / "src.txt"), "--tgt", str(tmp / "tgt.txt"),
               "--src-embeddings", str(tmp / "src.npy"), "--tgt-embeddings", str(tmp / "tgt.npy"),
               "--output", str(tmp / f"pairs_{q}.tsv"), "--quantize", q]
        secs, rss = timed(cmd)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        m = re.search(r"source->target ([0-9.]+), target->source ([0-9.]+); codes ([0-9.]+) MiB", out)
        pairs = {tuple(l.split("\t")[1:3]) for l in (tmp / f"pairs_{q}.tsv").read_text(encoding="utf-8").splitlines()}
        results[q] = (secs, rss, m.groups() if m else ("1", "1", f"{2 * len(src) * 384 * 4 / 2**20:.1f} (float32)"), pairs)
    exact_pairs = results["none"][3]
    print(f"{len(src)} x {len(tgt)} English sentences, all-MiniLM-L6-v2 (384-d), k=4, shortlist 10 x k, 2 threads")
    print(f"{'search':8} {'seconds':>8} {'peak RSS MiB':>12} {'recall@4 s->t':>13} {'t->s':>6} {'codes MiB':>18} {'pairs = exact':>13}")
    for q, (secs, rss, (rf, rb, codes), pairs) in results.items():
        same = len(pairs & exact_pairs) / len(exact_pairs)
        print(f"{q:8} {secs:>8.1f} {rss:>12.0f} {float(rf):>13.4f} {float(rb):>6.4f} {codes:>18} {same:>13.4f}")


if __name__ == "__main__":
    main()

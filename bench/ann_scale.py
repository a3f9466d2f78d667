"""Mining at scale: `lase mine --ann` (usearch HNSW) against faiss HNSW and against lase's own
exact search, on real-model vectors of real sentences, from 100k x 100k up to 1M x 1M.

Sentences: distinct lines sampled over every training corpus in ../shared/data (every
language of every file, scripts/sample_training_sentences.py; never a test set), embedded
once by --model (cached in --work), split into a source and a target half that share no
line. For each size n, the first n rows of each half:

- lase exact (`lase mine`, the default search) where n <= --exact-max;
- lase HNSW (`lase mine --ann --ann-storage S`, M / ef_construction / ef below) for each
  graph storage S in --storages (f32, bf16, i8): one graph per side;
- faiss with the same storage (IndexHNSWFlat for f32, IndexHNSWSQ with QT_bf16 / QT_8bit),
  inner product, the same M / ef_construction / ef, one graph per side, both directions
  (what mining needs), in its own process. HNSWFlat returns k neighbours with exact
  scores; the quantised graphs, like lase's, return --rescored-per-k x k candidates (at
  most ef), of which the best k by exact f32 scores are kept.

Every run gets --threads threads and is timed alone. Reported: the k-NN search seconds (lase
prints them apart from reading and margin scoring; faiss's are graph building plus search),
the whole process's wall seconds and peak RSS, and recall@k against exact search on 1,000
sampled queries per direction (lase's own report; the same sampling in the faiss process),
where a neighbour as near as the k-th exact one (within 1e-5) counts as found: distinct
lines can embed to the same vector (2.2% of the 100k target rows here).

    .venv/bin/python bench/ann_scale.py [--model models/lase-mini] [--sizes 100000,250000,1000000]
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from ann_search import run as timed  # bench/ is the script's own folder on sys.path

ROOT = Path(__file__).resolve().parents[1]

FAISS = r"""
import json, sys, time
import numpy as np, faiss
src, tgt, m, efc, ef, k, threads, sample, storage, per_k = sys.argv[1:11]
m, efc, ef, k, threads, sample, per_k = int(m), int(efc), int(ef), int(k), int(threads), int(sample), int(per_k)
faiss.omp_set_num_threads(threads)
x = np.load(src); y = np.load(tgt)
# HNSWFlat's own scores are exact f32 inner products: it returns k, as at its best. The
# quantised graphs return per_k x k candidates (at most ef), rescored below as lase does.
wanted = k if storage == "f32" else max(k, min(per_k * k, ef))
start = time.perf_counter()
found = []
for q, base in ((x, y), (y, x)):
    if storage == "f32":
        index = faiss.IndexHNSWFlat(base.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    else:
        qt = {"bf16": faiss.ScalarQuantizer.QT_bf16, "i8": faiss.ScalarQuantizer.QT_8bit}[storage]
        index = faiss.IndexHNSWSQ(base.shape[1], qt, m, faiss.METRIC_INNER_PRODUCT)
        index.train(base)
    index.hnsw.efConstruction = efc
    index.add(base)
    index.hnsw.efSearch = ef
    got, ids = index.search(q, wanted)
    if storage != "f32":
        # As lase does: the candidates rescored by exact f32 inner products, best k kept.
        got = np.concatenate([np.einsum("qd,qcd->qc", q[i:i + 8192], base[np.maximum(ids[i:i + 8192], 0)])
                              for i in range(0, len(q), 8192)])
    scores = np.where(ids < 0, -np.inf, got)
    best = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    found.append(np.take_along_axis(scores, best, axis=1))
    del index
seconds = time.perf_counter() - start
recalls = []
for (q, base), got in zip(((x, y), (y, x)), found):
    rows = np.arange(0, len(q), max(1, -(-len(q) // sample)))
    kth = -np.sort(-(q[rows] @ base.T), axis=1)[:, k - 1]
    # Ties count as found, as in lase's report: a row as near as the k-th exact neighbour.
    recalls.append(float(np.mean(np.minimum((got[rows] >= kth[:, None] - 1e-5).sum(axis=1), k) / k)))
print(json.dumps({"search_seconds": seconds, "recall": recalls, "faiss": faiss.__version__,
                  "simd": faiss.get_compile_options()}))
"""

def prepare(args, work):
    """Distinct sampled sentences and their vectors, cached in `work`."""
    need = 2 * max(args.sizes)
    text = work / "sentences.txt"
    if not text.exists():
        raw = work / "sample.txt"
        subprocess.run([sys.executable, str(ROOT / "scripts/sample_training_sentences.py"), str(raw),
                        "--count", str(3 * need), "--per-file", str(args.per_file), "--seed", "7"], check=True)
        seen, keep = set(), []
        for line in raw.read_text(encoding="utf-8").splitlines():
            if line not in seen and "\t" not in line:
                seen.add(line)
                keep.append(line)
        if len(keep) < need:
            raise SystemExit(f"only {len(keep)} distinct sentences sampled, {need} needed: raise --per-file")
        tmp = text.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in keep[:need]), encoding="utf-8")
        os.replace(tmp, text)
        raw.unlink()
    vectors = work / "vectors.npy"
    # The cached vectors name the weights that made them: a later model in the same folder
    # (a new lase-mini, say) is refused rather than timed on another model's vectors.
    stamp = work / "vectors.model"
    weights = hashlib.sha256((Path(args.model) / "model.safetensors").read_bytes()).hexdigest()
    made_by = f"{args.model} {weights}"
    if vectors.exists():
        if not stamp.exists() or stamp.read_text(encoding="utf-8").strip() != made_by:
            raise SystemExit(f"{vectors} was not embedded by {made_by} ({stamp}: "
                             f"{stamp.read_text(encoding='utf-8').strip() if stamp.exists() else 'missing'}); "
                             f"remove it or give another --work")
    else:
        seconds, rss, out = timed([str(ROOT / "target/release/lase"), "--threads", str(args.threads), "embed",
                                   "--model", args.model, "--input", str(text), "--output", str(vectors),
                                   "--normalize", "--quiet"])
        stamp.write_text(made_by + "\n", encoding="utf-8")
        print(f"embedded {need} sentences with {args.model}: {seconds:.0f} s ({need / seconds:.0f} sentences/s), "
              f"peak RSS {rss:.0f} MiB; {out.strip()}", flush=True)
    return text, np.load(vectors, mmap_mode="r")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/lase-mini")
    ap.add_argument("--sizes", default="100000,250000,1000000", help="sentences per side")
    ap.add_argument("--exact-max", type=int, default=250_000, help="largest n searched exactly too")
    ap.add_argument("--work", default=str(ROOT / "runs/ann-scale"))
    ap.add_argument("--per-file", type=int, default=40_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("-M", type=int, default=16, help="HNSW edges per node (both)")
    ap.add_argument("--ef-construction", type=int, default=128)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--storages", default="f32,bf16,i8",
                    help="how each graph stores its vectors (lase --ann-storage; faiss HNSWFlat / HNSWSQ)")
    ap.add_argument("--rescored-per-k", type=int, default=4,
                    help="candidates per neighbour rescored in f32 (lase's RESCORED_PER_K); faiss does the same")
    ap.add_argument("--no-faiss", action="store_true", help="lase's rows only (faiss at other ef: bench/ann_scale_faiss_ef.py)")
    ap.add_argument("--lase", default=str(ROOT / "target/release/lase"), help="the lase binary to time")
    ap.add_argument("--prepare-only", action="store_true",
                    help="sample and embed the sentences into --work, then stop: untimed, so it may run beside "
                         "other work (the searches after it need the machine alone)")
    args = ap.parse_args()
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    args.storages = args.storages.split(",")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    text, vectors = prepare(args, work)
    if args.prepare_only:
        print(f"prepared {vectors.shape[0]} vectors ({vectors.shape[1]}-d) in {work}", flush=True)
        return
    lines = text.read_text(encoding="utf-8").splitlines()
    half = len(lines) // 2
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
    simd = " ".join(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni"))
    print(f"{cpu} ({simd}); {args.threads} threads; {args.model} vectors ({vectors.shape[1]}-d) of {text}; "
          f"k {args.k}; HNSW M {args.M}, ef_construction {args.ef_construction}, ef {args.ef}", flush=True)
    print("| n x n | search | k-NN s | process s | peak RSS MiB | recall@k src->tgt / tgt->src |")
    print("| --- | --- | ---: | ---: | ---: | --- |", flush=True)
    results = []
    lase = [args.lase, "--device", "cpu", "--threads", str(args.threads), "mine", "--quiet"]
    for n in args.sizes:
        d = work / f"n{n}"
        d.mkdir(exist_ok=True)
        for name, lo in (("src", 0), ("tgt", half)):
            if not (d / f"{name}.npy").exists():
                np.save(d / f"{name}.npy", np.ascontiguousarray(vectors[lo : lo + n], dtype=np.float32))
                (d / f"{name}.txt").write_text("".join(l + "\n" for l in lines[lo : lo + n]), encoding="utf-8")
        io = ["--src", str(d / "src.txt"), "--tgt", str(d / "tgt.txt"), "--src-embeddings", str(d / "src.npy"),
              "--tgt-embeddings", str(d / "tgt.npy"), "-k", str(args.k), "--threshold", "1.06",
              "--output", str(d / "pairs.tsv")]
        hnsw = ["--ann", "--ann-connectivity", str(args.M), "--ann-ef-construction", str(args.ef_construction),
                "--ann-ef-search", str(args.ef)]
        runs = ([("lase exact", lase + io)] if n <= args.exact_max else []) + [
            (f"lase HNSW {st}", lase + io + hnsw + ["--ann-storage", st]) for st in args.storages]
        for name, cmd in runs:
            seconds, rss, out = timed(cmd)
            knn = float(re.search(r"k-NN search ([\d.]+) s", out).group(1))
            rec = re.search(r"source->target ([\d.]+), target->source ([\d.]+)", out)
            recall = [float(rec.group(1)), float(rec.group(2))] if rec else [1.0, 1.0]
            results.append({"n": n, "search": name, "knn_seconds": knn, "seconds": seconds, "rss_mib": rss,
                            "recall": recall})
            print(f"| {n:,} | {name} | {knn:.1f} | {seconds:.1f} | {rss:.0f} | {recall[0]:.4f} / {recall[1]:.4f} |",
                  flush=True)
        for st in ([] if args.no_faiss else args.storages):
            seconds, rss, out = timed([sys.executable, "-c", FAISS, str(d / "src.npy"), str(d / "tgt.npy"),
                                       str(args.M), str(args.ef_construction), str(args.ef), str(args.k),
                                       str(args.threads), "1000", st, str(args.rescored_per_k)])
            f = json.loads(out.strip().splitlines()[-1])
            kind = "HNSWFlat" if st == "f32" else f"HNSWSQ {st}"
            results.append({"n": n, "search": f"faiss {kind}", "storage": st, "knn_seconds": f["search_seconds"],
                            "seconds": seconds, "rss_mib": rss, "recall": f["recall"], "faiss": f["faiss"],
                            "faiss_simd": f["simd"]})
            print(f"| {n:,} | faiss {f['faiss']} {kind} ({f['simd'].strip()}) | {f['search_seconds']:.1f} "
                  f"| {seconds:.1f} | {rss:.0f} | {f['recall'][0]:.4f} / {f['recall'][1]:.4f} |", flush=True)
            lase_hnsw = next(r for r in results if r["n"] == n and r["search"] == f"lase HNSW {st}")
            print(f"|  | faiss {kind} / lase HNSW {st} k-NN seconds | "
                  f"{f['search_seconds'] / lase_hnsw['knn_seconds']:.2f}x |  |  |  |", flush=True)
        out_json = work / "results.json"
        out_json.with_suffix(".tmp").write_text(json.dumps(results, indent=1))
        os.replace(out_json.with_suffix(".tmp"), out_json)


if __name__ == "__main__":
    main()

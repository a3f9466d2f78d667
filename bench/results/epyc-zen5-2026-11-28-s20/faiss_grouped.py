"""Twentieth session: would faiss gain as much as lase from rows grouped by region? The 1M x 1M
vectors of ann_1m.sh reordered the way src/mine/locality.rs orders them for lase (spherical
k-means, 488 centroids for 2M rows, trained on ~65k rows strided over both sides; each side's
rows sorted by nearest centroid; here with faiss.Kmeans, 8 iterations, and without lase's
chaining of the centroids), written to runs/ann-scale-1m/n1000000-grouped; then
bench/ann_scale_faiss_ef.py runs faiss on them (its usual program: rows inserted and
queries searched in file order)."""
import os, time
import numpy as np, faiss

src_dir, out = "runs/ann-scale-1m/n1000000", "runs/ann-scale-1m/n1000000-grouped"
os.makedirs(out, exist_ok=True)
faiss.omp_set_num_threads(2)
x = np.load(f"{src_dir}/src.npy"); y = np.load(f"{src_dir}/tgt.npy")
t = time.perf_counter()
step = -(-(len(x) + len(y)) // 65536)
km = faiss.Kmeans(x.shape[1], (len(x) + len(y)) // 4096, niter=8, spherical=True, seed=1)
km.train(np.concatenate([x[::step], y[::step]]))
for name, m in (("src", x), ("tgt", y)):
    _, a = km.index.search(m, 1)
    order = np.argsort(a[:, 0], kind="stable")
    np.save(f"{out}/{name}.npy", np.ascontiguousarray(m[order]))
    lines = open(f"{src_dir}/{name}.txt", encoding="utf-8").read().split("\n")[:-1]
    open(f"{out}/{name}.txt", "w", encoding="utf-8").write("".join(lines[i] + "\n" for i in order))
print(f"grouped {len(x)} + {len(y)} rows by {km.k} centroids in {time.perf_counter() - t:.1f} s", flush=True)

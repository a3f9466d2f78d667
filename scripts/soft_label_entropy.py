"""How informative a teacher's soft labels are (soft-contrastive.txt Eq. 4 at tau 0.1):
for random batches of cached teacher embeddings, the mean cosine between different
sentences, the mean entropy of the label rows softmax(cos / tau) (uniform = ln N) and the
mean weight a sentence gives itself; with --centre, the same after subtracting the
cache's mean vector (lase's `soft_label_centering`).

    .venv/bin/python scripts/soft_label_entropy.py runs/lase-small/teacher-target.npy [--centre]
"""

import argparse

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("cache", nargs="+", help="teacher-*.npy files (one run's sides share the mean)")
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--batches", type=int, default=20)
parser.add_argument("--tau", type=float, default=0.1)
parser.add_argument("--centre", action="store_true")
args = parser.parse_args()

caches = [np.load(p, mmap_mode="r") for p in args.cache]
mean = None
if args.centre:
    total = sum(np.asarray(c, dtype=np.float64).sum(0) for c in caches)
    mean = total / sum(c.shape[0] for c in caches)
rng = np.random.default_rng(0)
n = args.batch
for path, cache in zip(args.cache, caches):
    off, ent, self_w = [], [], []
    for _ in range(args.batches):
        e = np.asarray(cache[np.sort(rng.choice(cache.shape[0], n, replace=False))], dtype=np.float64)
        if mean is not None:
            e = e - mean
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        cos = e @ e.T
        off.append(cos[~np.eye(n, dtype=bool)].mean())
        z = cos / args.tau
        w = np.exp(z - z.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        ent.append((-(w * np.log(w + 1e-30)).sum(1)).mean())
        self_w.append(np.diag(w).mean())
    print(f"{path}{' (centred)' if args.centre else ''}: mean cosine between different sentences "
          f"{np.mean(off):.3f}, label entropy {np.mean(ent):.2f} nats (uniform {np.log(n):.2f}), "
          f"self weight {np.mean(self_w):.3f}")

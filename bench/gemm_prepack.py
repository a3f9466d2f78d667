"""How much of lase's bf16 encode time a prepacked linear kernel would save (issue 19).

lase's linear layers call libtorch's `linear`, which hands bfloat16 products to oneDNN
and reorders (packs) the weight for its AMX/AVX-512 kernel on every call. libtorch also
has a prepacked path, `torch.ops.mkldnn._reorder_linear_weight` once +
`torch.ops.mkldnn._linear_pointwise` per call (what torch.compile's CPU freezing uses;
a registered custom op, which tch does not expose). This times both on the shapes of
all-MiniLM-L6-v2's layers (M token rows, 384 -> 384, 384 -> 1536, 1536 -> 384) in the
same libtorch, 2 threads, and prints the whole-forward GEMM time per 1,024 tokens
(6 layers: 4 x 384x384, 384x1536, 1536x384) each way.

    .venv/bin/python bench/gemm_prepack.py [--rows 1024] [--threads 2]
"""

import argparse
import platform
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=1024)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--repeats", type=int, default=300)
args = parser.parse_args()
torch.set_num_threads(args.threads)

flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
shown = sorted(flags & {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8"})
print(f"CPU {cpu} ({platform.machine()}), flags {' '.join(shown)}; torch {torch.__version__}, "
      f"{args.threads} threads, {args.rows} rows, bfloat16")


def timed(f):
    for _ in range(20):
        f()
    t = time.perf_counter()
    for _ in range(args.repeats):
        f()
    return (time.perf_counter() - t) / args.repeats


M = args.rows
per_shape = {}
for k, n in [(384, 384), (384, 1536), (1536, 384)]:
    torch.manual_seed(0)
    x = torch.randn(M, k).bfloat16()
    w = torch.randn(n, k).bfloat16()
    b = torch.randn(n).bfloat16()
    packed = torch.ops.mkldnn._reorder_linear_weight(w, M)
    plain = torch.nn.functional.linear(x, w, b)
    fast = torch.ops.mkldnn._linear_pointwise(x, packed, b, "none", [], "")
    diff = (plain.float() - fast.float()).abs().max().item()
    t_plain = timed(lambda: torch.nn.functional.linear(x, w, b))
    t_packed = timed(lambda: torch.ops.mkldnn._linear_pointwise(x, packed, b, "none", [], ""))
    per_shape[(k, n)] = (t_plain, t_packed)
    flops = 2 * M * k * n
    print(f"{k:>5} -> {n:<5} linear {t_plain * 1e6:7.1f} us ({flops / t_plain / 1e12:.2f} TFLOP/s)  "
          f"prepacked {t_packed * 1e6:7.1f} us ({flops / t_packed / 1e12:.2f} TFLOP/s)  "
          f"{t_plain / t_packed:.2f}x  max |diff| {diff:.3g}")


def forward(i):
    s = per_shape
    return 6 * (4 * s[(384, 384)][i] + s[(384, 1536)][i] + s[(1536, 384)][i]) * 1024 / M


print(f"6-layer GEMM time per 1,024 tokens: linear {forward(0) * 1e3:.2f} ms, "
      f"prepacked {forward(1) * 1e3:.2f} ms ({forward(0) / forward(1):.2f}x)")

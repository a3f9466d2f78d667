"""The int8 product lase's int8 layers call, against oneDNN's prepacked alternative.

libtorch's `_int_mm` (oneDNN's s8 x s8 -> s32 GEMM, which packs the weights on each call)
and `onednn::qlinear_pointwise` with weights packed once by `onednn::qlinear_prepack`
(u8 activations with zero point 128, i.e. the same s8 values shifted; float32 output with
unit scales, so both return the exact int32 sums), on all-MiniLM-L6-v2's four product shapes
for a batch of --rows tokens (default 900), one thread, mean of 30 calls after 2 warm-up calls. Also prints
each product's rate in multiply-adds per second.

    .venv/bin/python bench/int8_product.py [--rows N]   # raw: bench/results/epyc-zen4-2026-11-26-s2/int8_product*.txt
"""
import argparse
import platform
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--rows", type=int, default=900, help="tokens per product (lase embed's passes: ~900 per 2 workers; lase serve's: ~250)")
args = ap.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)


def mean_ms(f, n=30):
    f()
    f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e3


cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"torch {torch.__version__}, 1 thread, CPU {cpu}")
m = args.rows
for k, n in [(384, 1152), (384, 384), (384, 1536), (1536, 384)]:
    x = torch.randn(m, k)
    w = torch.randn(n, k)
    wq = (w / (w.abs().amax(1, keepdim=True) / 63)).round().clamp(-63, 63).to(torch.int8)
    xq = (x / (x.abs().amax(1, keepdim=True) / 127)).round().clamp(-127, 127).to(torch.int8)
    wt = wq.t()
    exact = torch._int_mm(xq, wt)
    int_mm = mean_ms(lambda: torch._int_mm(xq, wt))
    packed = torch.ops.onednn.qlinear_prepack(wq, [m, k])
    xu = (xq.to(torch.int16) + 128).to(torch.uint8)

    def qlinear():
        return torch.ops.onednn.qlinear_pointwise(xu, 1.0, 128, packed, torch.ones(n), torch.zeros(n, dtype=torch.long),
                                                  None, 1.0, 0, torch.float32, "none", [], "")

    diff = (qlinear() - exact.float()).abs().max().item()
    prepacked = mean_ms(qlinear)
    rate = lambda ms: m * k * n / (ms / 1e3) / 1e9
    print(f"{m} x {k} x {n}: _int_mm {int_mm:.3f} ms ({rate(int_mm):.0f} G multiply-adds/s); "
          f"prepacked qlinear_pointwise {prepacked:.3f} ms ({rate(prepacked):.0f} G/s); max difference {diff:g}")

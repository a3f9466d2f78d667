#!/usr/bin/env python3
"""Groups `perf report --no-children -g none --sort dso,sym --stdio` lines by kernel family.
Usage: perf_groups.py REPORT.txt   (percent first, then the dso and symbol)"""
import collections
import sys

groups = collections.Counter()
for line in open(sys.argv[1]):
    pct, rest = line.split(" ", 1)
    pct = float(pct.rstrip("%"))
    if "flash_attention" in rest:
        key = "attention: libtorch cpu_flash_attention"
    elif "sgemm" in rest:
        key = "attention: MKL sgemm (the only f32 products under int8)"
    elif "JIT" in rest:
        key = "oneDNN JIT code (the int8 products)"
    elif "quantize" in rest or "int8" in rest:
        key = "lase int8 quantise / epilogue"
    elif "LayerNorm" in rest or "RowwiseMoments" in rest:
        key = "layer norm"
    elif "exp" in rest or "gelu" in rest.lower() or "erf" in rest:
        key = "exp / GELU"
    elif "kernel.kallsyms" in rest:
        key = "kernel"
    elif "libgomp" in rest or "thread_main" in rest:
        key = "OpenMP / threads"
    elif "mem" in rest or "malloc" in rest or "free" in rest:
        key = "memory"
    else:
        key = "other"
    groups[key] += pct
for key, pct in groups.most_common():
    print(f"{pct:6.2f}% {key}")

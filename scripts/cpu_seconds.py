#!/usr/bin/env python3
"""Logs the CPU seconds (user + system, children excluded) a training process has used
against the step its run folder has reached, so that recipes run side by side on one
machine can be compared at equal compute whatever else the machine was doing.

Every INTERVAL seconds, while PID lives, appends `cpu_seconds<TAB>step` to OUT, where
step is the last `step` in RUN/metrics.jsonl (0 before the first one: set-up, i.e.
reading data, learning a tokenizer, filling a teacher cache). A resumed run appends to
the same OUT: its CPU seconds continue from the last line.

Usage: cpu_seconds.py PID RUN OUT [INTERVAL]
"""
import json
import os
import sys
import time


def last_step(metrics):
    try:
        with open(metrics, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError):
            continue
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11], fields[12]: utime, stime (fields 14 and 15 of proc(5), counted from 1)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    pid, run, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    interval = float(sys.argv[4]) if len(sys.argv) > 4 else 15.0
    base = 0.0
    if os.path.exists(out):
        with open(out) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        if lines:
            base = float(lines[-1].split("\t")[0])
    metrics = os.path.join(run, "metrics.jsonl")
    while True:
        try:
            used = cpu_seconds(pid)
        except (FileNotFoundError, ProcessLookupError):
            return
        with open(out, "a") as f:
            f.write(f"{base + used:.1f}\t{last_step(metrics)}\n")
        time.sleep(interval)


if __name__ == "__main__":
    main()

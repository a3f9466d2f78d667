#!/usr/bin/env python3
"""Dev P@1 of recipes run side by side, at equal CPU seconds (scripts/recipe_comparison.sh).

For each arm, reads DIR/ARM/metrics.jsonl (dev_p_at_1 per step) and DIR/ARM.cpu.tsv
(scripts/cpu_seconds.py: CPU seconds against the last logged step). Set-up CPU (before the
first step: data, tokenizer, teacher cache) is the last sample at step 0; a step's training
CPU is the first sample at or past it minus set-up, so it includes dev evaluation.
Prints one table per arm, then the dev P@1 each arm had reached at each budget.

Usage: recipe_comparison_table.py DIR ARM [ARM...]
"""
import json
import math
import os
import sys


def read_arm(folder, arm):
    samples = []
    path = os.path.join(folder, f"{arm}.cpu.tsv")
    if os.path.exists(path):
        for line in open(path):
            cpu, step = line.split()
            samples.append((float(cpu), int(step)))
    setup = max((c for c, s in samples if s == 0), default=0.0)
    dev = []
    metrics = os.path.join(folder, arm, "metrics.jsonl")
    if os.path.exists(metrics):
        for line in open(metrics):
            row = json.loads(line)
            if "dev_p_at_1" not in row:
                continue
            at = next((c for c, s in samples if s >= row["step"]), None)
            if at is not None:
                dev.append((row["step"], row["pairs_seen"], at - setup, row["dev_p_at_1"]))
    return setup, dev


def main():
    folder, arms = sys.argv[1], sys.argv[2:]
    runs = {arm: read_arm(folder, arm) for arm in arms}
    for arm, (setup, dev) in runs.items():
        print(f"## {arm} (set-up {setup:.0f} CPU s)\n")
        print("| step | pairs | training CPU s | dev P@1 |")
        print("| ---: | ---: | ---: | ---: |")
        for step, pairs, cpu, p in dev:
            print(f"| {step} | {pairs} | {cpu:.0f} | {p:.1f} |")
        print()
    longest = min((dev[-1][2] for _, dev in runs.values() if dev), default=0)
    if longest <= 0:
        return
    budgets = list(range(300, math.ceil(longest) + 1, 300))
    if not budgets or budgets[-1] != math.ceil(longest):
        budgets.append(math.ceil(longest))  # the budget every arm reached
    print("## dev P@1 reached within each budget of training CPU seconds (every 300, and the last one every arm reached)\n")
    print("| arm | " + " | ".join(str(b) for b in budgets) + " |")
    print("| --- |" + " ---: |" * len(budgets))
    for arm, (_, dev) in runs.items():
        cells = []
        for b in budgets:
            within = [p for _, _, cpu, p in dev if cpu <= b]
            cells.append(f"{within[-1]:.1f}" if within else "")
        print(f"| {arm} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

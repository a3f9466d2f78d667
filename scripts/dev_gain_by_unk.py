#!/usr/bin/env python3
"""Dev P@1 change between two `lase dev-score --json` outputs, grouped by how much of each
language's training text the first model's tokenizer reads as [UNK]
(`lase tokenizer coverage --json`): the mean change per group, own-language and pooled.

Usage: scripts/dev_gain_by_unk.py BEFORE.json AFTER.json COVERAGE.json
"""
import json
import sys

from unk_share import GROUPS, group_of

before, after, coverage = (json.load(open(p)) for p in sys.argv[1:4])
unk = {c["language"]: c["unknown_tokens"] / max(1, c["tokens"]) for c in coverage}
b = {l["language"]: l for l in before["languages"]}
a = {l["language"]: l for l in after["languages"]}
print("| tokenizer's [UNK] share | dev languages | own-language P@1 before -> after | pooled before -> after |")
print("| --- | ---: | --- | --- |")
for name, _ in GROUPS:
    langs = [k for k in b if k in a and group_of(unk.get(k, 0.0)) == name]
    if not langs:
        continue
    mean = lambda d, key: sum(d[k][key] for k in langs) / len(langs)
    print(f"| {name} | {len(langs)} | {mean(b, 'p_at_1'):.2f} -> {mean(a, 'p_at_1'):.2f} "
          f"| {mean(b, 'pooled_p_at_1'):.2f} -> {mean(a, 'pooled_p_at_1'):.2f} |")
missing = [k for k in b if k not in unk]
print(f"({len(missing)} dev languages without a coverage row, counted as < 1%: {' '.join(sorted(missing)[:12])})")

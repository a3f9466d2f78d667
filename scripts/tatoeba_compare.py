#!/usr/bin/env python3
"""Per-language Tatoeba P@1 (mean of both directions) between two `lase eval --suite tatoeba
--json` outputs: the named languages before -> after, how many rose and fell, how many sit
below 10, the lowest four after, and the three largest falls and rises.

Usage: scripts/tatoeba_compare.py BEFORE.json AFTER.json [LANG ...]
"""
import json
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
before, after = (json.load(open(p))["tatoeba"]["languages"] for p in sys.argv[1:3])
named = sys.argv[3:] or ["deu", "fra", "spa", "rus", "cmn", "jpn", "ara", "kor", "tha"]


def p_at_1(row):
    return 50 * (row["p_at_1_xy"] + row["p_at_1_yx"])


common = sorted(set(before) & set(after))
if len(common) < len(before) or len(common) < len(after):
    print(f"languages in only one of the two: {sorted(set(before) ^ set(after))}")
for lang in named:
    if lang in before and lang in after:
        print(f"{lang} {p_at_1(before[lang]):.1f} -> {p_at_1(after[lang]):.1f}")
# Changes below 1e-9 are float noise (the same answers, summed in another order): unchanged.
change = {l: p_at_1(after[l]) - p_at_1(before[l]) for l in common}
change = {l: (0.0 if abs(v) < 1e-9 else v) for l, v in change.items()}
up = sum(v > 0 for v in change.values())
down = sum(v < 0 for v in change.values())
print(f"{len(common)} languages: {up} rose, {down} fell, {len(common) - up - down} unchanged")
print("below 10: " + " -> ".join(str(sum(p_at_1(d[l]) < 10 for l in common)) for d in (before, after)))
lowest = sorted(common, key=lambda l: p_at_1(after[l]))[:4]
print("lowest after: " + ", ".join(f"{l} {p_at_1(after[l]):.1f}" for l in lowest))
moves = sorted(change.items(), key=lambda kv: kv[1])
falls = [(l, v) for l, v in moves if v < 0][:3]
rises = [(l, v) for l, v in moves[::-1] if v > 0][:3]
print("largest falls: " + (", ".join(f"{l} {v:+.1f}" for l, v in falls) or "none"))
print("largest rises: " + (", ".join(f"{l} {v:+.1f}" for l, v in rises) or "none"))

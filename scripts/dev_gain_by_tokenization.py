#!/usr/bin/env python3
"""Dev P@1 change between two `lase dev-score --json` outputs, grouped by how much a new
tokenizer shortens each language's training text against the old one (two
`lase tokenizer coverage --json` outputs of the same recipe: tokens per character, new / old).
Made for a vocabulary extension that leaves some scripts' text as it was (`pieces_from =
"non-latin"`): the unchanged group shows what the training alone did, the shortened groups
what the new pieces did beside it.

Usage: scripts/dev_gain_by_tokenization.py BEFORE.json AFTER.json OLD_COVERAGE.json NEW_COVERAGE.json
"""
import json
import sys

# (name, highest new/old ratio in the group), most shortened first; a ratio falls in the
# first group whose bound it does not exceed.
GROUPS = [("shortened by >= 30%", 0.70), ("shortened by 10-30%", 0.90),
          ("shortened by 1-10%", 0.99), ("unchanged (within 1%)", 1.01), ("longer by > 1%", float("inf"))]


def group_of(ratio):
    for name, high in GROUPS:
        if ratio <= high:
            return name
    raise ValueError(f"ratio {ratio!r}")


def per_character(path):
    rows = json.load(open(path))
    return {r["language"]: r["tokens"] / r["characters"] for r in rows if r["characters"]}


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    before, after = (json.load(open(p)) for p in argv[1:3])
    old, new = per_character(argv[3]), per_character(argv[4])
    b = {l["language"]: l for l in before["languages"]}
    a = {l["language"]: l for l in after["languages"]}
    langs = [k for k in b if k in a]
    missing = sorted(k for k in langs if k not in old or k not in new)
    groups = {}
    for k in langs:
        if k in old and k in new:
            groups.setdefault(group_of(new[k] / old[k]), []).append(k)
    print("| training text, new tokenizer vs old | dev languages | own-language P@1 before -> after | pooled before -> after | languages |")
    print("| --- | ---: | --- | --- | --- |")
    for name, _ in GROUPS:
        ks = groups.get(name, [])
        if not ks:
            continue
        mean = lambda d, key: sum(d[k][key] for k in ks) / len(ks)
        shown = " ".join(sorted(ks)[:12]) + (" ..." if len(ks) > 12 else "")
        print(f"| {name} | {len(ks)} | {mean(b, 'p_at_1'):.2f} -> {mean(a, 'p_at_1'):.2f} "
              f"| {mean(b, 'pooled_p_at_1'):.2f} -> {mean(a, 'pooled_p_at_1'):.2f} | {shown} |")
    print(f"({len(missing)} dev languages without a coverage row in both files, left out: {' '.join(missing[:12])})")


if __name__ == "__main__":
    main(sys.argv)

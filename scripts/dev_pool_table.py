#!/usr/bin/env python3
"""Dev-split scores of several models as one Markdown table (from `lase dev-score --json`).

    scripts/dev_pool_table.py LABEL=runs/dev-pooled/NAME.json ... [--langs deu,fra,...]

Columns: dev P@1 (both directions among each language's own dev pairs, as training logs
it) and pooled P@1 (each source sentence among all the split's target sentences), as
means over all the split's language codes, and over the codes whose ISO 639-3 part is in
--langs (default: the languages of FLORES-6, deu fra spa rus zho arb, with ara, the
macro-language code the Tatoeba training data uses for Arabic). Dev pairs only: the
language subset is the issue's goal languages, no test-set number is read.
"""
import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("models", nargs="+", help="LABEL=path/to/dev-score.json")
parser.add_argument("--langs", default="deu,fra,spa,rus,zho,arb,ara")
args = parser.parse_args()
wanted = set(args.langs.split(","))


def mean(rows, key):
    return sum(r[key] for r in rows) / len(rows) if rows else float("nan")


subset_note = None
print("| model | dev P@1, all codes | pooled, all codes | dev P@1, goal languages | pooled, goal languages |")
print("| --- | ---: | ---: | ---: | ---: |")
for item in args.models:
    label, path = item.split("=", 1)
    d = json.load(open(path))
    sub = [l for l in d["languages"] if l["language"].split("_")[0] in wanted]
    subset_note = (len(d["languages"]), sum(l["pairs"] for l in d["languages"]), d["pool_size"],
                   sorted(l["language"] for l in sub), sum(l["pairs"] for l in sub))
    print(f"| {label} | {d['p_at_1']:.2f} | {d['pooled_p_at_1']:.2f} | "
          f"{mean(sub, 'p_at_1'):.2f} | {mean(sub, 'pooled_p_at_1'):.2f} |")
n_codes, n_pairs, pool, codes, sub_pairs = subset_note
print(f"\nAll codes: {n_codes} language codes, {n_pairs} pairs, pool of {pool} distinct targets; "
      f"goal languages: {len(codes)} codes ({', '.join(codes)}), {sub_pairs} pairs.")

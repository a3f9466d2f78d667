#!/usr/bin/env python3
"""Where a model's Tatoeba-112 mean P@1 comes from, by how its tokenizer reads each
language's training text (`lase tokenizer coverage --json`; a Tatoeba code is matched to the
training languages of the same ISO 639-3 code, any script): languages grouped by [UNK] share,
the readable ones (< 1% [UNK]) in thirds by tokens per 100 characters, and what the mean
would be if every language with >= 1% [UNK] rose to the readable group's mean (the most a
vocabulary for unreadable scripts alone could add, if those languages then did as well as
the readable ones). A diagnosis of a test set's result, not a way to choose a model.

Usage: scripts/tatoeba_by_tokenizer.py EVAL_TATOEBA.json COVERAGE.json
"""
import collections
import json
import sys

from unk_share import GROUPS, READABLE, group_of

languages = json.load(open(sys.argv[1]))["tatoeba"]["languages"]
coverage = collections.defaultdict(lambda: [0, 0, 0])
for row in json.load(open(sys.argv[2])):
    c = coverage[row["language"].split("_")[0]]
    c[0] += row["unknown_tokens"]
    c[1] += row["tokens"]
    c[2] += row["characters"]

p_at_1 = {k: 50 * (v["p_at_1_xy"] + v["p_at_1_yx"]) for k, v in languages.items()}
n = len(p_at_1)
groups = collections.defaultdict(list)
for lang, p in p_at_1.items():
    if lang not in coverage:
        group = "no training text of that code"
    else:
        unk = coverage[lang][0] / max(1, coverage[lang][1])
        group = group_of(unk)
    groups[group].append(lang)

print(f"Tatoeba mean P@1 (both directions) over {n} languages: {sum(p_at_1.values()) / n:.2f}")
print("| tokenizer's [UNK] share on the training text | languages | mean P@1 | share of the 112-language mean |")
print("| --- | ---: | ---: | ---: |")
order = [name for name, _ in reversed(GROUPS)] + ["no training text of that code"]
for g in order:
    ls = groups.get(g, [])
    if ls:
        s = sum(p_at_1[l] for l in ls)
        print(f"| {g} | {len(ls)} | {s / len(ls):.2f} | {s / n:.2f} |")
print(f"(no training text of that code: {' '.join(sorted(groups[order[-1]]))})")

readable = groups[READABLE]
readable_mean = sum(p_at_1[l] for l in readable) / len(readable)
unreadable = [l for name, _ in GROUPS if name != READABLE for l in groups.get(name, [])]
bound = sum(max(p, readable_mean) if l in unreadable else p for l, p in p_at_1.items()) / n
print(f"if the {len(unreadable)} languages with >= 1% [UNK] rose to the readable mean {readable_mean:.2f}: {bound:.2f}")

by_fragmentation = sorted(readable, key=lambda l: coverage[l][1] / coverage[l][2])
third = len(by_fragmentation) // 3
print("| readable languages, by tokens per 100 characters | languages | tokens per 100 characters | mean P@1 |")
print("| --- | ---: | --- | ---: |")
for name, part in (("least split", by_fragmentation[:third]), ("middle", by_fragmentation[third:2 * third]),
                   ("most split", by_fragmentation[2 * third:])):
    lo, hi = (100 * coverage[l][1] / coverage[l][2] for l in (part[0], part[-1]))
    print(f"| {name} | {len(part)} | {lo:.1f}-{hi:.1f} | {sum(p_at_1[l] for l in part) / len(part):.2f} |")

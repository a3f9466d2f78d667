"""Run 14 against run 13 on the dev split only (never a test set), per language group: the
languages of the WMT news folder (../shared/data/parallel-news, 26 languages) against all the
others of the dev split. Reads the two `lase dev-score --json` files of this session.
    python3 bench/results/epyc-zen5-2026-11-27-s12/dev_by_group.py
"""
import json
import os

R = "bench/results/epyc-zen5-2026-11-27-s12"
news = {d.split("-")[0] for d in os.listdir("../shared/data/parallel-news") if d.endswith("-eng")}
runs = {"run 13": "devscore-lase-base.json", "run 14": "devscore-m-n2-n4.json"}
by = {}
for name, f in runs.items():
    j = json.load(open(f"{R}/{f}"))
    by[name] = {l["language"]: l for l in j["languages"]}
langs = sorted(set(by["run 13"]) & set(by["run 14"]))
for group, members in (("news languages", [l for l in langs if l.split("_")[0] in news]),
                       ("all other languages", [l for l in langs if l.split("_")[0] not in news])):
    for key in ("p_at_1", "pooled_p_at_1"):
        a = sum(by["run 13"][l][key] for l in members) / len(members)
        b = sum(by["run 14"][l][key] for l in members) / len(members)
        up = sum(by["run 14"][l][key] > by["run 13"][l][key] for l in members)
        down = sum(by["run 14"][l][key] < by["run 13"][l][key] for l in members)
        print(f"{group} ({len(members)}): {key} run 13 {a:.2f} -> run 14 {b:.2f} ({b - a:+.2f}; {up} up, {down} down)")

# Every candidate of rule-mse4.md on the news group (means over its language labels).
for tag in ("lase-base", "m-n2-n4", "interp-r13-m-0.3", "interp-r13-m-0.5", "r13mse4-model-f16"):
    j = json.load(open(f"{R}/devscore-{tag}.json"))
    g = [l for l in j["languages"] if l["language"].split("_")[0] in news]
    print(f"news languages, {tag}: p_at_1 {sum(l['p_at_1'] for l in g) / len(g):.2f}, "
          f"pooled_p_at_1 {sum(l['pooled_p_at_1'] for l in g) / len(g):.2f}")

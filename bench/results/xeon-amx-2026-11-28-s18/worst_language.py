"""The largest per-language drop of Tatoeba P@1 (mean of both directions) of one eval JSON
against another: python3 worst_language.py F32_JSON OTHER_JSON"""
import json
import sys


def per_language(path):
    langs = json.load(open(path))["tatoeba"]["languages"]
    return {k: 50 * (v["p_at_1_xy"] + v["p_at_1_yx"]) if "p_at_1_xy" in v else v["p_at_1"] for k, v in langs.items()}


base, other = per_language(sys.argv[1]), per_language(sys.argv[2])
lang, drop = min(((k, other[k] - base[k]) for k in base), key=lambda x: x[1])
print(f"worst language vs {sys.argv[1]}: {lang} {drop:+.2f}")

"""Builds the bundled mining demo (data/demo/) from TICO-19 (CC0, ../shared/data/tico19-test):
400 English-French translation pairs (lines 1-400) hidden among distractors (400 more English
and 400 more French sentences whose translations are absent), each side shuffled:
tico19-en-fr.{en,fr,gold.tsv}; and a disjoint calibration split built the same way from
lines 1201-2100: tico19-en-fr.calibration.{en,fr,gold.tsv}.
Run once: python3 scripts/make_demo.py
"""

import gzip
import random
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = root.parent / "shared/data/tico19-test/en-fr"
out = root / "data/demo"


def lines(name):
    with gzip.open(src / name, "rt", encoding="utf-8") as f:
        return [l.strip() for l in f]


en, fr = lines("tico19-test.en.gz"), lines("tico19-test.fr.gz")
assert len(en) == len(fr) == 2100
rng = random.Random(2019)
out.mkdir(parents=True, exist_ok=True)


def write(name, gold_lines, en_distractors, fr_distractors):
    gold = [(en[i], fr[i]) for i in gold_lines]
    en_side = [en[i] for i in gold_lines] + [en[i] for i in en_distractors]
    fr_side = [fr[i] for i in gold_lines] + [fr[i] for i in fr_distractors]
    rng.shuffle(en_side)
    rng.shuffle(fr_side)
    (out / f"{name}.en").write_text("\n".join(en_side) + "\n", encoding="utf-8")
    (out / f"{name}.fr").write_text("\n".join(fr_side) + "\n", encoding="utf-8")
    (out / f"{name}.gold.tsv").write_text("\n".join(f"{a}\t{b}" for a, b in gold) + "\n", encoding="utf-8")
    print(f"{name}: {len(en_side)} English, {len(fr_side)} French sentences, {len(gold)} gold pairs")


# The demo, and a disjoint calibration split built the same way (for choosing a margin
# threshold per model without looking at the demo's gold pairs).
write("tico19-en-fr", range(0, 400), range(400, 800), range(800, 1200))
write("tico19-en-fr.calibration", range(1200, 1500), range(1500, 1800), range(1800, 2100))

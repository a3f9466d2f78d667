#!/usr/bin/env python3
"""Applies a model-choice rule to `lase dev-score --json` files: the dev split only, never a
test set. One tool for the rules that pick the shipped models (bench/results/*/rule*.md),
so that a rule's arithmetic is written once.

A candidate's retrieval mean is the mean of dev-score's four columns: own-language P@1,
pooled P@1, and the same two over the non-pivot pairs (a file without non-pivot scores uses
its first two). It qualifies when
  - its retrieval mean >= the base's + --min-gain, and
  - with --max-agreement-loss X: its similarity agreement (dev-score --teacher) >= the
    base's - X, and
  - with --group-folder F: the mean over the dev labels of F's languages of
    (own + pooled) / 2 >= the base's. F is a Moses-style folder (../shared/data/parallel-news:
    subfolders named xxx-eng); a label counts when its part before "_" is one of them.
Of the qualifying candidates the one with the highest retrieval mean is chosen; with none,
the base stays. Every number is the JSON's, unrounded (the scripts of the rules before this
tool read dev-score's printed two-decimal columns, so their means can differ by up to
0.005). Prints one line per model and a last line "chosen: TAG" or
"chosen: none (BASE stays)"; a file's tag is its name without "devscore-" and ".json".

--bootstrap N adds, after the choice (it changes nothing in it), how far the dev labels
alone move each candidate's retrieval-mean difference from the base: the labels of each
part (pivot languages; non-pivot language pairs) are resampled with replacement N times,
the same draw for the base and the candidate (a paired bootstrap), each column recomputed
as the mean over the drawn labels (as dev-score computes it), and the 2.5th / 97.5th
percentiles of the difference printed with the share of draws above 0. It measures the
spread from which languages the dev split holds, not from training seeds.

    python3 scripts/dev_rule.py --base OUT/devscore-lase-base.json OUT/devscore-*.json \
        --min-gain 0.3 --max-agreement-loss 0.5 --group-folder ../shared/data/parallel-news
"""

import argparse
import json
import os
import sys


class RuleError(Exception):
    pass


def tag_of(path):
    name = os.path.basename(path)
    name = name[len("devscore-"):] if name.startswith("devscore-") else name
    return name[: -len(".json")] if name.endswith(".json") else name


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise RuleError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise RuleError(f"{path}: line {e.lineno}: not JSON: {e.msg}") from None


def group_languages(folder):
    try:
        names = os.listdir(folder)
    except OSError as e:
        raise RuleError(f"{folder}: cannot list: {e.strerror}") from None
    langs = {n.split("-")[0] for n in names if n.endswith("-eng") and os.path.isdir(os.path.join(folder, n))}
    if not langs:
        raise RuleError(f"{folder}: no xxx-eng subfolder, so no language to group")
    return langs


def field(scores, key, path):
    if key not in scores or not isinstance(scores[key], (int, float)):
        raise RuleError(f"{path}: no number '{key}' (not a `lase dev-score --json` file?)")
    return float(scores[key])


def measure(path, group):
    j = load(path)
    columns = [field(j, "p_at_1", path), field(j, "pooled_p_at_1", path)]
    if isinstance(j.get("non_pivot"), dict):
        columns += [field(j["non_pivot"], "p_at_1", path), field(j["non_pivot"], "pooled_p_at_1", path)]
    row = {"tag": tag_of(path), "columns": columns, "mean": sum(columns) / len(columns)}
    agreement = j.get("similarity_agreement")
    row["agreement"] = float(agreement["spearman"]) if isinstance(agreement, dict) else None
    if group is not None:
        labels = [l for l in j.get("languages", []) if l["language"].split("_")[0] in group]
        if not labels:
            raise RuleError(f"{path}: no dev label of the group's languages")
        row["group"] = sum(l["p_at_1"] + l["pooled_p_at_1"] for l in labels) / (2 * len(labels))
        row["group_labels"] = len(labels)
    return row


def describe(row):
    text = " ".join(f"{c:.2f}" for c in row["columns"]) + f" mean {row['mean']:.3f}"
    if row["agreement"] is not None:
        text += f" agreement {row['agreement']:.2f}"
    if "group" in row:
        text += f" group {row['group']:.3f} ({row['group_labels']} labels)"
    return text


def decide(base, candidates, min_gain, max_agreement_loss):
    """Returns (lines, chosen tag or None)."""
    need_mean = base["mean"] + min_gain
    conditions = [f"mean >= {need_mean:.3f}"]
    if max_agreement_loss is not None:
        if base["agreement"] is None:
            raise RuleError(f"{base['tag']}: no similarity agreement (score it with --teacher)")
        need_agreement = base["agreement"] - max_agreement_loss
        conditions.append(f"agreement >= {need_agreement:.2f}")
    if "group" in base:
        conditions.append(f"group >= {base['group']:.3f}")
    lines = [f"base {base['tag']}: {describe(base)}", "rule: " + " and ".join(conditions)]
    qualifying = []
    for row in candidates:
        ok = row["mean"] >= need_mean
        if max_agreement_loss is not None:
            if row["agreement"] is None:
                raise RuleError(f"{row['tag']}: no similarity agreement (score it with --teacher)")
            ok = ok and row["agreement"] >= need_agreement
        if "group" in base:
            ok = ok and row["group"] >= base["group"]
        lines.append(f"{row['tag']}: {describe(row)} {'qualifies' if ok else 'no'}")
        if ok:
            qualifying.append((row["mean"], row["tag"]))
    chosen = max(qualifying)[1] if qualifying else None
    lines.append(f"chosen: {chosen}" if chosen else f"chosen: none ({base['tag']} stays)")
    return lines, chosen


def label_scores(path, j):
    """Per part, {label: (own, pooled)}: the labels dev-score's columns average."""
    parts = [j.get("languages")]
    if isinstance(j.get("non_pivot"), dict):
        parts.append(j["non_pivot"].get("languages"))
    out = []
    for part in parts:
        if not isinstance(part, list) or not part:
            raise RuleError(f"{path}: no per-label scores to resample (--bootstrap)")
        out.append({l["language"]: (float(l["p_at_1"]), float(l["pooled_p_at_1"])) for l in part})
    return out


def bootstrap(base, base_path, cand_path, draws, seed):
    """(low, high, share above 0) of the candidate's retrieval mean minus the base's over
    `draws` paired resamples of the dev labels; `base` is label_scores of base_path."""
    import random

    cand = label_scores(cand_path, load(cand_path))
    if [sorted(b) for b in base] != [sorted(c) for c in cand]:
        raise RuleError(f"{cand_path}: its dev labels are not {base_path}'s (not the same dev split?)")
    rng = random.Random(seed)
    labels = [sorted(b) for b in base]
    diffs = []
    for _ in range(draws):
        columns = []
        for part, names in enumerate(labels):
            drawn = [rng.choice(names) for _ in names]
            for k in (0, 1):
                d = sum(cand[part][n][k] - base[part][n][k] for n in drawn) / len(drawn)
                columns.append(d)
        diffs.append(sum(columns) / len(columns))
    diffs.sort()
    low = diffs[int(0.025 * (draws - 1))]
    high = diffs[int(round(0.975 * (draws - 1)))]
    return low, high, sum(d > 0 for d in diffs) / draws


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the shipped model's dev-score JSON")
    p.add_argument("candidates", nargs="+", help="candidates' dev-score JSON (the base is skipped if listed)")
    p.add_argument("--min-gain", type=float, default=0.3)
    p.add_argument("--max-agreement-loss", type=float)
    p.add_argument("--group-folder")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N",
                   help="also print a paired bootstrap over the dev labels (N draws) of each difference")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    a = p.parse_args(argv)
    if a.bootstrap < 0:
        print("dev_rule.py: --bootstrap must be 0 (off) or a number of draws", file=sys.stderr)
        return 2
    try:
        group = group_languages(a.group_folder) if a.group_folder else None
        base = measure(a.base, group)
        same = os.path.realpath(a.base)
        paths = [c for c in a.candidates if os.path.realpath(c) != same]
        rows = [measure(c, group) for c in paths]
        if not rows:
            raise RuleError("no candidate besides the base")
        lines, _ = decide(base, rows, a.min_gain, a.max_agreement_loss)
        if a.bootstrap:
            base_labels = label_scores(a.base, load(a.base))
            for path, row in zip(paths, rows):
                low, high, above = bootstrap(base_labels, a.base, path, a.bootstrap, a.seed)
                lines.append(
                    f"bootstrap {row['tag']}: mean - base {row['mean'] - base['mean']:+.3f}, "
                    f"95% over the dev labels [{low:+.3f}, {high:+.3f}], above 0 in "
                    f"{100 * above:.1f}% of {a.bootstrap} draws"
                )
    except RuleError as e:
        print(f"dev_rule.py: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

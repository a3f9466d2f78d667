#!/usr/bin/env python3
"""A seeded, source-balanced sample of training sentences (never a test set's files).

Takes up to --per-file random non-empty lines from every text file of the training
corpora in ../shared/data (parallel-news, parallel-bible, parallel-seed, parallel-pud,
tatoeba-challenge-eng-train; `.labels` files skipped), shuffles them and writes the first
--count, one per line. Each file is one language of one corpus, so the sample is spread
over languages instead of following the corpora's sizes (the Bible alone holds 4.9M lines).
Used to fit `lase reduce-dim`'s PCA for the student's teacher (scripts/train_student.sh).

Usage: scripts/sample_training_sentences.py OUT [--count 20000] [--per-file 100] [--seed 1]
"""

import argparse
import glob
import gzip
import os
import random

SOURCES = [
    "parallel-news/*/*.gz",
    "parallel-bible/*.txt.gz",
    "parallel-seed/*.txt.gz",
    "parallel-pud/*.txt.gz",
    "tatoeba-challenge-eng-train/*/*.gz",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    files = sorted(
        f for pattern in SOURCES for f in glob.glob(os.path.join(args.data, pattern)) if ".labels." not in f
    )
    if not files:
        raise SystemExit(f"no training files under {args.data}")
    sample = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8", errors="strict") as f:
            lines = [line.strip() for line in f]
        lines = [line for line in lines if line]
        sample.extend(rng.sample(lines, min(args.per_file, len(lines))))
    rng.shuffle(sample)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for line in sample[: args.count]:
            f.write(line + "\n")
    os.replace(tmp, args.out)
    print(f"{min(args.count, len(sample))} sentences from {len(files)} files -> {args.out}")


if __name__ == "__main__":
    main()

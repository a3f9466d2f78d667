"""Padding of lase's forward passes, simulated: the share of a pass's [B, S] positions that
are padding when sentences are cut into passes as src/inference.rs's plan_batches does
(sorted longest first, at most BATCH sentences and TOKENS padded tokens), for `lase embed`
(the whole input sorted at once) and for `lase serve` (runs of RUN requests in arrival
order, each sorted and cut alone), and what share the unpadding rule (a pass with at least
4% padding runs unpadded, src/model/token_layout.rs) removes.

Usage: python3 bench/pass_padding.py [SENTENCES] [TOKENIZER_JSON]   (needs `pip install tokenizers`)
"""
import random
import sys

from tokenizers import Tokenizer

SENTENCES = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/flores200-devtest/devtest/eng_Latn.devtest"
TOKENIZER = sys.argv[2] if len(sys.argv) > 2 else "models/all-MiniLM-L6-v2/tokenizer.json"
RULE = 0.04


def plan(lengths, batch, tokens):
    passes, current = [], []
    for n in sorted(lengths, reverse=True):
        longest = current[0] if current else n
        if current and (len(current) >= batch or (len(current) + 1) * longest > tokens):
            passes.append(current)
            current = []
        current.append(n)
    if current:
        passes.append(current)
    return passes


def report(name, passes):
    positions = sum(len(p) * p[0] for p in passes)
    padding = [(len(p) * p[0] - sum(p), len(p) * p[0]) for p in passes]
    packed = [(pad, pos) for pad, pos in padding if pad / pos >= RULE]
    print(
        f"{name}: {len(passes)} passes, padding {sum(p for p, _ in padding) / positions:.3f} of positions; "
        f"the {RULE:.0%} rule unpads {len(packed)} passes, removing {sum(p for p, _ in packed) / positions:.3f}"
    )


tokenizer = Tokenizer.from_file(TOKENIZER)
tokenizer.no_truncation()
tokenizer.no_padding()
lines = [line.rstrip("\n") for line in open(SENTENCES, encoding="utf-8")]
lengths = [len(e.ids) for e in tokenizer.encode_batch(lines)]
print(f"{len(lengths)} sentences, {sum(lengths) / len(lengths):.1f} tokens on average, longest {max(lengths)}")
report("lase embed (whole input sorted, 32 sentences / 512 tokens)", plan(lengths, 32, 512))
random.seed(0)
arrivals = lengths * 5
random.shuffle(arrivals)
for run in (16, 48, 64):
    passes = [p for i in range(0, len(arrivals), run) for p in plan(arrivals[i : i + run], 32, 256)]
    report(f"lase serve (runs of {run} requests, 256-token passes)", passes)

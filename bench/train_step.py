"""One training step of the same model on the same batch: lase vs PyTorch, same script.

The model is EMS-small's shape (4 layers x 256, 4 heads, FFN 1024, dropout 0.1, mean
pooling) over all-MiniLM-L6-v2's WordPiece vocabulary (30,522); the batch is 128 real
translation pairs from ../shared/data (tokenised once here, both engines get the same
ids). One step = embed both sides in length-sorted chunks of 32 (what `lase train` does
in a direct pass; PyTorch gets the same chunking so the work is equal), bidirectional
InfoNCE (T 0.1) on cosine similarities, backward, clip the global gradient norm to 1,
AdamW (lr 3e-4, weight decay 1e-5, none on biases/LayerNorm).

    .venv/bin/python bench/train_step.py [--threads 2] [--pairs 128] [--steps 10]

lase runs as a subprocess (target/release/examples/train_step, built with
`cargo build --release --example train_step`), PyTorch in this process, both with the
same thread count and denormals flushed. Prints median seconds per step, pairs/s, peak
RSS, and the ratio PyTorch time / lase time (>= 1.0: lase is at least as fast).
"""

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared/data/tatoeba-challenge-eng-train"
TOKENIZER = ROOT / "models/all-MiniLM-L6-v2/tokenizer.json"
LANGS = ["deu", "rus", "fra", "spa", "zho", "jpn", "ara", "tur"]
SHAPE = dict(hidden=256, layers=4, heads=4, ffn=1024, max_tokens=64)
CHUNK = 32


def read_pairs(per_language):
    """`per_language` pairs of each language in LANGS, every 37th line of its file."""
    pairs = []
    for lang in LANGS:
        folder = DATA / "-".join(sorted([lang, "eng"]))
        src = next(folder.glob(f"*.{lang}.gz"))
        eng = next(folder.glob("*.eng.gz"))
        taken = 0
        with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(eng, "rt", encoding="utf-8") as g:
            for i, (a, b) in enumerate(zip(f, g)):
                if i % 37 == 0 and taken < per_language:
                    pairs.append((a.strip(), b.strip()))
                    taken += 1
    return pairs


def tokenize(texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.no_padding()
    tok.enable_truncation(SHAPE["max_tokens"])
    return [e.ids for e in tok.encode_batch(texts)]


def torch_step_times(batch, threads):
    import torch
    from transformers import BertConfig, BertModel

    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=SHAPE["hidden"],
        num_hidden_layers=SHAPE["layers"],
        num_attention_heads=SHAPE["heads"],
        intermediate_size=SHAPE["ffn"],
        max_position_embeddings=SHAPE["max_tokens"],
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    config._attn_implementation = "sdpa"
    model = BertModel(config, add_pooling_layer=False)
    model.train()
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 1e-5}, {"params": no_decay, "weight_decay": 0.0}],
        lr=batch["lr"],
        eps=1e-8,
    )

    def embed(rows):
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out = [None] * len(rows)
        parts, index = [], []
        for c in range(0, len(order), CHUNK):
            idx = order[c : c + CHUNK]
            width = max(len(rows[i]) for i in idx)
            ids = torch.zeros(len(idx), width, dtype=torch.long)
            mask = torch.zeros(len(idx), width, dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(rows[i])] = torch.tensor(rows[i])
                mask[r, : len(rows[i])] = 1
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(h.dtype)
            parts.append((h * m).sum(1) / m.sum(1).clamp(min=1e-9))
            index.extend(idx)
        stacked = torch.cat(parts)
        return stacked[torch.argsort(torch.tensor(index))]

    losses, times = [], []
    n = len(batch["x"])
    targets = torch.arange(n)
    for step in range(batch["warmup_steps"] + batch["timed_steps"]):
        start = time.perf_counter()
        x = torch.nn.functional.normalize(embed(batch["x"]), dim=-1)
        y = torch.nn.functional.normalize(embed(batch["y"]), dim=-1)
        logits = x @ y.T / batch["temperature"]
        loss = torch.nn.functional.cross_entropy(logits, targets) + torch.nn.functional.cross_entropy(logits.T, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if step >= batch["warmup_steps"]:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"step_seconds": times, "losses": losses, "peak_rss_mib": peak}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()

    pairs = read_pairs(args.pairs // len(LANGS))[: args.pairs]
    assert len(pairs) == args.pairs, f"read {len(pairs)} pairs"
    x = tokenize([a for a, _ in pairs])
    y = tokenize([b for _, b in pairs])
    batch = dict(SHAPE, warmup_steps=args.warmup, timed_steps=args.steps, temperature=0.1, lr=3e-4, x=x, y=y)
    tokens = sum(map(len, x)) + sum(map(len, y))
    print(f"batch: {len(pairs)} pairs, {tokens} tokens, longest {max(map(len, x + y))}; threads {args.threads}")

    binary = ROOT / "target/release/examples/train_step"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(batch, f)
        path = f.name
    env = dict(os.environ)
    libtorch = ROOT / "third_party/libtorch/lib"
    env["LD_LIBRARY_PATH"] = f"{libtorch}:{env.get('LD_LIBRARY_PATH', '')}"
    done = subprocess.run([str(binary), path, str(TOKENIZER), str(args.threads)], capture_output=True, text=True, env=env)
    os.unlink(path)
    if done.returncode != 0:
        sys.exit(done.stderr)
    lase = json.loads(done.stdout.strip().splitlines()[-1])
    torch_result = torch_step_times(batch, args.threads)

    rows = []
    for name, r in [("lase", lase), ("PyTorch", torch_result)]:
        median = statistics.median(r["step_seconds"])
        rows.append(median)
        print(
            f"{name:8s} median {median * 1000:7.1f} ms/step  {len(pairs) / median:6.1f} pairs/s  "
            f"peak RSS {r['peak_rss_mib']:6.0f} MiB  loss first {r['losses'][0]:.3f} last {r['losses'][-1]:.3f}"
        )
    print(f"ratio PyTorch/lase time: {rows[1] / rows[0]:.2f}")


if __name__ == "__main__":
    main()

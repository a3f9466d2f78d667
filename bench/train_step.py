"""One training step of the same model on the same batch: lase vs PyTorch, same script.

The model is EMS-small's shape (4 layers x 256, 4 heads, FFN 1024, dropout 0.1, mean
pooling) over all-MiniLM-L6-v2's WordPiece vocabulary (30,522); the batch is 128 real
translation pairs from ../shared/data (tokenised once here, both engines get the same
ids). One step = embed both sides in length-sorted chunks of 32 (--chunk; what `lase train`
does in a direct pass, schedule.padding_chunk; PyTorch gets the same chunking so the work
is equal), bidirectional
InfoNCE (T 0.1) on cosine similarities, backward, clip the global gradient norm to 1,
AdamW (lr 3e-4, weight decay 1e-5, none on biases/LayerNorm).

    .venv/bin/python bench/train_step.py [--threads 2] [--pairs 128] [--steps 10]

lase runs as a subprocess (target/release/examples/train_step, built with
`cargo build --release --example train_step`), PyTorch in this process, both with the
same thread count and denormals flushed. Prints median seconds per step, pairs/s, peak
RSS, and the ratio PyTorch time / lase time (>= 1.0: lase is at least as fast).

On a GPU (scripts/gpu_train.sh device-bench runs it there, from its bundle):

    python3 bench/train_step.py --device cuda --precision bf16 --threads 16 \
        --lase-bin BUNDLE/train_step --tokenizer BUNDLE/.../tokenizer.json \
        --pairs-file BUNDLE/.../train-step-pairs.tsv

--device cuda: both engines on the GPU, each step timed up to a device synchronisation;
lase loads the CUDA libtorch of this Python's torch (torch/lib on LD_LIBRARY_PATH; --libtorch
overrides). --precision bf16: PyTorch runs the forward and the loss under
torch.autocast(device, torch.bfloat16) over float32 weights; lase runs its own autocast
(`lase train --precision bf16`): bfloat16 matrix products over float32 weights.
--pairs-file reads the pairs from a TSV (source<TAB>English per line) instead of
../shared/data; --write-pairs FILE writes the default 128 pairs to such a file and exits
(Python's standard library only: scripts/gpu_train.sh pack uses it). --engines lase runs
lase alone (no PyTorch needed); without Python's `tokenizers` the lase binary tokenises
(the same library, so the same ids). --json-out FILE saves both engines' raw results.
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


def read_pairs_file(path):
    """Pairs from a TSV file: source<TAB>English per line."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 2:
                sys.exit(f"{path}:{n}: expected 2 tab-separated fields, found {len(fields)}")
            pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs


def tokenize(texts, tokenizer, binary, env):
    """Token ids truncated to max_tokens: Python's `tokenizers`, or the lase binary's
    `--tokenize` (the same Rust library) where that package is not installed."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
            json.dump(texts, f)
            path = f.name
        try:
            done = subprocess.run(
                [str(binary), "--tokenize", str(tokenizer), str(SHAPE["max_tokens"]), path],
                capture_output=True,
                text=True,
                env=env,
            )
        finally:
            os.unlink(path)
        if done.returncode != 0:
            sys.exit(done.stderr)
        return json.loads(done.stdout.strip().splitlines()[-1])["ids"]

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(SHAPE["max_tokens"])
    return [e.ids for e in tok.encode_batch(texts)]


def torch_step_times(batch, threads, device="cpu", precision="f32"):
    import torch
    from transformers import BertConfig, BertModel

    cuda = device.startswith("cuda")
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
    model = BertModel(config, add_pooling_layer=False).to(device)
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
        chunk = batch["chunk"]
        for c in range(0, len(order), chunk):
            idx = order[c : c + chunk]
            width = max(len(rows[i]) for i in idx)
            ids = torch.zeros(len(idx), width, dtype=torch.long)
            mask = torch.zeros(len(idx), width, dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(rows[i])] = torch.tensor(rows[i])
                mask[r, : len(rows[i])] = 1
            ids, mask = ids.to(device), mask.to(device)
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(h.dtype)
            parts.append((h * m).sum(1) / m.sum(1).clamp(min=1e-9))
            index.extend(idx)
        stacked = torch.cat(parts)
        return stacked[torch.argsort(torch.tensor(index, device=device))]

    losses, times = [], []
    n = len(batch["x"])
    targets = torch.arange(n, device=device)
    # bf16: autocast over the forward and the loss, float32 weights (as lase's --precision bf16).
    autocast = dict(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    for step in range(batch["warmup_steps"] + batch["timed_steps"]):
        start = time.perf_counter()
        with torch.autocast(**autocast):
            x = torch.nn.functional.normalize(embed(batch["x"]), dim=-1)
            y = torch.nn.functional.normalize(embed(batch["y"]), dim=-1)
            logits = x @ y.T / batch["temperature"]
            loss = torch.nn.functional.cross_entropy(logits, targets) + torch.nn.functional.cross_entropy(logits.T, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if cuda:
            torch.cuda.synchronize()
        if step >= batch["warmup_steps"]:
            times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"step_seconds": times, "losses": losses, "peak_rss_mib": peak, "device": device, "precision": precision}
    if cuda:
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        result["gpu"] = torch.cuda.get_device_name()
    result["torch"] = torch.__version__
    return result


def default_libtorch(device):
    """CPU: this checkout's libtorch (scripts/setup.sh); CUDA: this Python's torch/lib."""
    if device == "cpu":
        return ROOT / "third_party/libtorch/lib"
    import torch

    return Path(torch.__file__).parent / "lib"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=CHUNK, help="sentences per length-sorted forward (both engines)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N)")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--engines", default="lase,torch", help="lase,torch (default), lase or torch")
    ap.add_argument("--lase-bin", type=Path, default=ROOT / "target/release/examples/train_step")
    ap.add_argument("--libtorch", type=Path, help="folder of libtorch*.so for lase (default: see default_libtorch)")
    ap.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    ap.add_argument("--pairs-file", type=Path, help="source<TAB>English pairs (default: read ../shared/data)")
    ap.add_argument("--write-pairs", type=Path, help="write the pairs to this TSV file and exit")
    ap.add_argument("--json-out", type=Path, help="save both engines' raw results here")
    args = ap.parse_args()
    engines = [e for e in args.engines.split(",") if e]
    if not engines or set(engines) - {"lase", "torch"}:
        sys.exit(f"--engines {args.engines!r}: name lase, torch or both")

    if args.pairs_file:
        pairs = read_pairs_file(args.pairs_file)[: args.pairs]
    else:
        pairs = read_pairs(args.pairs // len(LANGS))[: args.pairs]
    assert len(pairs) == args.pairs, f"read {len(pairs)} pairs"
    if args.write_pairs:
        args.write_pairs.parent.mkdir(parents=True, exist_ok=True)
        with open(args.write_pairs, "w", encoding="utf-8") as f:
            for a, b in pairs:
                f.write(f"{a}\t{b}\n")
        print(f"wrote {len(pairs)} pairs to {args.write_pairs}")
        return

    env = dict(os.environ)
    if "lase" in engines or not _has_tokenizers():
        libtorch = args.libtorch or default_libtorch(args.device)
        env["LD_LIBRARY_PATH"] = f"{libtorch}:{env.get('LD_LIBRARY_PATH', '')}"
    x = tokenize([a for a, _ in pairs], args.tokenizer, args.lase_bin, env)
    y = tokenize([b for _, b in pairs], args.tokenizer, args.lase_bin, env)
    batch = dict(SHAPE, chunk=args.chunk, warmup_steps=args.warmup, timed_steps=args.steps, temperature=0.1, lr=3e-4, x=x, y=y)
    tokens = sum(map(len, x)) + sum(map(len, y))
    print(
        f"batch: {len(pairs)} pairs, {tokens} tokens, longest {max(map(len, x + y))}; threads {args.threads}; "
        f"device {args.device}, precision {args.precision}, chunk {args.chunk}",
        flush=True,
    )

    results = []
    if "lase" in engines:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(batch, f)
            path = f.name
        command = [str(args.lase_bin), path, str(args.tokenizer), str(args.threads), "--device", args.device, "--precision", args.precision]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        os.unlink(path)
        if done.returncode != 0:
            sys.exit(done.stderr)
        results.append(("lase", json.loads(done.stdout.strip().splitlines()[-1])))
    if "torch" in engines:
        results.append(("PyTorch", torch_step_times(batch, args.threads, args.device, args.precision)))
    if args.json_out:
        args.json_out.write_text(json.dumps({name: r for name, r in results}) + "\n")

    rows = []
    for name, r in results:
        median = statistics.median(r["step_seconds"])
        rows.append(median)
        gpu = f"  peak GPU {r['peak_gpu_mib']:6.0f} MiB" if "peak_gpu_mib" in r else ""
        print(
            f"{name:8s} median {median * 1000:7.1f} ms/step  {len(pairs) / median:6.1f} pairs/s  "
            f"peak RSS {r['peak_rss_mib']:6.0f} MiB  loss first {r['losses'][0]:.3f} last {r['losses'][-1]:.3f}{gpu}"
        )
    if len(rows) == 2:
        print(f"ratio PyTorch/lase time: {rows[1] / rows[0]:.2f}")


def _has_tokenizers():
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()

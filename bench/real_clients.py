"""Drives `lase serve` with the real client libraries users call it with, and checks that
what they get back equals `lase embed` on the same sentences (issue 16, item 6).

- openai (the official Python client): `client.embeddings.create` against /v1/embeddings,
  with the client's default encoding (it asks for base64 and decodes it), with "float", and
  with an explicit "base64" (then the client returns the strings; decoded here);
- huggingface_hub: `InferenceClient(model=URL).feature_extraction(text)`, which posts to the
  server's root route as it does to text-embeddings-inference.

    scripts/real_clients.sh        # makes .venv-clients (openai, huggingface_hub, numpy), runs this

Exits non-zero if a client fails or a vector differs from `lase embed --normalize` by a
cosine below 0.99999. Prints each client's version and the worst cosine.
"""

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = [
    "The dog is red.",
    "Der Hund ist rot.",
    "Le chien est rouge.",
    "Собака красная.",
    "狗是红色的。",
    "A sentence long enough to take more than one word piece: hyperparameterisation, 2026.",
]


def wait_for(url, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"{url} did not answer within {seconds} s")


def cosines(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lase", default=str(ROOT / "target/release/lase"))
    ap.add_argument("--model", default=str(ROOT / "models/lase-base"))
    ap.add_argument("--port", type=int, default=18089)
    args = ap.parse_args()
    import huggingface_hub
    import openai

    tmp = Path(tempfile.mkdtemp(prefix="lase-clients-"))
    (tmp / "s.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    # Both sides f32: auto may pick bf16, whose rows depend slightly on the batch they share.
    subprocess.run([args.lase, "embed", "--quiet", "--precision", "f32", "--normalize", "--model", args.model, "--input", str(tmp / "s.txt"),
                    "--output", str(tmp / "ref.npy")], check=True)
    ref = np.load(tmp / "ref.npy")
    server = subprocess.Popen([args.lase, "serve", "--precision", "f32", "--model", args.model, "--port", str(args.port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    failures = []
    try:
        base = f"http://127.0.0.1:{args.port}"
        wait_for(base + "/health")
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
        results = {}
        # The client's default asks for base64 and decodes it itself; an explicit
        # encoding_format="base64" hands the caller the base64 strings (little-endian float32).
        r = client.embeddings.create(model="lase", input=SENTENCES)
        results[f"openai {openai.__version__} embeddings.create, default encoding"] = [d.embedding for d in r.data]
        r = client.embeddings.create(model="lase", input=SENTENCES, encoding_format="float")
        results[f"openai {openai.__version__} embeddings.create, encoding_format float"] = [d.embedding for d in r.data]
        r = client.embeddings.create(model="lase", input=SENTENCES, encoding_format="base64")
        results[f"openai {openai.__version__} embeddings.create, encoding_format base64 (decoded here)"] = [
            np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in r.data]
        hf = huggingface_hub.InferenceClient(model=base)
        results[f"huggingface_hub {huggingface_hub.__version__} InferenceClient.feature_extraction"] = [
            np.asarray(hf.feature_extraction(s)).reshape(-1) for s in SENTENCES]
        for name, vectors in results.items():
            got = np.asarray(vectors, dtype=np.float64)
            if got.shape != ref.shape:
                failures.append(f"{name}: shape {got.shape}, lase embed {ref.shape}")
                print(f"{name}: FAILED, shape {got.shape} vs {ref.shape}")
                continue
            c = cosines(got, ref)
            diff = np.abs(got - ref).max()
            ok = c.min() >= 0.99999
            print(f"{name}: {len(got)} vectors of {got.shape[1]}, worst cosine to lase embed {c.min():.7f}, "
                  f"max abs difference {diff:.2e}: {'ok' if ok else 'FAILED'}")
            if not ok:
                failures.append(name)
    finally:
        server.terminate()
        server.wait(timeout=30)
    if failures:
        sys.exit("failed: " + "; ".join(failures))


if __name__ == "__main__":
    main()

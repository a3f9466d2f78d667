"""Encode speed: lase vs Python sentence-transformers, same model, sentences, threads.
On CPU the peers include sentence-transformers' own ONNX Runtime backend, f32 and dynamic
int8 (its quantised export for this CPU's widest kernels), and OpenVINO where optimum-intel
is installed (--no-peers: the PyTorch backend only). lase runs f32 (its default), int8
(--precision int8: int8 linear layers, activations quantised per token) and, on CPUs with AVX512-BF16 or AMX, bf16.

4,000 real English sentences (FLORES-200 devtest eng, TICO-19 test English, then
Tatoeba training English to fill), all-MiniLM-L6-v2, 2 CPU threads. Each engine runs in
its own child process (so each peak RSS is its own), timed around encoding only (model
load excluded), best of --repeats runs. Prints sentences/s, the ratio lase / ST, peak RSS,
and the worst cosine between lase's and ST's vectors.

    .venv/bin/python bench/embed_speed.py            # after scripts/setup.sh + cargo build --release

On a GPU machine (scripts/gpu_train.sh device-bench runs it there): `--device cuda
--sentences FILE --lase BIN`; lase loads that machine's torch/lib (LD_LIBRARY_PATH), both
engines also run in bfloat16 (ST: the model cast to bfloat16; lase: --precision bf16), and
lase's CUDA vectors are compared with its own CPU vectors (GPU/CPU parity, f32).
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def cosines(a, b):
    """Row-wise cosine between two [N, d] matrices, as "worst cosine W, mean M"."""
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return f"worst cosine {cos.min():.6f}, mean {cos.mean():.6f}"


def sentences(n):
    out = (DATA / "flores200-devtest/devtest/eng_Latn.devtest").read_text(encoding="utf-8").splitlines()
    with gzip.open(DATA / "tico19-test/en-fr/tico19-test.en.gz", "rt", encoding="utf-8") as f:
        out += f.read().splitlines()
    with gzip.open(DATA / "tatoeba-challenge-eng-train/deu-eng/tatoeba-test-v2021-08-07.eng.gz", "rt", encoding="utf-8") as f:
        out += f.read().splitlines()
    out = [s for s in out if s.strip()]
    return out[:n]


ST_CHILD = r"""
import json, sys, time, numpy as np, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(int(sys.argv[4]))
model = SentenceTransformer(sys.argv[1], device=sys.argv[6])
# The model's own weights may be stored in float16 (lase export --dtype f16): run the
# precision asked for, not the file's.
model = model.to(torch.bfloat16 if sys.argv[7] == "bf16" else torch.float32)
if sys.argv[7] == "int8":
    # PyTorch's own dynamic int8 (the FBGEMM kernels lase's int8 calls), its defaults:
    # per-tensor int8 weights, 7-bit activations (reduce_range on x86).
    model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
sents = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
model.encode(sents[:64], batch_size=int(sys.argv[3]))  # warm-up
best = None
for _ in range(int(sys.argv[8])):  # repeats in this process: one import and load, not one per repeat
    t = time.perf_counter()
    v = model.encode(sents, batch_size=int(sys.argv[3]), convert_to_tensor=True).float().cpu().numpy()
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
np.save(sys.argv[5], v.astype(np.float32))
print(json.dumps({"seconds": best, "torch": torch.__version__}))
"""


# sentence-transformers' own fast CPU backends (its efficiency docs): ONNX Runtime, f32
# and dynamically quantised int8 (export_dynamic_quantized_onnx_model, the kernel config
# this CPU supports), and OpenVINO f32. Exported once into a copy of the model folder.
EXPORT_CHILD = r"""
import json, shutil, sys
from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model
src, dst, config = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.copytree(src, dst)
onnx = SentenceTransformer(dst, backend="onnx", device="cpu")
onnx.save_pretrained(dst)
export_dynamic_quantized_onnx_model(onnx, config, dst)
if len(sys.argv) > 4 and sys.argv[4] == "no-openvino":
    print(json.dumps({"openvino": "exported by --openvino-python"}))
    sys.exit(0)
try:
    import optimum.intel  # sentence-transformers' OpenVINO backend needs optimum-intel
except ImportError as e:
    print(json.dumps({"openvino": f"not installed ({e})"}))
    sys.exit(0)
ov = SentenceTransformer(dst, backend="openvino", device="cpu")
ov.save_pretrained(dst)
print(json.dumps({"openvino": "ok"}))
"""

# OpenVINO's export in another Python environment (--openvino-python: optimum-intel wants
# other torch/optimum versions than optimum-onnx), into a copy of its own (a newer
# sentence-transformers rewrites the folder's files in a format the older cannot read).
OPENVINO_EXPORT_CHILD = r"""
import json, shutil, sys
from sentence_transformers import SentenceTransformer
shutil.copytree(sys.argv[1], sys.argv[2])
ov = SentenceTransformer(sys.argv[2], backend="openvino", device="cpu")
ov.save_pretrained(sys.argv[2])
print(json.dumps({"openvino": "ok"}))
"""

PEER_CHILD = r"""
import json, sys, time, numpy as np
from sentence_transformers import SentenceTransformer
path, text, batch, threads, out, backend, file_name, repeats = sys.argv[1:9]
threads = int(threads)
if backend == "onnx":
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    kwargs = {"file_name": file_name, "session_options": so, "provider": "CPUExecutionProvider"}
    version = "onnxruntime " + ort.__version__
else:
    import openvino
    kwargs = {"file_name": file_name, "ov_config": {"INFERENCE_NUM_THREADS": str(threads)}}
    # OpenVINO's CPU plugin computes in bf16 by default on CPUs with AMX or AVX512-BF16:
    # say which precision it ran.
    hint = openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT")
    version = f"openvino {openvino.__version__}, inference precision {hint}"
model = SentenceTransformer(path, backend=backend, device="cpu", model_kwargs=kwargs)
sents = open(text, encoding="utf-8").read().split("\n")[:-1]
model.encode(sents[:64], batch_size=int(batch))  # warm-up
best = None
for _ in range(int(repeats)):
    t = time.perf_counter()
    v = np.asarray(model.encode(sents, batch_size=int(batch)), dtype=np.float32)
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
np.save(out, v)
print(json.dumps({"seconds": best, "version": version}))
"""


def onnx_int8_config():
    """The ONNX Runtime quantisation config for this CPU's widest int8 instructions."""
    flags = open("/proc/cpuinfo").read().split()
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags:
        return "avx512"
    return "avx2"


def run_child(cmd, env=None):
    """Runs a child, returns (stdout, peak RSS in MiB) using wait4's rusage."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    out, err = p.communicate()
    # communicate() reaped the child; rusage is taken from RUSAGE_CHILDREN deltas instead.
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{err}")
    return out, err


def run_child_rss(cmd, env=None):
    """Runs a child once: (stdout, its peak RSS in MiB, from wait4's rusage)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out_file, tempfile.TemporaryFile("w+", encoding="utf-8") as err_file:
        pid = os.fork()
        if pid == 0:
            os.dup2(out_file.fileno(), 1)
            os.dup2(err_file.fileno(), 2)
            try:
                os.execvpe(cmd[0], cmd, env or os.environ)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        out_file.seek(0)
        err_file.seek(0)
        if status != 0:
            sys.exit(f"{cmd[0]} failed ({status}):\n{err_file.read()}")
        return out_file.read(), usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models/all-MiniLM-L6-v2"))
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lase", default=str(ROOT / "target/release/lase"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-peers", action="store_true", help="sentence-transformers' PyTorch backend only (no ONNX/OpenVINO)")
    ap.add_argument("--openvino-python", help="a Python with sentence-transformers + optimum-intel[openvino], for the OpenVINO peer")
    ap.add_argument("--sentences", help="one sentence per line (default: FLORES/TICO/Tatoeba English under ../shared/data)")
    args = ap.parse_args()

    if args.sentences:
        sents = [s for s in open(args.sentences, encoding="utf-8").read().splitlines() if s.strip()][: args.n]
    else:
        sents = sentences(args.n)
    gpu = args.device != "cpu"
    tmp = Path(tempfile.mkdtemp(prefix="lase-bench-"))
    text = tmp / "sentences.txt"
    text.write_text("\n".join(sents) + "\n", encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1")
    if gpu:
        import torch
        lib = str(Path(torch.__file__).parent / "lib")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")

    results = []

    def st(batch, precision="f32"):
        best, info = None, None
        out_npy = tmp / ("st.npy" if precision == "f32" else f"st-{precision}.npy")
        child = [sys.executable, "-c", ST_CHILD, args.model, str(text), str(batch), str(args.threads), str(out_npy), args.device,
                 precision, str(args.repeats)]
        # One child times all repeats (Python + torch import once); peak RSS from that same child.
        out, rss = run_child_rss(child, env)
        info = json.loads(out.strip().splitlines()[-1])
        best = info["seconds"]
        results.append({"engine": f"sentence-transformers (torch {info['torch']})", "batch": batch, "precision": precision,
                        "sent_per_s": len(sents) / best, "peak_rss_mib": rss})
        if gpu:
            print("measured", json.dumps(results[-1]), flush=True)

    def lase(batch, precision, label="lase", extra=(), device=None, extra_env=None, out_name=None):
        run_env = dict(env, **(extra_env or {}))
        cmd = [args.lase, "--device", device or args.device, "--threads", str(args.threads), "embed", "--quiet", "--model", args.model,
               "--input", str(text), "--output", str(tmp / f"{out_name or 'lase-' + precision}.npy"), "--batch-size", str(batch),
               "--precision", precision, *extra]
        best, rss = None, 0.0
        for _ in range(args.repeats):
            out, run_rss = run_child_rss(cmd, run_env)
            rss = max(rss, run_rss)
            # "wrote N x d float32 to ... (N sentences, T tokens, S s, R sentences/s, ...)"
            secs = float(out.split(" tokens, ")[1].split(" s,")[0])
            tokens = int(out.split(" sentences, ")[1].split(" tokens")[0])
            best = secs if best is None else min(best, secs)
        results.append({"engine": label, "batch": batch, "precision": precision,
                        "sent_per_s": len(sents) / best, "peak_rss_mib": rss, "tokens": tokens})
        if gpu:
            print("measured", json.dumps(results[-1]), flush=True)

    if gpu:
        # lase first, and each result printed as it comes (flushed): a run cut off by a
        # time limit still leaves the parity and the numbers measured so far.
        lase(32, "f32")
        # GPU/CPU parity of lase itself (f32): the CPU run is timed too but not compared.
        cpu_cmd = [args.lase, "--device", "cpu", "embed", "--quiet", "--precision", "f32", "--model", args.model,
                   "--input", str(text), "--output", str(tmp / "lase-cpu.npy")]
        run_child(cpu_cmd, env)
        a, c = np.load(tmp / "lase-f32.npy"), np.load(tmp / "lase-cpu.npy")
        print(f"lase {args.device} f32 vs lase cpu f32: {cosines(a, c)}", flush=True)
        for b in (128, 512):
            lase(b, "f32", f"lase, batch {b}", ["--max-batch-tokens", "1000000"], out_name=f"lase-f32-batch{b}")
        lase(128, "bf16", "lase bf16, batch 128", ["--max-batch-tokens", "1000000"])
        # bf16 parity on the GPU against f32 at the same batch, printed now (the
        # sentence-transformers runs may be cut off).
        a, c = np.load(tmp / "lase-bf16.npy"), np.load(tmp / "lase-f32-batch128.npy")
        print(f"lase {args.device} bf16 vs lase {args.device} f32, both batch 128: {cosines(a, c)}", flush=True)
        # Ablation: cuDNN's attention allowed (lase turns it off on GPUs, src/runtime.rs:
        # it builds a plan for each new batch shape; the suspected cause of bf16's slowdown).
        lase(128, "bf16", "lase bf16, batch 128, cuDNN attention on", ["--max-batch-tokens", "1000000"],
             extra_env={"LASE_CUDNN_SDPA": "on"}, out_name="lase-bf16-cudnn")
        # Batch 128 first: the setting lase's rows above compare bf16 at, the pair a time
        # limit should keep.
        for b in (128, 32, 512):
            st(b)
            st(b, "bf16")
        st_best = max(r["sent_per_s"] for r in results if r["engine"].startswith("sentence-transformers"))
        print(f"{len(sents)} sentences, device {args.device}, best of {args.repeats}")
        print(f"{'engine':45} {'batch':>5} {'prec':>5} {'sent/s':>8} {'vs best ST':>10} {'peak RSS MiB':>12}")
        for r in results:
            print(f"{r['engine']:45} {r['batch']:>5} {r['precision']:>5} {r['sent_per_s']:>8.1f} {r['sent_per_s'] / st_best:>9.2f}x {r['peak_rss_mib']:>12.0f}")
        ref = np.load(tmp / "st.npy")
        for name in ("lase-f32", "lase-bf16", "st-bf16"):
            v = np.load(tmp / f"{name}.npy")
            print(f"{name} vs sentence-transformers f32: {cosines(v, ref)}")
        return

    for b in (16, 32, 128):
        st(b)
    st(32, "int8")
    fast_bf16 = any(f in open("/proc/cpuinfo").read().split() for f in ("avx512_bf16", "amx_bf16"))
    if fast_bf16:
        # Like with like for lase's bf16: sentence-transformers with the model cast to bfloat16.
        st(32, "bf16")
    peers = []
    if not args.no_peers:
        peer_dir = tmp / "peer-model"
        int8 = onnx_int8_config()
        exported, _ = run_child([sys.executable, "-c", EXPORT_CHILD, args.model, str(peer_dir), int8,
                                 "no-openvino" if args.openvino_python else "openvino"], env)
        ov_dir = peer_dir
        if args.openvino_python:
            ov_dir = tmp / "peer-model-openvino"
            exported, _ = run_child([args.openvino_python, "-c", OPENVINO_EXPORT_CHILD, args.model, str(ov_dir)], env)
        peers = [("onnx", "onnx/model.onnx", "f32", "ONNX Runtime"),
                 # avx2 exports unsigned int8 (model_quint8_avx2.onnx), avx512 signed (qint8)
                 ("onnx", next((peer_dir / "onnx").glob(f"model_q*int8_{int8}.onnx")).relative_to(peer_dir).as_posix(),
                  "int8", f"ONNX Runtime, dynamic int8 ({int8})")]
        openvino = json.loads(exported.strip().splitlines()[-1])["openvino"]
        if openvino == "ok":
            peers.append(("openvino", "openvino/openvino_model.xml", "f32", "OpenVINO"))
        else:
            print(f"OpenVINO not measured: optimum-intel {openvino}")
        for backend, file_name, precision, label in peers:
            out_npy = tmp / f"peer-{backend}-{precision}.npy"
            python = args.openvino_python if backend == "openvino" and args.openvino_python else sys.executable
            folder = ov_dir if backend == "openvino" else peer_dir
            for b in (32, 128):
                child = [python, "-c", PEER_CHILD, str(folder), str(text), str(b), str(args.threads), str(out_npy),
                         backend, file_name, str(args.repeats)]
                out, rss = run_child_rss(child, env)
                info = json.loads(out.strip().splitlines()[-1])
                results.append({"engine": f"sentence-transformers {label} ({info['version']})", "batch": b,
                                "precision": precision, "sent_per_s": len(sents) / info["seconds"], "peak_rss_mib": rss,
                                "vectors": out_npy})
    # lase's defaults: <= 32 sentences and <= 512 padded tokens a batch, one worker per thread.
    lase(32, "f32")
    # Ablation: one batch at a time on all threads, sentence-count batches only.
    for b in (32, 128):
        lase(b, "f32", "lase, 1 worker, no token budget", ["--workers", "1", "--max-batch-tokens", "1000000"])
    # int8 linear layers (per-token activation scales, libtorch's _int_mm), like with like against ONNX int8.
    lase(32, "int8")
    # Ablation: the activation and residual sum as separate libtorch operations after each
    # int8 product (lase before its fused epilogue, 2026-11-26).
    lase(32, "int8", "lase, int8 epilogue separate", extra_env={"LASE_INT8_EPILOGUE": "separate"},
         out_name="lase-int8-separate")
    if fast_bf16:
        lase(32, "bf16")
    else:
        print("bf16 not benchmarked: this CPU has neither AVX512-BF16 nor AMX (libtorch falls back to slow kernels)")

    st_best = max(r["sent_per_s"] for r in results
                  if r["engine"].startswith("sentence-transformers (") and r["precision"] == "f32")
    ref = np.load(tmp / "st.npy")
    tokens = next(r["tokens"] for r in results if "tokens" in r)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{len(sents)} sentences, {tokens / len(sents):.1f} tokens/sentence, {args.threads} threads, best of {args.repeats}; CPU {cpu}")
    print(f"{'engine':62} {'batch':>5} {'prec':>5} {'sent/s':>8} {'vs best ST':>10} {'peak RSS MiB':>12}")
    for r in results:
        print(f"{r['engine']:62} {r['batch']:>5} {r['precision']:>5} {r['sent_per_s']:>8.1f} {r['sent_per_s'] / st_best:>9.2f}x {r['peak_rss_mib']:>12.0f}")
    python_best = max((r for r in results if r["engine"].startswith("sentence-transformers")), key=lambda r: r["sent_per_s"])
    lase_best = max((r for r in results if r["engine"].startswith("lase")), key=lambda r: r["sent_per_s"])
    print(f"fastest Python peer: {python_best['engine']} {python_best['precision']}, batch {python_best['batch']}, "
          f"{python_best['sent_per_s']:.1f} sentences/s; lase's fastest ({lase_best['engine']} {lase_best['precision']}, "
          f"batch {lase_best['batch']}) {lase_best['sent_per_s']:.1f} = {lase_best['sent_per_s'] / python_best['sent_per_s']:.2f}x")
    python_int8 = [r for r in results if r["precision"] == "int8" and r["engine"].startswith("sentence-transformers")]
    lase_int8 = [r for r in results if r["engine"] == "lase" and r["precision"] == "int8"]
    if python_int8 and lase_int8:
        best_int8_peer = max(python_int8, key=lambda r: r["sent_per_s"])
        print(f"lase int8 {lase_int8[0]['sent_per_s']:.1f} sentences/s = {lase_int8[0]['sent_per_s'] / best_int8_peer['sent_per_s']:.2f}x "
              f"the fastest Python int8 peer ({best_int8_peer['engine']}, batch {best_int8_peer['batch']}, {best_int8_peer['sent_per_s']:.1f})")
    st_bf16 = [r for r in results if r["precision"] == "bf16" and r["engine"].startswith("sentence-transformers")]
    lase_bf16 = [r for r in results if r["engine"] == "lase" and r["precision"] == "bf16"]
    if st_bf16 and lase_bf16:
        print(f"lase bf16 {lase_bf16[0]['sent_per_s']:.1f} sentences/s = {lase_bf16[0]['sent_per_s'] / st_bf16[0]['sent_per_s']:.2f}x "
              f"sentence-transformers bf16 (batch {st_bf16[0]['batch']}, {st_bf16[0]['sent_per_s']:.1f})")
        v = np.load(tmp / "st-bf16.npy")
        print(f"sentence-transformers bf16 vs sentence-transformers f32: {cosines(v, ref)}")
    for precision in ("f32", "int8", "bf16") if fast_bf16 else ("f32", "int8"):
        v = np.load(tmp / f"lase-{precision}.npy")
        print(f"lase {precision} vs sentence-transformers: {cosines(v, ref)}")
    v = np.load(tmp / "lase-int8-separate.npy")
    print(f"lase int8, epilogue separate, vs sentence-transformers: {cosines(v, ref)}")
    v = np.load(tmp / "st-int8.npy")
    print(f"sentence-transformers (PyTorch dynamic int8) vs sentence-transformers f32: {cosines(v, ref)}")
    seen = set()
    for r in results:
        if "vectors" in r and r["vectors"] not in seen:
            seen.add(r["vectors"])
            v = np.load(r["vectors"])
            print(f"{r['engine']} {r['precision']} vs sentence-transformers f32: {cosines(v, ref)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tessera's cuda backend next to PyTorch eager and onnxruntime on the same GPU.

Exports torchvision ResNet-50 and a small BERT (random weights, transformers' BertModel: 4
layers, hidden 256, 4 heads, sequence 128) to ONNX, then times each the same way:

- PyTorch eager on cuda: CUDA events around each call, inputs already on the GPU ("device"),
  and also with the host copies in ("host": input up, output back, like `tessera bench`);
- onnxruntime: CUDAExecutionProvider when this onnxruntime has it, else CPUExecutionProvider
  (said in the table), wall clock around `run` (host inputs and outputs);
- tessera: `tessera bench --backend cuda --json` (wall clock around a run with host inputs and
  outputs, synchronised), and `--backend cpu` for scale.

Every engine gets warm-up runs first; the medians of --runs timed runs are reported, with the
ratio tessera-cuda / PyTorch (host). Writes a markdown table and a JSON file.

Usage: bench/cuda_vs_torch.py --tessera target/release/tessera --out DIR [--runs 50]
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def export_models(out):
    import torch
    import torchvision

    models = {}
    resnet = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    models["resnet50"] = (resnet, (x,), ["x"])
    try:
        from transformers import BertConfig, BertModel

        config = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                            intermediate_size=1024, vocab_size=30522)
        bert = BertModel(config).eval()
        ids = torch.randint(0, config.vocab_size, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        models["bert_small"] = (bert, (ids, mask), ["input_ids", "attention_mask"])
    except Exception as e:  # transformers missing: ResNet-50 alone
        print(f"BERT skipped: {e}", file=sys.stderr)
    paths = {}
    for name, (model, inputs, names) in models.items():
        path = out / f"{name}.onnx"
        with torch.no_grad():
            try:
                torch.onnx.export(model, inputs, str(path), input_names=names, opset_version=17,
                                  dynamo=False)
            except Exception as e:
                print(f"{name}: TorchScript export failed ({e}); trying the dynamo exporter",
                      file=sys.stderr)
                torch.onnx.export(model, inputs, str(path), input_names=names, dynamo=True,
                                  external_data=False)
        paths[name] = path
    return models, paths


def time_torch(model, inputs, warmup, runs):
    import torch

    model = model.cuda()
    dev = [t.cuda() for t in inputs]
    device_ms, host_ms = [], []
    with torch.no_grad():
        for _ in range(warmup):
            model(*dev)
        torch.cuda.synchronize()
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*dev)
            end.record()
            end.synchronize()
            device_ms.append(start.elapsed_time(end))
        for _ in range(runs):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(*[t.cuda() for t in inputs])
            first = out[0] if isinstance(out, (tuple, list)) else getattr(out, "last_hidden_state", out)
            first.cpu()
            host_ms.append((time.perf_counter() - t0) * 1e3)
    model.cpu()
    return statistics.median(device_ms), statistics.median(host_ms)


def time_onnxruntime(path, inputs, names, warmup, runs):
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "not installed"
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider")
                 if p in ort.get_available_providers()]
    session = ort.InferenceSession(str(path), providers=providers)
    used = session.get_providers()[0]
    feed = {n: t.numpy() for n, t in zip(names, inputs)}
    for _ in range(warmup):
        session.run(None, feed)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        session.run(None, feed)
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), used


def time_tessera(tessera, path, inputs, names, backend, warmup, runs, out):
    import numpy as np

    args = []
    for n, t in zip(names, inputs):
        npy = out / f"{path.stem}_{n}.npy"
        np.save(npy, t.numpy())
        args += ["--input", f"{n}={npy}"]
    cmd = [str(tessera), "bench", str(path), "--backend", backend, "--runs", str(runs),
           "--warmup", str(warmup), "--json", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["median_ms"], ""


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    gpu = torch.cuda.get_device_name(0)
    models, paths = export_models(out)
    rows, results = [], {"device": gpu, "runs": args.runs, "warmup": args.warmup, "models": {}}
    for name, (model, inputs, names) in models.items():
        path = paths[name]
        torch_device, torch_host = time_torch(model, inputs, args.warmup, args.runs)
        ort_ms, ort_provider = time_onnxruntime(path, inputs, names, args.warmup, args.runs)
        cuda_ms, cuda_err = time_tessera(args.tessera, path, inputs, names, "cuda",
                                         args.warmup, args.runs, out)
        cpu_ms, cpu_err = time_tessera(args.tessera, path, inputs, names, "cpu",
                                       2, max(3, args.runs // 10), out)
        entry = {"torch_eager_device_ms": torch_device, "torch_eager_host_ms": torch_host,
                 "onnxruntime_ms": ort_ms, "onnxruntime_provider": ort_provider,
                 "tessera_cuda_ms": cuda_ms, "tessera_cuda_error": cuda_err,
                 "tessera_cpu_ms": cpu_ms, "tessera_cpu_error": cpu_err}
        results["models"][name] = entry
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        ratio = "-" if cuda_ms is None else f"{cuda_ms / torch_host:.2f}x"
        rows.append(f"| {name} | {fmt(torch_device)} | {fmt(torch_host)} | {fmt(ort_ms)} "
                    f"({ort_provider}) | {fmt(cuda_ms)}{' ' + cuda_err if cuda_err else ''} | "
                    f"{ratio} | {fmt(cpu_ms)} |")
    table = "\n".join([
        f"GPU: {gpu}; medians of {args.runs} runs after {args.warmup} warm-ups, in ms",
        "",
        "| model | PyTorch eager (device I/O) | PyTorch eager (host I/O) | onnxruntime | "
        "tessera cuda (host I/O) | tessera cuda / PyTorch (host) | tessera cpu |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ])
    print(table)
    (out / "bench.md").write_text(table + "\n")
    (out / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    # A number that could not be measured is a failure of the run, not a dash in a table.
    errors = [f"{name}: tessera {backend}: {entry[f'tessera_{backend}_error']}"
              for name, entry in results["models"].items() for backend in ("cuda", "cpu")
              if entry[f"tessera_{backend}_ms"] is None]
    if errors:
        print("error: the benchmark could not measure:\n  " + "\n  ".join(errors), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
